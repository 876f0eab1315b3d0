//! Who may reach a financing request by its id. The provider knows no users: the service
//! records who created each request through it (or first watched it), as the owner of its
//! watch ([`crate::store::leasing::owners`]). That user and operators reach it; anyone else is
//! told it does not exist, as for another user's subscription. A request the service has no
//! owner of (created elsewhere and never watched) is reached by every leasing token, as before
//! owners were recorded. An id is one request, with one watch, in any spelling (see [`crate::leasing::id`]).
//!
//! A request created here whose watch could not be started (the database refused the write
//! after the provider had created it) has no owner in the store: this instance keeps its
//! creator ([`super::unstarted::Unstarted`]) and starts its watch, as the creator's, once the database takes
//! writes again (the poller tries before each claim). Meanwhile it is its creator's here too.
//!
//! A user creates at most `LEASING_CREATES_PER_MINUTE_PER_USER` requests a minute: each is a
//! request at the provider and a watch here, with its events (and for a flow, its record).

use serde_json::Value;

use super::{WatchError, Watcher};
use crate::store::rates::Rated;
use crate::vocabulary::owner::Viewer;

impl Watcher {
    /// The id to ask the provider by, when `viewer` may read or act on the financing request
    /// `financing_id`: the spelling it was first watched (or created) under, else
    /// `financing_id` with the hyphens of a UUID ([`crate::leasing::id::hyphenated`]);
    /// [`WatchError::RequestNotFound`] when it is another user's.
    pub async fn reach(&self, financing_id: &str, viewer: Viewer) -> Result<String, WatchError> {
        let financing_id = crate::leasing::id::hyphenated(financing_id);
        let owned = match self.store.financing_request_watch(&financing_id).await? {
            Some((watched_as, owner)) => Some((watched_as, owner)),
            None => self.unstarted.get(&financing_id).map(|(created_as, creator)| (created_as, Some(creator))),
        };
        match owned {
            Some((_, Some(owner))) if owner != viewer.user_id && !viewer.operator => {
                Err(WatchError::RequestNotFound(financing_id))
            }
            Some((known_as, _)) => Ok(known_as),
            None => Ok(financing_id),
        }
    }

    /// Starts watching a request `user_id` just created (answered at `read_at`); when that
    /// fails, reports it and keeps the request as `user_id`'s until its watch is started.
    pub async fn start_created(&self, financing_id: &str, request: &Value, read_at: i64, user_id: i64) {
        if let Err(error) = self.start(financing_id, request, read_at, user_id).await {
            crate::telemetry::report_internal_error(&format!(
                "leasing watch: {financing_id} is not watched yet, kept as user {user_id}'s: {error}"
            ));
            self.unstarted.hold(financing_id, request, read_at, user_id);
        }
    }

    /// Takes one of `user_id`'s turns to create a financing request: `Some(seconds)` to wait
    /// when the user created `LEASING_CREATES_PER_MINUTE_PER_USER` within the last minute. With
    /// `take: false` it only looks (a flow, before it records itself; its create step takes
    /// the turn). A turn the database cannot count is an error, not a turn: nothing is created
    /// yet, and going on would leave the rate open for as long as the database refuses.
    pub async fn create_turn(&self, user_id: i64, take: bool) -> Result<Option<u64>, crate::store::StoreError> {
        let most = self.config.creates_per_minute_per_user;
        if take {
            self.store.take_turn(Rated::LeasingCreates, user_id, most).await
        } else {
            self.store.rate_reached(Rated::LeasingCreates, user_id, most).await
        }
    }

    /// The most financing requests a user may create within a minute.
    pub fn creates_per_minute(&self) -> u64 {
        self.config.creates_per_minute_per_user
    }

    /// Starts the watches of the requests created here whose watch could not be started, each
    /// as its creator's; stops at the first failure (the database still refuses).
    pub(super) async fn start_unstarted(&self) -> Result<(), crate::store::StoreError> {
        for (financing_id, request, read_at, user_id) in self.unstarted.snapshot() {
            self.start(&financing_id, &request, read_at, user_id).await?;
        }
        Ok(())
    }
}
