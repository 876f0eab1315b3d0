//! SQLite: the write-ahead log is copied back into the database file by a thread of the
//! store's own, not by the commits.
//!
//! By default the commit that takes the log past 1,000 pages (4 MB) checkpoints it: it copies
//! the logged pages into the database file and syncs that file before its writer goes on, and
//! every writer queued behind it waits too. In a sync of 100,000 companies (`cargo xtask bench
//! --scenario sync`) the commits took 0.20 s of the sync's 0.81 s, 0.07 s without that work.
//! The store's connections now checkpoint only past [`BACKSTOP_BYTES`], a backstop for when
//! this thread falls behind or is gone, and this thread checkpoints every [`INTERVAL`] in
//! passive mode: it copies what no reader still needs, never waits for a lock and never
//! holds up a writer.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::sqlite_reads::open_file;
use crate::store::error::StoreError;

/// How often the log is checkpointed.
const INTERVAL: Duration = Duration::from_millis(100);

/// Bytes of log past which a commit still checkpoints (64 MB): only when the thread cannot
/// keep up, or is gone. SQLite counts the setting in pages, so it is turned into pages of the
/// database's own size ([`backstop_pages`]): files created with 4 KB pages keep theirs.
const BACKSTOP_BYTES: u32 = 64 << 20;

/// [`BACKSTOP_BYTES`] in pages of `page_size` bytes.
pub(in crate::store) fn backstop_pages(page_size: u32) -> u32 {
    BACKSTOP_BYTES / page_size.clamp(512, 65_536)
}

/// The session setting that leaves checkpoints to the thread (commits only past
/// [`BACKSTOP_BYTES`]), for every connection of the store that writes to a database of
/// `page_size` bytes a page.
pub(in crate::store) fn connection_setting(page_size: u32) -> String {
    format!("PRAGMA wal_autocheckpoint = {};", backstop_pages(page_size))
}

/// The checkpointing thread of one SQLite file; it stops once this is dropped (with the last
/// clone of its store).
#[derive(Debug)]
pub(in crate::store) struct Checkpoints {
    stop: Arc<AtomicBool>,
    /// Held by the thread while it checkpoints (and by a test that must see the log before).
    #[cfg_attr(not(test), expect(dead_code, reason = "taken by tests only; the thread has a clone"))]
    turn: Arc<Mutex<()>>,
}

impl Checkpoints {
    /// Starts checkpointing the file at `path` on a connection of its own.
    pub(in crate::store) fn start(path: &Path) -> Result<Checkpoints, StoreError> {
        let connection = open_file(path, Duration::ZERO, "")?;
        let stop = Arc::new(AtomicBool::new(false));
        let turn = Arc::new(Mutex::new(()));
        let (stopped, held) = (stop.clone(), turn.clone());
        let path = path.display().to_string();
        std::thread::Builder::new()
            .name("sqlite-checkpoints".into())
            .spawn(move || {
                let mut reported = false;
                while !stopped.load(Ordering::Relaxed) {
                    std::thread::sleep(INTERVAL);
                    let checkpoint = {
                        let _turn = held.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                        connection.execute_batch("PRAGMA wal_checkpoint(PASSIVE)")
                    };
                    match checkpoint {
                        Ok(()) => reported = false,
                        // Reported once per run of failures: the backstop keeps the log bounded.
                        Err(error) if !reported => {
                            reported = true;
                            crate::telemetry::report_internal_error(&format!(
                                "checkpointing the SQLite log of {path} failed (commits checkpoint past {} MB instead): {error}",
                                BACKSTOP_BYTES >> 20
                            ));
                        }
                        Err(_) => {}
                    }
                }
            })
            .map_err(|e| StoreError::Unavailable(format!("cannot start the SQLite checkpoint thread: {e}")))?;
        Ok(Checkpoints { stop, turn })
    }

    /// Keeps the thread from checkpointing while the guard lives.
    #[cfg(test)]
    pub(in crate::store) fn hold(&self) -> std::sync::MutexGuard<'_, ()> {
        self.turn.lock().expect("checkpoint turn")
    }
}

impl Drop for Checkpoints {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests;
