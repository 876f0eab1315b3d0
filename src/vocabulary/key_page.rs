//! Lists read by key (`?after=<cursor>&limit=N`): one more row than asked is read, to learn
//! whether any follow, and the page's last key becomes the next cursor. A page's cost then
//! does not depend on its depth, and a row inserted or deleted meanwhile shifts no other.

use std::fmt::Display;

/// The page's rows (one more than `limit` was read, to learn whether any follow) and the key
/// of the next page: that of its last row, while rows follow.
pub fn key_page<T>(mut rows: Vec<T>, limit: u32, key: impl Fn(&T) -> String) -> (Vec<T>, Option<String>) {
    let limit = limit as usize;
    let more = rows.len() > limit;
    rows.truncate(limit);
    let next = if more { rows.last().map(key) } else { None };
    (rows, next)
}

/// The key of a list ordered by time, then id (jobs, subscriptions): `<milliseconds>:<id>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StampedKey {
    pub at: i64,
    pub id: String,
}

impl StampedKey {
    pub fn new(at: i64, id: impl Display) -> StampedKey {
        StampedKey { at, id: id.to_string() }
    }

    /// The key's text, as a cursor carries it.
    pub fn text(&self) -> String {
        format!("{}:{}", self.at, self.id)
    }

    /// The key a cursor's text spells; `None` for a text that spells none (a cursor this
    /// service did not write), which the lists read as their start.
    pub fn parse(text: &str) -> Option<StampedKey> {
        let (at, id) = text.split_once(':')?;
        Some(StampedKey { at: at.parse().ok()?, id: id.to_string() })
    }

    /// The id as a number, for lists whose ids are numbers; `None` when it is not one.
    pub fn numeric_id(&self) -> Option<i64> {
        self.id.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_names_the_next_key_only_when_more_follow() {
        assert_eq!(key_page(vec![1, 2, 3], 2, |n| n.to_string()), (vec![1, 2], Some("2".into())));
        assert_eq!(key_page(vec![1, 2], 2, |n| n.to_string()), (vec![1, 2], None));
        assert_eq!(key_page(Vec::<i32>::new(), 2, |n| n.to_string()), (vec![], None));
    }

    #[test]
    fn a_stamped_key_reads_back_what_it_wrote() {
        let key = StampedKey::new(1_764_235_800_000, "sub_a:b");
        assert_eq!(key.text(), "1764235800000:sub_a:b");
        assert_eq!(StampedKey::parse(&key.text()), Some(key));
        assert_eq!(StampedKey::new(5, 41).numeric_id(), Some(41));
        for text in ["", "5", "x:1", ":1", "1.5:2"] {
            assert_eq!(StampedKey::parse(text), None, "{text:?}");
        }
    }
}
