//! What keeps the Postgres caches ([`TokenCache`], [`RecordCache`]) true to the database:
//! triggers send a notification when a cached row changes (migrations 0011 and 0012), and each
//! instance listens for them on a connection of its own.
//!
//! A cache is in use only while that connection listens: before it first listens, and from the
//! moment it fails until it listens again, nothing is cached (notifications sent in between
//! are lost, so the caches are emptied). A connection cut without a word never reports an
//! error, so every instance sends a heartbeat every [`HEARTBEAT`] and a listener that hears
//! nothing for [`SILENCE`] is given up as lost.

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgListener;

use super::record_cache::{self, RecordCache};
use super::token_cache::{self, TokenCache};

/// How long the listener waits before connecting again after a failure.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);
/// Every instance sends [`HEARTBEAT_PAYLOAD`] on the token channel this often, through its pool
/// (instances of earlier releases listen on that channel only, and hear it too).
const HEARTBEAT: Duration = Duration::from_secs(5);
/// A listening connection that hears nothing (not even its own heartbeat) for this long is
/// taken as lost: a connection cut without a word (a network partition, a dropped NAT entry)
/// never reports an error.
pub const SILENCE: Duration = Duration::from_secs(15);
/// The payload of heartbeats, which change nothing.
const HEARTBEAT_PAYLOAD: &str = "heartbeat";

/// The caches that one listener keeps true.
#[derive(Clone)]
pub struct Listeners {
    pub tokens: Arc<TokenCache>,
    pub records: Arc<RecordCache>,
}

impl Listeners {
    /// Listens for changes until the task is aborted; the caches are in use only while a
    /// listening connection is up and hears at least the heartbeats that `pool` sends.
    pub async fn listen(self, url: String, pool: sqlx::AnyPool) {
        let heartbeat = async {
            loop {
                tokio::time::sleep(HEARTBEAT).await;
                // A failed heartbeat is not an error of its own: the silence it leaves is.
                let _ = sqlx::query("SELECT pg_notify($1, $2)")
                    .bind(token_cache::CHANNEL)
                    .bind(HEARTBEAT_PAYLOAD)
                    .execute(&pool)
                    .await;
            }
        };
        let listening = async {
            loop {
                if let Ok(mut listener) = Self::connect(&url).await {
                    self.set_listening(true);
                    // `try_recv` answers `None` when the connection was lost. The listener is
                    // dropped, never used again, after a wait for it was cut short.
                    while let Ok(Ok(Some(notification))) = tokio::time::timeout(SILENCE, listener.try_recv()).await {
                        self.notified(notification.channel(), notification.payload());
                    }
                }
                self.set_listening(false);
                tokio::time::sleep(RECONNECT_AFTER).await;
            }
        };
        tokio::join!(heartbeat, listening);
    }

    async fn connect(url: &str) -> Result<PgListener, sqlx::Error> {
        let mut listener = PgListener::connect(url).await?;
        listener.listen_all([token_cache::CHANNEL, record_cache::CHANNEL]).await?;
        Ok(listener)
    }

    fn set_listening(&self, listening: bool) {
        self.tokens.set_listening(listening);
        self.records.set_listening(listening);
    }

    /// Hands a notification to the cache of its channel; heartbeats change nothing.
    fn notified(&self, channel: &str, payload: &str) {
        match channel {
            _ if payload == HEARTBEAT_PAYLOAD => {}
            token_cache::CHANNEL => self.tokens.notified(payload),
            record_cache::CHANNEL => self.records.notified(payload),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::value::RawValue;

    use super::*;
    use crate::store::engine::cache::Lookup;

    #[test]
    fn notifications_reach_the_cache_of_their_channel_and_heartbeats_none() {
        let listeners =
            Listeners { tokens: Arc::new(TokenCache::default()), records: Arc::new(RecordCache::default()) };
        listeners.set_listening(true);
        let document = RawValue::from_string(r#"{"Id":"1"}"#.into()).unwrap();
        let Lookup::Miss(generation) = listeners.records.document("companies", "1") else { panic!("empty cache") };
        listeners.records.put_document(generation, "companies", "1", &document);
        let cached = || matches!(listeners.records.document("companies", "1"), Lookup::Hit(_));
        assert!(cached());

        listeners.notified(token_cache::CHANNEL, HEARTBEAT_PAYLOAD);
        listeners.notified(record_cache::CHANNEL, HEARTBEAT_PAYLOAD);
        assert!(cached(), "a heartbeat changes nothing");
        listeners.notified(token_cache::CHANNEL, "*");
        assert!(cached(), "a token notification leaves records alone");
        listeners.notified(record_cache::CHANNEL, "companies 1");
        assert!(!cached());

        listeners.records.put_document(None, "companies", "1", &document);
        assert!(!cached(), "a put without a generation keeps nothing");
        let Lookup::Miss(generation) = listeners.records.document("companies", "1") else { panic!("forgotten") };
        listeners.records.put_document(generation, "companies", "1", &document);
        assert!(cached());
        listeners.set_listening(false);
        assert!(!cached(), "a lost listener empties the caches");
    }
}
