use super::*;
use crate::store::DatabaseUrl;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_more_hashes_run_at_once_than_there_are_cores() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..24)
        .map(|_| {
            let (running, most) = (running.clone(), most.clone());
            tokio::spawn(hashing(move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(20));
                running.fetch_sub(1, Ordering::SeqCst);
            }))
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let most = most.load(Ordering::SeqCst);
    assert!(most >= 1 && most <= cores, "{most} hashes ran at once on {cores} cores");
}

/// The parameters of a PHC string (`$argon2id$v=19$m=…,t=…,p=…`), without salt and hash.
fn parameters(phc: &str) -> String {
    phc.split('$').take(4).collect::<Vec<_>>().join("$")
}

/// An unknown email is checked against a dummy hash as costly as a real one, so that it
/// fails in the same time as a wrong password.
#[tokio::test]
async fn the_dummy_hash_costs_what_a_real_hash_costs() {
    let store = Store::connect(&DatabaseUrl::new("sqlite::memory:")).await.unwrap();
    let auth = Authenticator::new(store, AuthConfig::default()).unwrap();
    let real = password::hash("a real password").unwrap();
    assert!(auth.dummy_hash.starts_with("$argon2id$"), "{}", auth.dummy_hash);
    assert_eq!(parameters(&auth.dummy_hash), parameters(&real));
    assert!(!password::verify("not the dummy's password", &auth.dummy_hash));
}

/// Emails that look alike are one email: a decomposed, fullwidth or upper-case form names the
/// user of the plain form (NFKC, then lower case), at creation and at login; an email with an
/// invisible or control character (a zero-width space, a direction override) is refused.
#[tokio::test]
async fn emails_that_look_alike_name_one_user() {
    let store = Store::open(&DatabaseUrl::new("sqlite::memory:")).await.unwrap();
    let auth = Authenticator::new(store, AuthConfig::default()).unwrap();
    let password = "a long passphrase";
    auth.create_user("jos\u{e9}@example.com", None, password, false).await.unwrap();
    for twin in ["jose\u{301}@example.com", "\u{ff2a}\u{ff2f}\u{ff33}\u{c9}@example.com"] {
        let created = auth.create_user(twin, None, password, false).await;
        assert!(matches!(created, Err(AuthError::DuplicateEmail(_))), "{twin:?}: {created:?}");
    }
    let address = AddressGroup::of("198.51.100.7".parse().unwrap());
    auth.login("JOSE\u{301}@\u{ff25}xample.com", password, address).await.expect("the same user");
    for hidden in
        ["jo\u{200b}se@example.com", "jose\u{202e}@example.com", "jose\u{7}@example.com", "jo\u{feff}se@example.com"]
    {
        let created = auth.create_user(hidden, None, password, false).await;
        assert!(matches!(created, Err(AuthError::Invalid(_))), "{hidden:?}: {created:?}");
    }
}

/// Emails stored before they were compared in NFKC are brought to that form at start, so
/// their users log in as before; one whose form is another user's is left as stored, and
/// `user delete` with it as stored removes that user, not the other.
#[tokio::test]
async fn emails_stored_before_nfkc_are_normalized_or_left_for_the_operator() {
    let store = Store::open(&DatabaseUrl::new("sqlite::memory:")).await.unwrap();
    let auth = Authenticator::new(store.clone(), AuthConfig::default()).unwrap();
    let password = "a long passphrase";
    let hash = password::hash(password).unwrap();
    // As the release before stored them: trimmed and lower case only.
    let decomposed = store.insert_user("J", "jose\u{301}@example.com", &hash, false).await.unwrap();
    let plain = store.insert_user("O", "ops@example.com", &hash, false).await.unwrap();
    let fullwidth = store.insert_user("F", "\u{ff4f}ps@example.com", &hash, false).await.unwrap();
    auth.normalize_stored_emails().await.unwrap();
    let emails: Vec<(i64, String)> = store.list_users().await.unwrap().into_iter().map(|u| (u.id, u.email)).collect();
    assert_eq!(
        emails,
        [
            (decomposed.id, "jos\u{e9}@example.com".to_string()),
            (plain.id, "ops@example.com".to_string()),
            (fullwidth.id, "\u{ff4f}ps@example.com".to_string())
        ]
    );
    let address = AddressGroup::of("198.51.100.7".parse().unwrap());
    auth.login("jose\u{301}@example.com", password, address).await.expect("the decomposed user logs in as before");
    auth.delete_user("\u{ff4f}ps@example.com").await.unwrap();
    let left: Vec<i64> = store.list_users().await.unwrap().into_iter().map(|u| u.id).collect();
    assert_eq!(left, [decomposed.id, plain.id], "the fullwidth twin was deleted, the plain user kept");
}
