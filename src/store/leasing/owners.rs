//! Who created each financing request the service watches: `leasing_watches.user_id`
//! (migration 0026), set when the request was created through the service or first watched.

use crate::store::{Store, StoreError};

impl Store {
    /// The watch of a financing request by its id in any case, as the id it was first watched
    /// under and the user it belongs to (`None`: watched before owners were recorded); `None`
    /// when it is not watched. The provider's ids are UUIDs, one id in any case, and a provider
    /// may answer `ABC…` with the request `abc…`; a request has one watch in any spelling
    /// (migration 0037).
    pub async fn financing_request_watch(
        &self,
        financing_id: &str,
    ) -> Result<Option<(String, Option<i64>)>, StoreError> {
        Ok(sqlx::query_as("SELECT financing_id, user_id FROM leasing_watches WHERE lower(financing_id) = lower($1)")
            .bind(financing_id)
            .fetch_optional(self.pool())
            .await?)
    }
}
