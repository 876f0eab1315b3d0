//! Field-report records and pages kept in memory. On Postgres, reading one from the database
//! is a network round trip to a server that shares the machine's CPUs: `cargo xtask bench
//! --db postgres` put a record read at half the throughput it has on SQLite, where reads run in
//! place, with the service's CPU spent on the round trip (protocol, system calls, wake-ups).
//! On SQLite, a page read in place spent most of its time checking again, as JSON, the
//! documents the service checked when it stored them (`cargo xtask bench --scenario list`,
//! bench/HISTORY.md); there only pages are cached, as one record costs no more to read than
//! asking whether the file changed.
//!
//! The mirror is read far more often than it changes, and a cached document must never be
//! answered after the mirror changed, on any instance:
//! - On Postgres, every instance is told of a change, on [`CHANNEL`]: `<entity> <record id>`
//!   for a changed record (the record and every page of its set are forgotten), `<entity>` for
//!   many (the set is forgotten), `*` (everything). The service sends it after each write
//!   commits (`Store::notify_mirror_changed`); for any other session (a statement run by hand),
//!   the triggers of migration 0012 send it, per statement. The listener is
//!   [`super::change_notifications`], which keeps the cache in use only while it listens.
//! - On SQLite, before each lookup, everything is forgotten when any connection of any process
//!   committed to the file since the last lookup ([`super::sqlite_changes`]); this is coarse
//!   (a token's last use forgets the records too) and exact.
//! - A read that went to the database puts what it read in only if nothing was forgotten
//!   since it began (a generation count), so a notification that overtakes a read wins.
//! - This instance's own writes forget at once, after their commit, without waiting for the
//!   notification: a write is followed by reads of it.
//! - Entries are read again after [`MAX_AGE`] whatever happens, and what is held never exceeds
//!   [`MAX_BYTES`] (past it, the cache is emptied and fills again): the documents and, for
//!   every entry, [`ENTRY_BYTES`], so that entries holding little (a page past a set's end, of
//!   any offset a reader asks) cannot grow without bound.
//!
//! What remains on Postgres is the notification's own delay to other instances: a change made
//! through one instance (or by hand) is answered by the others once its transaction commits
//! and the notification is delivered (milliseconds on a working connection; a connection lost
//! without a word, at most [`super::change_notifications::SILENCE`]). Records are a mirror of
//! the upstream, which changes them without telling anyone until the next sync, so this adds
//! no kind of staleness a reader did not already have. Writes never read from the cache: they
//! read the record and compare its version in the database.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::value::RawValue;

use super::cache::{Lookup, MAX_AGE};

/// The notification channel of migration 0012.
pub const CHANNEL: &str = "fieldreport_records_changed";
/// Bytes held at most (single records and pages together), as counted by [`ENTRY_BYTES`].
pub const MAX_BYTES: usize = 32 << 20;
/// What an entry is counted besides its documents: its place in the maps, its key and time,
/// and a pointer per document of a page (each under 128 bytes).
pub const ENTRY_BYTES: usize = 128;

/// One page: its documents and the set's record count when it was read.
#[derive(Debug, Clone)]
pub struct CachedPage {
    pub documents: Vec<Box<RawValue>>,
    pub total: i64,
}

impl CachedPage {
    fn bytes(&self) -> usize {
        ENTRY_BYTES + self.documents.iter().map(|d| d.get().len() + std::mem::size_of::<Box<RawValue>>()).sum::<usize>()
    }
}

/// What a single record's entry is counted.
fn document_bytes(id: &str, document: &RawValue) -> usize {
    ENTRY_BYTES + id.len() + document.get().len()
}

/// What is cached of one set (entity).
#[derive(Default)]
struct Set {
    documents: HashMap<String, (Box<RawValue>, Instant)>,
    /// By (offset, limit).
    pages: HashMap<(i64, i64), (CachedPage, Instant)>,
}

#[derive(Default)]
struct State {
    /// Whether the cache is in use (on Postgres, while the listener listens): nothing is
    /// cached otherwise.
    listening: bool,
    /// Counts everything forgotten: a document read before a change is not put in after it.
    generation: u64,
    /// Bytes of the documents held.
    bytes: usize,
    sets: HashMap<String, Set>,
}

impl State {
    fn forget_pages(&mut self, entity: &str) {
        if let Some(set) = self.sets.get_mut(entity) {
            let freed: usize = set.pages.drain().map(|(_, (page, _))| page.bytes()).sum();
            self.bytes -= freed;
        }
    }

    fn forget_document(&mut self, entity: &str, id: &str) {
        if let Some((document, _)) = self.sets.get_mut(entity).and_then(|set| set.documents.remove(id)) {
            self.bytes -= document_bytes(id, &document);
        }
    }

    fn forget_set(&mut self, entity: &str) {
        self.forget_pages(entity);
        if let Some(set) = self.sets.remove(entity) {
            self.bytes -= set.documents.iter().map(|(id, (d, _))| document_bytes(id, d)).sum::<usize>();
        }
    }

    fn forget_all(&mut self) {
        self.sets.clear();
        self.bytes = 0;
    }

    /// Whether `bytes` more may be put in now: the cache is emptied first when they would
    /// pass [`MAX_BYTES`], and nothing larger than a quarter of it is kept.
    fn make_room(&mut self, bytes: usize) -> bool {
        if bytes > MAX_BYTES / 4 {
            return false;
        }
        if self.bytes + bytes > MAX_BYTES {
            self.forget_all();
        }
        self.bytes += bytes;
        true
    }
}

#[derive(Default)]
pub struct RecordCache {
    state: Mutex<State>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl std::fmt::Debug for RecordCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RecordCache")
    }
}

impl RecordCache {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // Every change is one call that leaves the maps whole, so a poisoned lock is taken as
        // it is.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Counts a lookup and turns what was found into its answer.
    fn looked_up<T>(&self, state: &State, found: Option<T>) -> Lookup<T> {
        match found {
            Some(found) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                Lookup::Hit(found)
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                Lookup::Miss(state.listening.then_some(state.generation))
            }
        }
    }

    /// One record's document.
    pub fn document(&self, entity: &str, id: &str) -> Lookup<Box<RawValue>> {
        let state = self.state();
        let found = state
            .sets
            .get(entity)
            .and_then(|set| set.documents.get(id))
            .filter(|(_, cached_at)| cached_at.elapsed() < MAX_AGE)
            .map(|(document, _)| document.clone());
        self.looked_up(&state, found)
    }

    /// One page of a set, `limit` records from `offset`.
    pub fn page(&self, entity: &str, offset: i64, limit: i64) -> Lookup<CachedPage> {
        let state = self.state();
        let found = state
            .sets
            .get(entity)
            .and_then(|set| set.pages.get(&(offset, limit)))
            .filter(|(_, cached_at)| cached_at.elapsed() < MAX_AGE)
            .map(|(page, _)| page.clone());
        self.looked_up(&state, found)
    }

    /// Keeps a document read from the database, unless something was forgotten since the read
    /// began (`generation` from [`Lookup::Miss`]) or the cache stopped being in use.
    pub fn put_document(&self, generation: Option<u64>, entity: &str, id: &str, document: &RawValue) {
        let mut state = self.state();
        if !state.listening || generation != Some(state.generation) {
            return;
        }
        state.forget_document(entity, id);
        if !state.make_room(document_bytes(id, document)) {
            return;
        }
        let set = state.sets.entry(entity.to_string()).or_default();
        set.documents.insert(id.to_string(), (document.to_owned(), Instant::now()));
    }

    /// Keeps a page read from the database, on the same terms as [`RecordCache::put_document`].
    pub fn put_page(&self, generation: Option<u64>, entity: &str, offset: i64, limit: i64, page: &CachedPage) {
        let mut state = self.state();
        if !state.listening || generation != Some(state.generation) {
            return;
        }
        if let Some((old, _)) = state.sets.get_mut(entity).and_then(|set| set.pages.remove(&(offset, limit))) {
            state.bytes -= old.bytes();
        }
        if !state.make_room(page.bytes()) {
            return;
        }
        let set = state.sets.entry(entity.to_string()).or_default();
        set.pages.insert((offset, limit), (page.clone(), Instant::now()));
    }

    /// Forgets these records of a set and every page of the set (any change may move a page).
    pub fn forget_records<'a>(&self, entity: &str, ids: impl IntoIterator<Item = &'a str>) {
        let mut state = self.state();
        state.generation += 1;
        state.forget_pages(entity);
        for id in ids {
            state.forget_document(entity, id);
        }
    }

    /// What a notification's payload asks (see the module's text); anything else than its
    /// three forms forgets everything.
    pub(in crate::store) fn notified(&self, payload: &str) {
        let mut state = self.state();
        state.generation += 1;
        match payload.split_once(' ') {
            Some((entity, id)) => {
                state.forget_pages(entity);
                state.forget_document(entity, id);
            }
            None if !payload.is_empty() && payload != "*" => state.forget_set(payload),
            None => state.forget_all(),
        }
    }

    pub(in crate::store) fn set_listening(&self, listening: bool) {
        let mut state = self.state();
        state.listening = listening;
        state.generation += 1;
        state.forget_all();
    }

    /// Lookups answered from memory and lookups that went to the database, since start.
    pub fn lookups(&self) -> (u64, u64) {
        (self.hits.load(Ordering::Relaxed), self.misses.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).unwrap()
    }

    fn page(texts: &[&str], total: i64) -> CachedPage {
        CachedPage { documents: texts.iter().map(|t| document(t)).collect(), total }
    }

    fn generation<T>(lookup: Lookup<T>) -> Option<u64> {
        match lookup {
            Lookup::Hit(_) => panic!("expected a miss"),
            Lookup::Miss(generation) => generation,
        }
    }

    fn has_document(cache: &RecordCache, entity: &str, id: &str) -> bool {
        matches!(cache.document(entity, id), Lookup::Hit(_))
    }

    fn has_page(cache: &RecordCache, entity: &str) -> bool {
        matches!(cache.page(entity, 0, 50), Lookup::Hit(_))
    }

    /// A cache holding companies 1 and 2, their first page, and project 1.
    fn filled() -> RecordCache {
        let cache = RecordCache::default();
        cache.set_listening(true);
        for (entity, id) in [("companies", "1"), ("companies", "2"), ("projects", "1")] {
            let g = generation(cache.document(entity, id));
            cache.put_document(g, entity, id, &document(&format!(r#"{{"Id":"{id}"}}"#)));
        }
        let g = generation(cache.page("companies", 0, 50));
        cache.put_page(g, "companies", 0, 50, &page(&[r#"{"Id":"1"}"#, r#"{"Id":"2"}"#], 2));
        cache
    }

    #[test]
    fn documents_and_pages_are_answered_as_they_were_put() {
        let cache = filled();
        let Lookup::Hit(found) = cache.document("companies", "2") else { panic!("cached") };
        assert_eq!(found.get(), r#"{"Id":"2"}"#);
        let Lookup::Hit(found) = cache.page("companies", 0, 50) else { panic!("cached") };
        assert_eq!((found.documents.len(), found.total), (2, 2));
        assert!(matches!(cache.page("companies", 50, 50), Lookup::Miss(Some(_))), "another page");
        assert!(matches!(cache.page("companies", 0, 10), Lookup::Miss(Some(_))), "another page size");
        assert!(!has_document(&cache, "projects", "2"));
        let (hits, misses) = cache.lookups();
        assert_eq!((hits, misses), (2, 4 + 3));
    }

    #[test]
    fn nothing_is_cached_unless_listening() {
        let cache = RecordCache::default();
        let g = generation(cache.document("companies", "1"));
        assert_eq!(g, None);
        cache.put_document(g, "companies", "1", &document("{}"));
        assert!(!has_document(&cache, "companies", "1"));
        let cache = filled();
        cache.set_listening(false);
        assert!(!has_document(&cache, "companies", "1"));
        assert!(!has_page(&cache, "companies"));
        assert_eq!(cache.state().bytes, 0);
    }

    #[test]
    fn a_change_during_a_read_keeps_what_was_read_out() {
        let cache = filled();
        let g = generation(cache.document("companies", "3"));
        cache.notified("projects 1");
        cache.put_document(g, "companies", "3", &document("{}"));
        assert!(!has_document(&cache, "companies", "3"));
        let g = generation(cache.page("companies", 50, 50));
        cache.forget_records("companies", ["9"]);
        cache.put_page(g, "companies", 50, 50, &page(&["{}"], 51));
        assert!(matches!(cache.page("companies", 50, 50), Lookup::Miss(_)));
    }

    #[test]
    fn a_changed_record_takes_its_set_s_pages_with_it() {
        let cache = filled();
        cache.notified("companies 1");
        assert!(!has_document(&cache, "companies", "1"));
        assert!(!has_page(&cache, "companies"), "a change may move any page of the set");
        assert!(has_document(&cache, "companies", "2"));
        assert!(has_document(&cache, "projects", "1"));

        let cache = filled();
        cache.forget_records("companies", ["2"]);
        assert!(!has_document(&cache, "companies", "2"));
        assert!(!has_page(&cache, "companies"));
        assert!(has_document(&cache, "companies", "1"));
    }

    #[test]
    fn a_set_or_everything_is_forgotten_when_told() {
        let cache = filled();
        cache.notified("companies");
        assert!(!has_document(&cache, "companies", "1"));
        assert!(!has_page(&cache, "companies"));
        assert!(has_document(&cache, "projects", "1"));
        cache.notified("projects");
        assert!(!has_document(&cache, "projects", "1"));
        assert_eq!(cache.state().bytes, 0);

        let cache = filled();
        cache.notified("*");
        assert!(!has_document(&cache, "projects", "1"));
        assert_eq!(cache.state().bytes, 0);
    }

    #[test]
    fn the_bytes_held_stay_under_the_limit() {
        let cache = filled();
        let before = cache.state().bytes;
        let (one, pointer) = (r#"{"Id":"1"}"#.len(), std::mem::size_of::<Box<RawValue>>());
        assert_eq!(before, 3 * (ENTRY_BYTES + "1".len() + one) + ENTRY_BYTES + 2 * (one + pointer));
        // Put again: counted once.
        let g = generation(cache.document("companies", "9"));
        cache.put_document(g, "companies", "1", &document(r#"{"Id":"1"}"#));
        assert_eq!(cache.state().bytes, before);

        let big = document(&format!(r#""{}""#, "x".repeat(MAX_BYTES / 4)));
        let g = generation(cache.document("companies", "big"));
        cache.put_document(g, "companies", "big", &big);
        assert!(!has_document(&cache, "companies", "big"), "a document of over a quarter of the limit");

        let large = document(&format!(r#""{}""#, "x".repeat(MAX_BYTES / 5)));
        for i in 0..6 {
            let id = format!("large-{i}");
            let g = generation(cache.document("companies", &id));
            cache.put_document(g, "companies", &id, &large);
            assert!(cache.state().bytes <= MAX_BYTES);
            assert!(has_document(&cache, "companies", &id));
        }
        assert!(!has_document(&cache, "companies", "large-0"), "emptied on the way");
    }

    /// Pages that hold no document (past the set's end, at any offset and size a reader asks)
    /// still take their place in memory: a million of them stay within the limit too.
    #[test]
    fn empty_pages_cannot_grow_the_cache_without_bound() {
        let cache = RecordCache::default();
        cache.set_listening(true);
        let g = generation(cache.page("companies", 0, 50));
        for offset in 0..1_000_000 {
            cache.put_page(g, "companies", 1_000_000 + offset, 50, &page(&[], 0));
        }
        let state = cache.state();
        let held = state.sets.get("companies").map_or(0, |set| set.pages.len());
        let entry = std::mem::size_of::<((i64, i64), (CachedPage, Instant))>();
        assert!(held * entry <= MAX_BYTES, "{held} empty pages of {entry} bytes each are held");
    }
}
