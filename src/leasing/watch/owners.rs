//! Who may reach a financing request by its id. The provider knows no users: the service
//! records who created each request through it (or first watched it), as the owner of its
//! watch ([`crate::store::leasing::owners`]). That user and operators reach it; anyone else is
//! told it does not exist, as for another user's subscription. A request the service has no
//! owner of (created elsewhere and never watched) is reached by every leasing token, as before
//! owners were recorded. An id is one request, with one watch, in any spelling (see [`crate::leasing::id`]).

use super::{WatchError, Watcher};
use crate::vocabulary::owner::Viewer;

impl Watcher {
    /// The id to ask the provider by, when `viewer` may read or act on the financing request
    /// `financing_id`: the spelling it was first watched under, else `financing_id` with the
    /// hyphens of a UUID ([`crate::leasing::id::hyphenated`]); [`WatchError::RequestNotFound`]
    /// when it is another user's.
    pub async fn reach(&self, financing_id: &str, viewer: Viewer) -> Result<String, WatchError> {
        let financing_id = crate::leasing::id::hyphenated(financing_id);
        match self.store.financing_request_watch(&financing_id).await? {
            Some((_, Some(owner))) if owner != viewer.user_id && !viewer.operator => {
                Err(WatchError::RequestNotFound(financing_id))
            }
            Some((watched_as, _)) => Ok(watched_as),
            None => Ok(financing_id),
        }
    }
}
