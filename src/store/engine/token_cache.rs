//! Token owners kept in memory on Postgres, where every token check is a network round trip to
//! a server that, in `cargo xtask bench`, spent as much CPU per statement as the service.
//!
//! A cached owner must never outlive a revocation, on any instance:
//! - Postgres tells every instance of a change: triggers (migration 0011) send a notification
//!   on [`CHANNEL`] when a token is deleted or its secret, expiry or user changes (the token's
//!   id), and when any user changes or goes (`*`: everything). Each instance listens on a
//!   connection of its own and forgets what it is told.
//! - The cache is used only while that connection is listening, and is emptied when it stops
//!   (see [`super::change_notifications`], which also gives up a silent connection).
//! - A check that read the database puts its owner in only if nothing was forgotten since it
//!   began to read (a generation count), so a notification that overtakes a read wins.
//! - This instance's own revocations forget at once, without waiting for the notification.
//! - Entries are read again after [`MAX_AGE`] whatever happens, and the cache holds at most
//!   [`MAX_ENTRIES`].
//!
//! What remains is the notification's own delay to other instances: a revocation on one
//! instance reaches the others once its transaction commits and the notification is
//! delivered (milliseconds on a working connection; a connection lost without a word, at most
//! [`super::change_notifications::SILENCE`]).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use super::cache::{Lookup, MAX_AGE};
use crate::store::columns::IntBool;

/// A token joined with its user, as needed to authenticate a request.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TokenOwner {
    pub token_id: i64,
    pub token_hash: String,
    pub expires_at: Option<i64>,
    pub last_used_at: Option<i64>,
    /// As stored: names, space-separated (`crate::auth::ability::Abilities`).
    pub abilities: String,
    pub user_id: i64,
    pub name: String,
    pub email: String,
    pub created_at: i64,
    #[sqlx(try_from = "IntBool")]
    pub operator: bool,
}

/// The notification channel of migration 0011.
pub const CHANNEL: &str = "token_owners_changed";
/// More entries than this empty the cache.
pub const MAX_ENTRIES: usize = 10_000;

#[derive(Default)]
struct State {
    /// Whether the listener is listening: nothing is cached otherwise.
    listening: bool,
    /// Counts everything forgotten: an owner read before a change is not put in after it.
    generation: u64,
    entries: HashMap<i64, (TokenOwner, Instant)>,
}

#[derive(Default)]
pub struct TokenCache {
    state: Mutex<State>,
}

impl std::fmt::Debug for TokenCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenCache")
    }
}

impl TokenCache {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the map half-changed in a way that
        // matters (every change is one call), so a poisoned lock is taken as it is.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn lookup(&self, token_id: i64) -> Lookup<TokenOwner> {
        let state = self.state();
        if !state.listening {
            return Lookup::Miss(None);
        }
        match state.entries.get(&token_id) {
            Some((owner, cached_at)) if cached_at.elapsed() < MAX_AGE => Lookup::Hit(owner.clone()),
            _ => Lookup::Miss(Some(state.generation)),
        }
    }

    /// Keeps an owner read from the database, unless something was forgotten since the read
    /// began (`generation` from [`Lookup::Miss`]) or the cache stopped being in use.
    pub fn put(&self, generation: Option<u64>, owner: &TokenOwner) {
        let mut state = self.state();
        if !state.listening || generation != Some(state.generation) {
            return;
        }
        if state.entries.len() >= MAX_ENTRIES {
            state.entries.clear();
        }
        state.entries.insert(owner.token_id, (owner.clone(), Instant::now()));
    }

    /// Notes a new `last_used_at` of a cached token.
    pub fn touched(&self, token_id: i64, at: i64) {
        if let Some((owner, _)) = self.state().entries.get_mut(&token_id) {
            owner.last_used_at = Some(at);
        }
    }

    pub fn forget(&self, token_id: i64) {
        let mut state = self.state();
        state.generation += 1;
        state.entries.remove(&token_id);
    }

    pub fn forget_all(&self) {
        let mut state = self.state();
        state.generation += 1;
        state.entries.clear();
    }

    /// What a notification's payload asks: a token id, or `*` (anything else) for everything.
    pub(in crate::store) fn notified(&self, payload: &str) {
        match payload.parse() {
            Ok(token_id) => self.forget(token_id),
            Err(_) => self.forget_all(),
        }
    }

    pub(in crate::store) fn set_listening(&self, listening: bool) {
        let mut state = self.state();
        state.listening = listening;
        state.generation += 1;
        state.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(token_id: i64) -> TokenOwner {
        TokenOwner {
            token_id,
            token_hash: "h".into(),
            expires_at: None,
            last_used_at: None,
            abilities: "*".into(),
            user_id: 1,
            name: "n".into(),
            email: "e@x.io".into(),
            created_at: 0,
            operator: false,
        }
    }

    fn generation(lookup: Lookup<TokenOwner>) -> Option<u64> {
        match lookup {
            Lookup::Hit(_) => panic!("expected a miss"),
            Lookup::Miss(generation) => generation,
        }
    }

    #[test]
    fn nothing_is_cached_unless_listening() {
        let cache = TokenCache::default();
        let g = generation(cache.lookup(7));
        assert_eq!(g, None);
        cache.put(g, &owner(7));
        assert!(matches!(cache.lookup(7), Lookup::Miss(None)));
        cache.set_listening(true);
        let g = generation(cache.lookup(7));
        cache.put(g, &owner(7));
        assert!(matches!(cache.lookup(7), Lookup::Hit(o) if o.token_id == 7));
        // The connection fails: everything is forgotten and nothing is cached until it is back.
        cache.set_listening(false);
        assert!(matches!(cache.lookup(7), Lookup::Miss(None)));
    }

    #[test]
    fn a_change_during_a_read_keeps_the_owner_out() {
        let cache = TokenCache::default();
        cache.set_listening(true);
        let g = generation(cache.lookup(7));
        cache.notified("7");
        cache.put(g, &owner(7));
        assert!(matches!(cache.lookup(7), Lookup::Miss(Some(_))));
        let g = generation(cache.lookup(7));
        cache.notified("*");
        cache.put(g, &owner(7));
        assert!(matches!(cache.lookup(7), Lookup::Miss(Some(_))));
    }

    #[test]
    fn notifications_forget_one_token_or_all() {
        let cache = TokenCache::default();
        cache.set_listening(true);
        let g = generation(cache.lookup(9));
        cache.put(g, &owner(9));
        assert!(matches!(cache.lookup(9), Lookup::Hit(_)));
        for id in [1, 2, 3] {
            let g = generation(cache.lookup(id));
            cache.put(g, &owner(id));
        }
        cache.notified("2");
        assert!(matches!(cache.lookup(1), Lookup::Hit(_)));
        assert!(matches!(cache.lookup(2), Lookup::Miss(_)));
        cache.touched(3, 99);
        assert!(matches!(cache.lookup(3), Lookup::Hit(o) if o.last_used_at == Some(99)));
        cache.notified("*");
        assert!(matches!(cache.lookup(1), Lookup::Miss(_)));
        assert!(matches!(cache.lookup(3), Lookup::Miss(_)));
    }
}
