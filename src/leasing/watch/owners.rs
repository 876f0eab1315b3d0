//! Who may reach a financing request by its id. The provider knows no users: the service
//! records who created each request through it (or first watched it), as the owner of its
//! watch ([`crate::store::leasing::owners`]). That user and operators reach it; anyone else is
//! told it does not exist, as for another user's subscription. A request the service has no
//! owner of (created elsewhere and never watched) is reached by every leasing token, as before
//! owners were recorded. An id is one request, with one watch, in any spelling (see [`crate::leasing::id`]).

use super::{WatchError, Watcher};
use crate::vocabulary::owner::Viewer;

impl Watcher {
    /// `Ok` when `viewer` may read or act on the financing request `financing_id`; else
    /// [`WatchError::RequestNotFound`].
    pub async fn reach(&self, financing_id: &str, viewer: Viewer) -> Result<(), WatchError> {
        if viewer.operator {
            return Ok(());
        }
        match self.store.financing_request_owner(financing_id).await? {
            Some(owner) if owner != viewer.user_id => Err(WatchError::RequestNotFound(financing_id.to_string())),
            _ => Ok(()),
        }
    }
}
