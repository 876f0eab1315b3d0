use super::fetch::*;
use super::query::*;
use super::writes::*;
use super::*;
use crate::store::fieldreport::records::{SyncedRecord, Upserted};

/// A batch that writes a record again waits for the write in flight that has it; the
/// newer copy ends stored.
#[tokio::test]
async fn writes_in_flight_know_their_records() {
    crate::store::testing::on_both_databases(async |store| {
        let mut writes = Writes::default();
        assert!(writes.is_empty() && !writes.full());
        writes.start(store, "tags", vec![SyncedRecord::named("1", "old"), SyncedRecord::named("2", "old")]);
        assert!(writes.have_any_of(&[SyncedRecord::named("3", "new"), SyncedRecord::named("2", "new")]));
        assert!(!writes.have_any_of(&[SyncedRecord::named("3", "new")]));
        writes.start(store, "tags", vec![SyncedRecord::named("3", "new")]);
        assert!(writes.full(), "{} at once", WRITES_AT_ONCE);
        let mut report = SyncReport::default();
        assert!(writes.finish_into(&mut report).await.unwrap());
        assert_eq!((report.inserted, report.updated, report.unchanged), (3, 0, 0));
        assert!(writes.is_empty());
        assert!(!writes.finish_into(&mut report).await.unwrap(), "nothing left to wait for");
        assert!(
            !writes.have_any_of(&[SyncedRecord::named("1", "new"), SyncedRecord::named("3", "new")]),
            "ended writes are forgotten"
        );
        writes.start(store, "tags", vec![SyncedRecord::named("2", "new")]);
        assert_eq!(writes.next().await.unwrap(), [Upserted::Updated]);
        assert_eq!(store.mirror_get("tags", "2").await.unwrap().unwrap().document["Name"], "new");
        drop(writes);
    })
    .await;
}

/// The fetching task's pages end when it ends: one that panicked must not pass for one
/// that sent its last page.
#[tokio::test]
async fn a_fetching_that_panicked_is_an_error_of_the_sync() {
    let fetched = || tokio::spawn(async { [Literal(None); 2] });
    let panicked = Fetching { fetch: fetched(), read: tokio::spawn(async { panic!("a fault of the reading") }) };
    let ended = panicked.ended().await;
    assert!(matches!(ended, Err(FieldReportError::Internal(ref m)) if m.contains("abnormally")), "{ended:?}");
    let panicked =
        Fetching { fetch: tokio::spawn(async { panic!("a fault of the fetching") }), read: tokio::spawn(async {}) };
    assert!(panicked.ended().await.is_err());
    assert_eq!(Fetching { fetch: fetched(), read: tokio::spawn(async {}) }.ended().await.unwrap(), [Literal(None); 2]);
}

/// Dropped with its sync, the fetching stops: it no longer holds the pages' sender.
#[tokio::test]
async fn a_dropped_fetching_stops() {
    let (sender, mut pages) = mpsc::channel::<()>(1);
    let fetching = Fetching {
        fetch: tokio::spawn(async move {
            let _sender = sender;
            std::future::pending::<Forms>().await
        }),
        read: tokio::spawn(async {}),
    };
    drop(fetching);
    assert!(pages.recv().await.is_none(), "the task was stopped and its sender dropped");
}

#[test]
fn the_query_carries_expand_key_order_and_window() {
    let info = generated::fieldreport::by_set("Companies").unwrap();
    let after = From::After(Stamp::parse("2026-01-01T00:00:00Z"), 1234);
    assert_eq!(
        query(info, &after, Literal(None)),
        "%24expand=Contacts%2CTags%2CServiceObjects%2CMainContact&%24filter=DateModified+gt+2026-01-01T00%3A00%3A00Z+or+%28DateModified+eq+2026-01-01T00%3A00%3A00Z+and+Id+gt+1234L%29&%24orderby=DateModified%2CId&%24top=500"
    );
    let tags = generated::fieldreport::by_set("Tags").unwrap();
    assert_eq!(
        query(tags, &From::Everything, Literal::DESCRIBED),
        "%24filter=DateModified+ne+null&%24orderby=DateModified%2CId&%24top=500"
    );
    let unmodified = From::Unmodified { since: None, above: Some(7) };
    assert_eq!(
        query(tags, &unmodified, Literal::DESCRIBED),
        "%24filter=DateModified+eq+null+and+Id+gt+7L&%24orderby=Id&%24top=500"
    );
}

/// The field-report system's description is OData v3 with `DateModified` an `Edm.DateTime`:
/// its stamps are written `datetime'…'`, as the text the upstream wrote; the others are bare and
/// `datetimeoffset'…'`.
#[test]
fn stamps_are_written_as_the_description_declares_them() {
    assert_eq!(Literal::DESCRIBED, Literal(Some("datetime")));
    let others = |form: Literal| form.others().collect::<Vec<_>>();
    assert_eq!(others(Literal::DESCRIBED), [Literal(None), Literal(Some("datetimeoffset"))]);
    assert_eq!(others(Literal(None)), [Literal::DESCRIBED, Literal(Some("datetimeoffset"))]);
    let after = From::After(Stamp::parse("2024-03-28T17:31:17"), 9);
    assert_eq!(
        after.filter(Literal::DESCRIBED),
        "DateModified gt datetime'2024-03-28T17:31:17' or (DateModified eq datetime'2024-03-28T17:31:17' and Id gt 9L)"
    );
    let since = From::Since(Stamp::parse("2026-01-01T00:00:00.5Z"));
    assert_eq!(since.filter(Literal(None)), "DateModified ge 2026-01-01T00:00:00.5Z");
}

/// A sync starts with the records never modified, then reads the others: on its first run
/// all of them, later those since the overlap before its cursor (created since, for the
/// records never modified).
#[test]
fn a_sync_starts_the_overlap_before_its_cursor() {
    let overlap = std::time::Duration::from_secs(300);
    let first = start(None, overlap);
    assert_eq!(first, From::Unmodified { since: None, above: None });
    assert_eq!(first.filter(Literal(None)), "DateModified eq null");
    assert!(!first.has_stamp() && !first.modified().has_stamp());
    assert_eq!(first.modified(), From::Everything);
    let from = start(Some("2026-01-01T00:05:00Z"), overlap);
    assert_eq!(
        from.filter(Literal(None)),
        "DateModified eq null and (DateOfCreation ge 2026-01-01T00:00:00Z or DateOfCreation eq null)"
    );
    assert_eq!(
        from.next((Stamp::parse(""), 12)).filter(Literal(None)),
        format!("{} and Id gt 12L", from.filter(Literal(None)))
    );
    assert_eq!(from.modified().filter(Literal(None)), "DateModified ge 2026-01-01T00:00:00Z");
}

#[test]
fn a_key_not_after_the_query_start_is_refused() {
    let after = From::After(Stamp::parse("2026-01-01T00:00:00Z"), 7);
    assert!(after.precedes(&(Stamp::parse("2026-01-01T00:00:00Z"), 8)));
    assert!(after.precedes(&(Stamp::parse("2026-01-01T00:00:00.1Z"), 1)));
    assert!(!after.precedes(&(Stamp::parse("2026-01-01T00:00:00Z"), 7)));
    let since = From::Since(Stamp::parse("2026-01-01T00:00:00Z"));
    assert!(since.precedes(&(Stamp::parse("2026-01-01T00:00:00Z"), 1)));
    assert!(!since.precedes(&(Stamp::parse("2025-12-31T23:59:59Z"), 9)));
    let unmodified = From::Unmodified { since: None, above: Some(7) };
    assert!(unmodified.precedes(&(Stamp::parse(""), 8)) && !unmodified.precedes(&(Stamp::parse(""), 7)));
}

/// The records never modified are read in Id order: a page of them goes on from its last
/// record only when every record of it is unstamped and the Ids ascend.
#[test]
fn a_page_of_records_never_modified_goes_on_from_its_last_id() {
    let page = |records: &[&str]| crate::upstream::fieldreport::ODataPage {
        records: records
            .iter()
            .map(|text| serde_json::value::RawValue::from_string(text.to_string()).unwrap())
            .collect(),
        next_link: None,
    };
    let unstamped =
        page(&[r#"{"Id":"3","DateModified":null}"#, r#"{"Id":"7","DateOfCreation":"2026-01-01T00:00:00"}"#]);
    let key = crate::fieldreport::page::last_unmodified_key(&unstamped).unwrap();
    assert_eq!(key.1, 7);
    let descending = page(&[r#"{"Id":"7"}"#, r#"{"Id":"3"}"#]);
    assert!(crate::fieldreport::page::last_unmodified_key(&descending).is_none());
    let stamped = page(&[r#"{"Id":"3"}"#, r#"{"Id":"7","DateModified":"2026-01-01T00:00:00"}"#]);
    assert!(crate::fieldreport::page::last_unmodified_key(&stamped).is_none());
}

/// Past a stamp that the key order cannot page through, a sync reads every record within a
/// step of it by Id, then those stamped later.
#[test]
fn a_tie_is_read_by_id_within_a_step_of_its_stamp() {
    let tie = From::past_tie(&Stamp::parse("2026-01-01T00:01:00"), None);
    assert_eq!(
        tie.filter(Literal::DESCRIBED),
        "DateModified ge datetime'2026-01-01T00:00:59' and DateModified lt datetime'2026-01-01T00:01:01'"
    );
    assert_eq!(tie.order(), "Id");
    let next = tie.next((Stamp::parse("2026-01-01T00:01:00"), 9));
    assert!(next.filter(Literal(None)).ends_with(" and Id gt 9L"), "{next:?}");
    assert!(next.precedes(&(Stamp::parse("2025-01-01T00:00:00"), 10)) && !next.precedes(&(Stamp::parse(""), 9)));
    // Not before where the sync started: the records stamped before it are not its own.
    let floor = start(Some("2026-01-01T00:06:00"), std::time::Duration::from_secs(300)).floor();
    assert_eq!(floor, Some(Stamp::parse("2026-01-01T00:01:00")));
    let tie = From::past_tie(&Stamp::parse("2026-01-01T00:01:00"), floor.as_ref());
    assert!(tie.filter(Literal(None)).starts_with("DateModified ge 2026-01-01T00:01:00 and "), "{tie:?}");
    let later = From::past_tie(&Stamp::parse("2026-01-01T00:01:05"), floor.as_ref());
    assert!(later.filter(Literal(None)).starts_with("DateModified ge 2026-01-01T00:01:04 and "), "{later:?}");
    assert_eq!(From::Everything.floor(), None);
}
