//! When each token was last used, recorded without a write per request: a check notes the
//! time in memory when the stored one is over a minute old, and the notes are written in one
//! transaction every few seconds ([`LAST_USED_FLUSH`]) and when the service stops. A crash
//! loses at most the notes of that interval: a token's last use may then show up to a minute
//! and a flush interval early.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use slog::Logger;

use crate::background::task::{Chore, Failed};
use crate::store::{Store, StoreError};

/// How often noted uses are written.
pub const LAST_USED_FLUSH: Duration = Duration::from_secs(10);

/// Uses noted since the last write, by token id.
///
/// Until the next write, every check of the token finds its stored last use old and notes it
/// again: that is a shared read of the map, and only the first use of the interval takes the
/// write lock (`cargo xtask bench --scenario auth-read`, bench/HISTORY.md).
#[derive(Debug, Default)]
pub struct LastUsed {
    noted: RwLock<HashMap<i64, i64>>,
}

impl LastUsed {
    fn noted(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<i64, i64>> {
        // Each change is one insert or one swap, so a poisoned lock is taken as it is.
        self.noted.write().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Notes a use of the token at `at` (epoch milliseconds), unless one is noted already: the
    /// first use since the last write is the one written (at most [`LAST_USED_FLUSH`] early).
    pub fn note(&self, token_id: i64, at: i64) {
        if self.is_noted(token_id) {
            return;
        }
        self.noted().entry(token_id).or_insert(at);
    }

    /// Notes a use at `at` whatever is noted; the latest one wins (a failed write's uses).
    fn note_again(&self, token_id: i64, at: i64) {
        let mut noted = self.noted();
        let entry = noted.entry(token_id).or_insert(at);
        *entry = (*entry).max(at);
    }

    /// Whether a use of the token is noted and not yet written.
    pub fn is_noted(&self, token_id: i64) -> bool {
        self.noted.read().unwrap_or_else(|poisoned| poisoned.into_inner()).contains_key(&token_id)
    }

    /// Writes the noted uses; on failure they are noted again for the next write.
    pub async fn write(&self, store: &Store) -> Result<usize, StoreError> {
        let uses: Vec<(i64, i64)> = std::mem::take(&mut *self.noted()).into_iter().collect();
        if uses.is_empty() {
            return Ok(0);
        }
        match store.touch_tokens(&uses).await {
            Ok(()) => Ok(uses.len()),
            Err(error) => {
                for (token_id, at) in uses {
                    self.note_again(token_id, at);
                }
                Err(error)
            }
        }
    }
}

/// The background task that writes the noted uses.
pub struct LastUseWriter {
    pub(super) last_used: Arc<LastUsed>,
    pub(super) store: Store,
    pub(super) log: Logger,
}

/// Writes the uses noted in this instance's memory (nothing in the database is claimed) every
/// [`LAST_USED_FLUSH`], the first time at start, and once more when the service stops.
impl Chore for LastUseWriter {
    const NAME: &'static str = "last_used";

    fn every(&self) -> Duration {
        LAST_USED_FLUSH
    }

    async fn run(&self) -> Result<(), Failed> {
        self.last_used.write(&self.store).await.map(drop).map_err(|error| {
            slog::warn!(self.log, "writing token uses failed; they are written with the next ones"; "error" => %error);
            Failed
        })
    }

    async fn stopped(&self) {
        if let Err(error) = self.last_used.write(&self.store).await {
            slog::warn!(self.log, "writing the last token uses failed"; "error" => %error);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::on_both_databases;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn first_noted_uses_are_written_in_one_go_and_never_move_back() {
        on_both_databases(async |store| {
            let user = store.insert_user("Lin", "lin@example.com", "hash", false).await.unwrap();
            let mut ids = Vec::new();
            for name in ["a", "b"] {
                let new = crate::store::auth::tokens::NewToken {
                    user_id: user.id,
                    token_hash: name,
                    created_at: 1,
                    expires_at: None,
                    name,
                    abilities: "*",
                };
                ids.push(store.insert_token(&new).await.unwrap());
            }
            let last_used = LastUsed::default();
            last_used.note(ids[0], 5_000);
            last_used.note(ids[0], 6_000);
            last_used.note(ids[1], 7_000);
            assert!(last_used.is_noted(ids[0]));
            assert_eq!(last_used.write(store).await.unwrap(), 2);
            assert!(!last_used.is_noted(ids[0]));
            assert_eq!(last_used.write(store).await.unwrap(), 0, "nothing noted since");
            let times = |rows: Vec<crate::store::auth::tokens::TokenRow>| {
                rows.into_iter().map(|row| (row.name, row.last_used_at)).collect::<Vec<_>>()
            };
            let expected = vec![("a".to_string(), Some(5_000)), ("b".to_string(), Some(7_000))];
            assert_eq!(times(store.tokens_of("lin@example.com").await.unwrap()), expected);
            // An older use (another instance's, written late) does not move the time back.
            last_used.note(ids[0], 3_000);
            last_used.write(store).await.unwrap();
            assert_eq!(times(store.tokens_of("lin@example.com").await.unwrap()), expected);
        })
        .await;
    }
}
