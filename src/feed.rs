//! What a consumer of a mirror reads to copy a set and follow it (docs/api.md, "Copying and
//! following a set"): the set's changes after a position, in the order they were stored (the
//! records written, each as it is now, and the ids of those removed), and where the feed
//! stands when an export begins. The numbering itself is the store's
//! ([`crate::store::feed`]).

use crate::store::feed::{Change, Mirror};
use crate::store::{Store, StoreError};
use crate::vocabulary::field_errors::FieldErrors;

/// Changes per page: the default and the most.
pub const DEFAULT_LIMIT: u32 = 100;
pub const MAX_LIMIT: u32 = 1_000;

#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    /// The position is older than the oldest removal kept: the consumer copies the set again.
    #[error(
        "the position {since} of the change feed of {entity} is no longer followed (removals are kept RETAIN_FEED_REMOVALS_DAYS): copy the set again (its export ends with a position to follow) and follow from there"
    )]
    Expired { entity: String, since: i64 },
    /// The position is after the feed's last: this database never answered it (it was
    /// restored from a backup since, or the position is made up): the consumer copies again.
    #[error(
        "the position {since} is after the last of the change feed of {entity} ({last}): this database did not answer it (restored from a backup since?): copy the set again (its export ends with a position to follow) and follow from there"
    )]
    Unknown { entity: String, since: i64, last: i64 },
    /// The position was not answered by this feed: by another set's feed, by another
    /// database, or by this one before it was restored from a backup.
    #[error(
        "the position was not answered by the change feed of {entity} as it stands: it is another set's, or of another history of this mirror (another database, or this one before it was restored from a backup): copy the set again (its export ends with a position to follow) and follow from there"
    )]
    OtherHistory { entity: String },
    #[error("invalid request")]
    Invalid(FieldErrors),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A position a consumer was answered: the number of the last change it has, and the
/// history of the feed that number counts in (`None`: a position answered before positions
/// named their history).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Since {
    pub generation: Option<i64>,
    pub seq: i64,
}

/// A page of a set's changes, and the position after it (the position asked when there was no
/// change: the consumer asks again from there later).
#[derive(Debug)]
pub struct ChangePage {
    pub changes: Vec<Change>,
    pub next: Since,
}

/// The changes of `entity` after position `since` (from the start when `None`: a consumer
/// with an empty copy, which reads every record the set holds, however old the feed is).
pub async fn changes(
    store: &Store,
    mirror: Mirror,
    entity: &str,
    since: Option<Since>,
    limit: Option<u32>,
) -> Result<ChangePage, FeedError> {
    let limit = limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(FeedError::Invalid(FieldErrors::from([(
            "limit".to_string(),
            vec![format!("limit is 1 to {MAX_LIMIT}")],
        )])));
    }
    let asked = since;
    let since = asked.map_or(0, |since| since.seq);
    let changes = store.feed_changes(mirror, entity, since, limit).await?;
    // Read after the changes: a removal pruned meanwhile may be missing from them.
    let position = store.feed_position(mirror, entity).await?;
    let generation = set_generation(position.generation, mirror, entity);
    let same_history = match asked.map(|since| since.generation) {
        None => true,
        Some(Some(asked)) => asked == generation,
        Some(None) => position.legacy_positions,
    };
    if !same_history {
        return Err(FeedError::OtherHistory { entity: entity.to_string() });
    }
    if since > 0 && since < position.expired_through {
        return Err(FeedError::Expired { entity: entity.to_string(), since });
    }
    if since > position.last_seq {
        return Err(FeedError::Unknown { entity: entity.to_string(), since, last: position.last_seq });
    }
    let next = changes.last().map_or(since, |change| change.seq);
    if !changes.is_empty() {
        // Answered once what was read is on disk: numbers a crash could hand out again are
        // never answered. A page without a change answers the position asked, answered before.
        store.make_feed_durable().await?;
    }
    Ok(ChangePage { changes, next: Since { generation: Some(generation), seq: next } })
}

/// Where the feed of `entity` stands: an export that starts here and reads every record after
/// is followed from this position. Not yet durable: the export answers it at its end, after
/// [`Store::make_feed_durable`] (`crate::api::support::feed::export`).
pub async fn position(store: &Store, mirror: Mirror, entity: &str) -> Result<Since, FeedError> {
    let position = store.feed_position(mirror, entity).await?;
    Ok(Since { generation: Some(set_generation(position.generation, mirror, entity)), seq: position.last_seq })
}

/// How many generations there are (migration 0038 takes them in 100000..=999999).
const GENERATIONS: i64 = 900_000;

/// The generation a position of the feed of `entity` names: the history's `generation`,
/// moved by a number of the set, within the same range. Every set numbers its changes from 1,
/// so a position answered by one set's feed would read another's from a number that counts
/// other changes; named so, it is of another generation there, and refused.
pub fn set_generation(generation: i64, mirror: Mirror, entity: &str) -> i64 {
    // FNV-1a: fixed across releases and platforms, as a position must be.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in mirror.name().bytes().chain([b'/']).chain(entity.bytes()) {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    let offset = (hash % GENERATIONS as u64) as i64;
    100_000 + (generation - 100_000 + offset).rem_euclid(GENERATIONS)
}

#[cfg(test)]
mod tests {
    use super::{Mirror, set_generation};

    /// Every set's positions name a generation of their own, in the range positions have
    /// room for: no set's position is followed by another set's feed.
    #[test]
    fn each_set_names_a_generation_of_its_own() {
        let sets = generated::fieldreport::ENTITIES
            .iter()
            .map(|info| (Mirror::FieldReport, info.route))
            .chain(generated::erp::MODELS.iter().map(|info| (Mirror::Erp, info.name)));
        for generation in [100_000, 543_210, 999_999] {
            let mut named = std::collections::HashMap::new();
            for (mirror, entity) in sets.clone() {
                let of_set = set_generation(generation, mirror, entity);
                assert!((100_000..=999_999).contains(&of_set), "{entity}: {of_set}");
                if let Some(other) = named.insert(of_set, entity) {
                    panic!("{other} and {entity} name the same generation {of_set}");
                }
            }
        }
    }
}
