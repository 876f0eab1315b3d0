//! What the caches kept true by [`super::change_notifications`] share: the answer of a
//! lookup, and the age past which an entry is read again whatever was heard.

use std::time::Duration;

/// An entry of a cache kept by change notifications is read again from the database after
/// this long, whatever was heard (the token owners and the field-report records alike).
pub const MAX_AGE: Duration = Duration::from_secs(30);

/// What a cache lookup found.
pub enum Lookup<T> {
    Hit(T),
    /// Not cached: read the database, then put what was read with this generation (`None`
    /// when the cache is not in use), which keeps it out if anything was forgotten meanwhile.
    Miss(Option<u64>),
}
