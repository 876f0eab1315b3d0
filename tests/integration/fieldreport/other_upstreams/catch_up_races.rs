//! A forwarded update that catches the mirror up with the server's record (refused as stale,
//! answered without a definite outcome, or sent after one) meets a local write of the record:
//! an ERP webhook's, pending for `post`, made before the update or while the server's copy is
//! read (its answer held, see [`super::fake::serving_held`]). The local write stays in the
//! mirror and `post` sends it.

use crate::common::{Api, Db, error_body};
use integration_service::fieldreport::service::entity_named;
use reqwest::Method;
use serde_json::{Value, json};

use super::push_answers::{internal_writer, push};
use super::write_fake::WriteFake;
use super::writes::{made, serving_held};

/// How the update meets the server's record.
#[derive(Clone, Copy, Debug)]
enum CatchUp {
    /// The server refuses it as stale (409): the mirror takes the server's record.
    Refused,
    /// The server answers 500 (it may have applied it): read back, it did not, and the mirror
    /// takes the server's record.
    Unanswered,
    /// An earlier update of the record had an unknown outcome: the mirror takes the server's
    /// record first, then the update is sent.
    AfterUnsettled,
}

/// When the webhook writes the record.
#[derive(Clone, Copy, Debug, PartialEq)]
enum LocalWrite {
    /// Before the update: the record is pending when the update reads it.
    Before,
    /// While the server's copy is read, after the update read the mirror.
    Meanwhile,
}

/// A company changed at the server by someone else (its `Phone` among the fields, as a server
/// answers every property), written here by a webhook and updated through the API, which
/// catches up as `catch_up` says: the update is answered as then expected, the webhook's
/// `Phone` stays in the mirror, and `post` sends it to the server.
async fn a_local_write_survives(db: Db, catch_up: CatchUp, when: LocalWrite) {
    let fake = WriteFake::new();
    let (svc, token, held) = serving_held(db, &fake, Method::GET).await;
    let id = made(&svc, &token).await;
    let key: i64 = id.parse().unwrap();
    let theirs = json!({"Version": 2, "Name": "theirs", "Phone": "old"});
    fake.records.lock().unwrap().get_mut(&key).unwrap().extend(theirs.as_object().unwrap().clone());
    let companies = entity_named("companies").unwrap();
    let writer = internal_writer(&svc);
    let webhook = || writer.update_pending(companies, &id, json!({"Phone": "from the ERP"}));
    if when == LocalWrite::Before {
        webhook().await.unwrap();
    }
    match catch_up {
        CatchUp::Refused => {}
        CatchUp::Unanswered => fake.script(Method::PUT, 500, "application/json", r#"{"error": "lost"}"#),
        CatchUp::AfterUnsettled => svc.store().mark_update_unsettled("companies", &id).await.unwrap(),
    }
    let item = format!("/api/v1/fieldreport/companies/{id}");
    let meanwhile = async {
        held.arrived.notified().await;
        if when == LocalWrite::Meanwhile {
            webhook().await.unwrap();
        }
        held.answers.notify_one();
    };
    let (updated, ()) = tokio::join!(svc.call(&token, Method::PATCH, &item, Some(json!({"Name": "mine"}))), meanwhile);
    match catch_up {
        CatchUp::Refused => assert_eq!(error_body(updated, 409).await["error_code"], "upstream_conflict"),
        CatchUp::Unanswered => assert_eq!(error_body(updated, 502).await["error_code"], "upstream_unavailable"),
        CatchUp::AfterUnsettled => assert_eq!(updated.status(), 200, "{}", updated.text().await.unwrap()),
    }
    let mirrored: Value = svc.call(&token, Method::GET, &item, None).await.json().await.unwrap();
    assert_eq!(mirrored["Phone"], "from the ERP", "in the mirror: {mirrored}");
    // The push reads the server's record first: its answer goes at once.
    held.answers.notify_one();
    push(&svc, &token, "update").await;
    let at_server = fake.records.lock().unwrap()[&key].clone();
    assert_eq!(at_server["Phone"], "from the ERP", "at the server: {at_server:?}");
    svc.stop().await;
}

/// Every way of catching up, with the webhook's write before the update and meanwhile.
async fn a_local_write_survives_every_catch_up(db: Db) {
    for catch_up in [CatchUp::Refused, CatchUp::Unanswered, CatchUp::AfterUnsettled] {
        for when in [LocalWrite::Before, LocalWrite::Meanwhile] {
            eprintln!("catching up {catch_up:?}, the local write {when:?}");
            a_local_write_survives(db, catch_up, when).await;
        }
    }
}

on_both_databases!(a_local_write_survives_every_catch_up);
