//! Who may reach a financing request by its id. The provider knows no users: the service
//! records who created each request through it (or first watched it), as the owner of its
//! watch ([`crate::store::leasing::owners`]). That user and operators reach it; anyone else is
//! told it does not exist, as for another user's subscription. A request the service has no
//! owner of (created elsewhere and never watched) is reached by every leasing token, as before
//! owners were recorded. An id is one request in any case (the provider's ids are UUIDs).

use super::{WatchError, Watcher};
use crate::vocabulary::owner::Viewer;

impl Watcher {
    /// `Ok` when `viewer` may read or act on the financing request `financing_id`; else
    /// [`WatchError::RequestNotFound`].
    pub async fn reach(&self, financing_id: &str, viewer: Viewer) -> Result<(), WatchError> {
        if viewer.operator {
            return Ok(());
        }
        // Each spelling of one id may have a watch of its own (a user's, an operator's): the
        // request is the viewer's when one of them is, another user's when one is theirs.
        let owners = self.store.financing_request_owners(financing_id).await?;
        let theirs = owners.contains(&Some(viewer.user_id));
        if !theirs && owners.iter().flatten().any(|owner| *owner != viewer.user_id) {
            return Err(WatchError::RequestNotFound(financing_id.to_string()));
        }
        Ok(())
    }
}
