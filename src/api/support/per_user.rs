//! Things one user holds open at once on this instance (held calls, exports), counted under a
//! cap: a place is taken before the work starts and given back when it is dropped, whatever
//! tokens the user holds (each login mints a new one).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The places of each user, at most `most` at once.
pub struct PerUser {
    most: usize,
    open: Mutex<HashMap<i64, usize>>,
}

/// One place of a user; given back when dropped.
pub struct Place {
    of: Arc<PerUser>,
    user_id: i64,
}

impl PerUser {
    /// `most` is at least 1 (a setting read as a positive number).
    pub fn new(most: usize) -> Arc<PerUser> {
        Arc::new(PerUser { most, open: Mutex::default() })
    }

    /// The places a user may hold at once.
    pub fn most(&self) -> usize {
        self.most
    }

    /// A place for one more of `user_id`'s, or `None` when it holds its most.
    pub fn take(self: &Arc<Self>, user_id: i64) -> Option<Place> {
        let mut open = self.open.lock().expect("places per user");
        let count = open.entry(user_id).or_insert(0);
        if *count >= self.most {
            return None;
        }
        *count += 1;
        Some(Place { of: self.clone(), user_id })
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut open = self.of.open.lock().expect("places per user");
        if let Some(count) = open.get_mut(&self.user_id) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.user_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_user_holds_at_most_its_places_until_it_gives_one_back() {
        let places = PerUser::new(2);
        let (first, _second) = (places.take(1).unwrap(), places.take(1).unwrap());
        assert!(places.take(1).is_none(), "a third place of the same user");
        let other = places.take(2);
        assert!(other.is_some(), "another user's places are their own");
        drop(first);
        assert!(places.take(1).is_some(), "a place given back is taken again");
        drop(other);
        assert!(!places.open.lock().unwrap().contains_key(&2), "a user holding nothing is forgotten");
    }
}
