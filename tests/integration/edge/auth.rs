//! Login, logout, current user, token expiry and login throttling over real HTTP.

use crate::common::contract::Checked;
use crate::common::execute;
use crate::common::{Api, JsonAnswer};
use crate::common::{Db, EMAIL, PASSWORD, TestService, error_body};

async fn login_issues_a_working_bearer_token(db: Db) {
    let mut svc = TestService::start(db, &[]).await;
    svc.create_user(EMAIL, PASSWORD).await;
    let response = svc.login("  ADA@example.com ", PASSWORD).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers().contains_key("x-request-id"));
    let body: serde_json::Value = response.json_value().await;
    assert_eq!(body["token_type"], "Bearer");
    let token = body["access_token"].as_str().unwrap();
    let (id, secret) = token.split_once('|').unwrap();
    assert!(id.parse::<i64>().is_ok());
    assert_eq!(secret.len(), 40);
    assert!(secret.chars().all(|c| c.is_ascii_alphanumeric()));

    let user: serde_json::Value = svc.get_json(token, "/api/v1/user").await;
    assert_eq!(user["email"], EMAIL);
    assert_eq!(user["name"], "Test User");
    assert!(user["id"].as_i64().is_some());
    assert!(chrono::DateTime::parse_from_rfc3339(user["created_at"].as_str().unwrap()).is_ok());

    // Only a SHA-256 of the secret is stored, never the secret itself; last_used_at is kept,
    // written in a batch after the use (at the latest when the service stops).
    svc.restart().await;
    let row: (String, Option<i64>) =
        sqlx::query_as("SELECT token_hash, last_used_at FROM personal_access_tokens WHERE id = $1")
            .bind(id.parse::<i64>().unwrap())
            .fetch_one(svc.store().pool())
            .await
            .unwrap();
    assert_eq!(row.0, integration_service::auth::token::digest(secret));
    assert!(!row.0.contains(secret));
    assert!(row.1.is_some(), "last_used_at is recorded on use");
    let logs = svc.log.text();
    assert!(!logs.contains(secret), "the token leaked into the log");
    assert!(!logs.contains(PASSWORD), "the password leaked into the log");
    svc.stop().await;
}

async fn wrong_email_and_wrong_password_fail_alike(db: Db) {
    let svc = TestService::start(db, &[]).await;
    svc.create_user(EMAIL, PASSWORD).await;
    let wrong_password = error_body(svc.login(EMAIL, "not-the-password").await, 401).await;
    let unknown_email = error_body(svc.login("nobody@example.com", PASSWORD).await, 401).await;
    assert_eq!(wrong_password["message"], unknown_email["message"]);
    assert_eq!(wrong_password["error_code"], unknown_email["error_code"]);
    assert_eq!(wrong_password["error_code"], "invalid_credentials");

    let missing = svc
        .client
        .post(svc.url("/api/v1/login"))
        .json(&serde_json::json!({"email": "", "password": ""}))
        .checked()
        .await
        .unwrap();
    let body = error_body(missing, 422).await;
    assert!(body["errors"]["email"].is_array() && body["errors"]["password"].is_array(), "{body}");
    svc.stop().await;
}

async fn failed_logins_are_throttled_per_email_and_address(db: Db) {
    // The test client connects from 127.0.0.1, trusted as a proxy here so that
    // X-Forwarded-For can play a second address.
    let svc = TestService::start(db, &[("TRUSTED_PROXIES", "127.0.0.1/32")]).await;
    svc.create_user(EMAIL, PASSWORD).await;
    for _ in 0..5 {
        error_body(svc.login(EMAIL, "wrong-password").await, 401).await;
    }
    // The sixth attempt is refused even with the right password.
    let refused = svc.login(EMAIL, PASSWORD).await;
    let retry_after: u64 =
        refused.headers().get("retry-after").expect("Retry-After").to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    let body = error_body(refused, 429).await;
    assert_eq!(body["error_code"], "too_many_attempts");

    // Another address is not affected, nor is another email from the same address.
    assert_eq!(svc.login_from("198.51.100.23", EMAIL, PASSWORD).await.status(), 200);
    svc.create_user("grace@example.com", "compiler-pioneer").await;
    assert_eq!(svc.login("grace@example.com", "compiler-pioneer").await.status(), 200);

    // Once the failures leave the one-minute window, the right password works again.
    sqlx::query("UPDATE login_failures SET at = at - 61000").execute(svc.store().pool()).await.unwrap();
    assert_eq!(svc.login(EMAIL, PASSWORD).await.status(), 200);
    svc.stop().await;
}

/// One IPv6 client holds a /64 and may send from any of its addresses: failures from the
/// addresses of one /64 count together, per email and whatever the emails, and an
/// IPv4-mapped IPv6 address counts as its IPv4 address.
async fn failures_from_one_ipv6_slash_64_count_together(db: Db) {
    let svc = TestService::start(db, &[("TRUSTED_PROXIES", "127.0.0.1/32")]).await;
    svc.create_user(EMAIL, PASSWORD).await;
    for n in 1..=5 {
        error_body(svc.login_from(&format!("2001:db8:1:2::{n}"), EMAIL, "wrong-password").await, 401).await;
    }
    let refused = svc.login_from("2001:db8:1:2:ffff:ffff:ffff:9", EMAIL, PASSWORD).await;
    assert_eq!(error_body(refused, 429).await["error_code"], "too_many_attempts");
    assert_eq!(svc.login_from("2001:db8:1:3::1", EMAIL, PASSWORD).await.status(), 200, "another /64");

    // Password spraying from one /64, an address for each email.
    for n in 1..=20 {
        let guess = svc.login_from(&format!("2001:db8:9:9::{n:x}"), &format!("user{n}@example.com"), "guess").await;
        error_body(guess, 401).await;
    }
    let refused = svc.login_from("2001:db8:9:9:1::1", EMAIL, PASSWORD).await;
    assert_eq!(error_body(refused, 429).await["error_code"], "too_many_attempts");

    for _ in 0..5 {
        error_body(svc.login_from("198.51.100.7", EMAIL, "wrong-password").await, 401).await;
    }
    let refused = svc.login_from("::ffff:198.51.100.7", EMAIL, PASSWORD).await;
    assert_eq!(error_body(refused, 429).await["error_code"], "too_many_attempts");
    svc.stop().await;
}

/// Guesses sent at once all pass the check of earlier failures before any of them is recorded;
/// each is counted before its password is verified, so at most `MAX_FAILED_LOGINS` of them
/// are ever verified and the rest are refused.
async fn guesses_sent_at_once_are_throttled_like_guesses_in_turn(db: Db) {
    let svc = TestService::start(db, &[]).await;
    svc.create_user(EMAIL, PASSWORD).await;
    let passwords: Vec<String> = (0..30).map(|n| format!("wrong-password-{n}")).collect();
    let guesses = passwords.iter().map(|password| svc.login(EMAIL, password));
    let statuses: Vec<u16> = futures::future::join_all(guesses).await.iter().map(|r| r.status().as_u16()).collect();
    let verified = statuses.iter().filter(|s| **s == 401).count();
    let refused = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!((verified, refused), (integration_service::auth::MAX_FAILED_LOGINS, 25), "{statuses:?}");
    // Refused guesses are not kept as failures, and once the verified ones leave the window
    // the right password works.
    let (kept,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM login_failures").fetch_one(svc.store().pool()).await.unwrap();
    assert_eq!(kept, 5);
    sqlx::query("UPDATE login_failures SET at = at - 61000").execute(svc.store().pool()).await.unwrap();
    assert_eq!(svc.login(EMAIL, PASSWORD).await.status(), 200);

    // So are guesses at many emails at once from one address (password spraying).
    let emails: Vec<String> = (0..30).map(|n| format!("user{n}@example.com")).collect();
    let guesses = emails.iter().map(|email| svc.login(email, "wrong-password"));
    let statuses: Vec<u16> = futures::future::join_all(guesses).await.iter().map(|r| r.status().as_u16()).collect();
    let verified = statuses.iter().filter(|s| **s == 401).count();
    assert_eq!(verified, integration_service::auth::MAX_FAILED_LOGINS_PER_ADDRESS, "{statuses:?}");
    svc.stop().await;
}

/// Once an email is throttled, a burst of further guesses is refused and keeps no rows: each
/// refused attempt forgets the row it recorded, so the failures stay those verified.
async fn a_throttled_burst_keeps_no_rows(db: Db) {
    let svc = TestService::start(db, &[]).await;
    svc.create_user(EMAIL, PASSWORD).await;
    for _ in 0..integration_service::auth::MAX_FAILED_LOGINS {
        error_body(svc.login(EMAIL, "wrong-password").await, 401).await;
    }
    let guesses = (0..20).map(|_| svc.login(EMAIL, "wrong-password"));
    let statuses: Vec<u16> = futures::future::join_all(guesses).await.iter().map(|r| r.status().as_u16()).collect();
    assert!(statuses.iter().all(|s| *s == 429), "{statuses:?}");
    let (kept,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM login_failures").fetch_one(svc.store().pool()).await.unwrap();
    assert_eq!(kept, integration_service::auth::MAX_FAILED_LOGINS as i64);
    svc.stop().await;
}

async fn logout_revokes_the_presented_token_only(db: Db) {
    let svc = TestService::start(db, &[]).await;
    svc.create_user(EMAIL, PASSWORD).await;
    let first = svc.token(EMAIL, PASSWORD).await;
    let second = svc.token(EMAIL, PASSWORD).await;
    let logout = svc.call(&first, reqwest::Method::POST, "/api/v1/logout", None).await;
    assert_eq!(logout.status(), 204);
    let reuse = svc.get(&first, "/api/v1/user").await;
    let body = error_body(reuse, 401).await;
    assert_eq!(body["message"], "Unauthenticated.");
    let again = svc.call(&first, reqwest::Method::POST, "/api/v1/logout", None).await;
    error_body(again, 401).await;
    let other = svc.get(&second, "/api/v1/user").await;
    assert_eq!(other.status(), 200);
    svc.stop().await;
}

async fn bad_tokens_are_unauthenticated(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let (id, secret) = token.split_once('|').unwrap();
    let wrong_secret = format!("{id}|{}", "A".repeat(40));
    let unknown_id = format!("999999|{secret}");
    let cases: Vec<Option<String>> = vec![
        None,
        Some("Bearer".into()),
        Some("Bearer ".into()),
        Some(format!("Basic {token}")),
        Some("Bearer not-a-token".into()),
        Some(format!("Bearer {wrong_secret}")),
        Some(format!("Bearer {unknown_id}")),
        Some(format!("Bearer {id}|{}", &secret[..39])),
    ];
    for header in cases {
        let mut request = svc.client.get(svc.url("/api/v1/user"));
        if let Some(value) = &header {
            request = request.header("authorization", value);
        }
        let body = error_body(request.checked().await.unwrap(), 401).await;
        assert_eq!(body["message"], "Unauthenticated.", "{header:?}");
        assert_eq!(body["error_code"], "unauthenticated", "{header:?}");
    }
    let ok = svc
        .client
        .get(svc.url("/api/v1/user"))
        .header("authorization", format!("bearer {token}"))
        .checked()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200, "the scheme is case-insensitive");
    svc.stop().await;
}

async fn tokens_expire_when_a_lifetime_is_configured(db: Db) {
    let (svc, token) = TestService::with_user(db, &[("TOKEN_TTL_MINUTES", "30")]).await;
    let id: i64 = token.split_once('|').unwrap().0.parse().unwrap();
    let (created, expires): (i64, Option<i64>) =
        sqlx::query_as("SELECT created_at, expires_at FROM personal_access_tokens WHERE id = $1")
            .bind(id)
            .fetch_one(svc.store().pool())
            .await
            .unwrap();
    assert_eq!(expires, Some(created + 30 * 60 * 1000));
    assert_eq!(svc.get(&token, "/api/v1/user").await.status(), 200);

    // Let the lifetime pass (by moving the token's expiry into the past).
    sqlx::query("UPDATE personal_access_tokens SET expires_at = $1 WHERE id = $2")
        .bind(created - 1)
        .bind(id)
        .execute(svc.store().pool())
        .await
        .unwrap();
    // Written behind the service's back: on Postgres the cached owner goes when the change's
    // notification arrives, a moment after the commit.
    assert!(refused_soon(&svc, &token).await, "an expired token must be refused");
    let expired = svc.get(&token, "/api/v1/user").await;
    assert_eq!(error_body(expired, 401).await["message"], "Unauthenticated.");
    svc.stop().await;
}

async fn tokens_without_lifetime_never_expire(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let id: i64 = token.split_once('|').unwrap().0.parse().unwrap();
    let (expires,): (Option<i64>,) = sqlx::query_as("SELECT expires_at FROM personal_access_tokens WHERE id = $1")
        .bind(id)
        .fetch_one(svc.store().pool())
        .await
        .unwrap();
    assert_eq!(expires, None);
    svc.stop().await;
}

/// A user keeps `LOGIN_TOKENS_PER_USER` login tokens: a login beyond them revokes the oldest
/// (none of them used here), at once; a named token is not counted.
async fn logins_beyond_the_cap_revoke_the_oldest_login_tokens(db: Db) {
    let svc = TestService::start(db, &[("LOGIN_TOKENS_PER_USER", "3")]).await;
    let mut tokens = vec![svc.user_token().await];
    let auth = integration_service::auth::Authenticator::new(
        svc.store().clone(),
        integration_service::auth::AuthConfig::default(),
    )
    .unwrap();
    let named = auth.create_token(EMAIL, "nightly-export", &[], None).await.unwrap();
    for _ in 0..4 {
        tokens.push(svc.token(EMAIL, PASSWORD).await);
    }
    for (n, token) in tokens.iter().enumerate() {
        let status = svc.get(token, "/api/v1/user").await.status();
        let expected = if n < 2 { 401 } else { 200 };
        assert_eq!(status, expected, "login token {n} of 5");
    }
    assert_eq!(svc.get(&named, "/api/v1/user").await.status(), 200, "a named token is not counted");
    let (logins,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM personal_access_tokens WHERE name = 'login'")
        .fetch_one(svc.store().pool())
        .await
        .unwrap();
    assert_eq!(logins, 3);
    svc.stop().await;
}

async fn tokens_of_a_deleted_user_stop_working_at_once(db: Db) {
    let (svc, token) = TestService::with_user(db, &[]).await;
    let me = svc.get(&token, "/api/v1/user").await;
    assert_eq!(me.status(), 200);
    let auth = integration_service::auth::Authenticator::new(
        svc.store().clone(),
        integration_service::auth::AuthConfig::default(),
    )
    .unwrap();
    auth.delete_user(EMAIL).await.unwrap();
    let after = svc.get(&token, "/api/v1/user").await;
    assert_eq!(error_body(after, 401).await["error_code"], "unauthenticated");
    let login = svc.login(EMAIL, PASSWORD).await;
    assert_eq!(error_body(login, 401).await["error_code"], "invalid_credentials");
    svc.stop().await;
}

/// Postgres: each instance keeps the owners of checked tokens in memory, and forgets one when
/// any instance (or anyone with SQL) revokes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_revoked_on_one_instance_stops_working_on_the_others() {
    let Some((first, second, sql)) = crate::common::two_instances_on_postgres().await else { return };
    first.create_user(EMAIL, PASSWORD).await;
    let user_on = |svc: &TestService, token: &str| svc.client.get(svc.url("/api/v1/user")).bearer_auth(token).checked();
    // Without the notification (its trigger off), a token deleted behind the second
    // instance's back still works there once checked: the second instance caches owners.
    execute(&sql, "ALTER TABLE personal_access_tokens DISABLE TRIGGER personal_access_tokens_deleted").await;
    let mut cached = false;
    for _ in 0..50 {
        let token = first.token(EMAIL, PASSWORD).await;
        assert_eq!(user_on(&second, &token).await.unwrap().status(), 200);
        let id: i64 = token.split('|').next().unwrap().parse().unwrap();
        sqlx::query("DELETE FROM personal_access_tokens WHERE id = $1").bind(id).execute(&sql).await.unwrap();
        if user_on(&second, &token).await.unwrap().status() == 200 {
            cached = true;
            break;
        }
        // The second instance was not listening yet, so it cached nothing.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(cached, "the second instance caches token owners");
    execute(&sql, "ALTER TABLE personal_access_tokens ENABLE TRIGGER personal_access_tokens_deleted").await;

    // With it: a logout on the first instance, a deletion by SQL, a user deleted.
    let logged_out = first.token(EMAIL, PASSWORD).await;
    let deleted = first.token(EMAIL, PASSWORD).await;
    for token in [&logged_out, &deleted] {
        assert_eq!(user_on(&second, token).await.unwrap().status(), 200);
    }
    let logout = first.call(&logged_out, reqwest::Method::POST, "/api/v1/logout", None).await;
    assert_eq!(logout.status(), 204);
    let id: i64 = deleted.split('|').next().unwrap().parse().unwrap();
    sqlx::query("DELETE FROM personal_access_tokens WHERE id = $1").bind(id).execute(&sql).await.unwrap();
    let kept = first.token(EMAIL, PASSWORD).await;
    assert_eq!(user_on(&second, &kept).await.unwrap().status(), 200);
    for token in [&logged_out, &deleted] {
        assert!(refused_soon(&second, token).await, "a revoked token still works on the other instance");
    }
    assert_eq!(user_on(&second, &kept).await.unwrap().status(), 200, "other tokens keep working");
    let auth = integration_service::auth::Authenticator::new(
        first.store().clone(),
        integration_service::auth::AuthConfig::default(),
    )
    .unwrap();
    auth.delete_user(EMAIL).await.unwrap();
    assert!(refused_soon(&second, &kept).await, "a deleted user's token still works on the other instance");
    sql.close().await;
    second.stop().await;
    first.stop().await;
}

/// Whether `token` is refused within a few seconds: a notification reaches other instances
/// once the revoking transaction commits.
async fn refused_soon(svc: &TestService, token: &str) -> bool {
    for _ in 0..50 {
        let status = svc.get(token, "/api/v1/user").await.status();
        if status == 401 {
            return true;
        }
        assert_eq!(status, 200);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    false
}

on_both_databases!(
    tokens_of_a_deleted_user_stop_working_at_once,
    login_issues_a_working_bearer_token,
    wrong_email_and_wrong_password_fail_alike,
    failed_logins_are_throttled_per_email_and_address,
    failures_from_one_ipv6_slash_64_count_together,
    guesses_sent_at_once_are_throttled_like_guesses_in_turn,
    a_throttled_burst_keeps_no_rows,
    logout_revokes_the_presented_token_only,
    bad_tokens_are_unauthenticated,
    tokens_expire_when_a_lifetime_is_configured,
    tokens_without_lifetime_never_expire,
    logins_beyond_the_cap_revoke_the_oldest_login_tokens,
);
