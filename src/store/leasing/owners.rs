//! Who created each financing request the service watches: `leasing_watches.user_id`
//! (migration 0026), set when the request was created through the service or first watched.

use crate::store::{Store, StoreError};

impl Store {
    /// The user a watched financing request belongs to; `None` when it is not watched or was
    /// watched before owners were recorded. The id is compared without regard to case: the
    /// provider's ids are UUIDs, one id in any case, and a provider may answer `ABC…` with the
    /// request `abc…`; a request has one watch in any spelling (migration 0037).
    pub async fn financing_request_owner(&self, financing_id: &str) -> Result<Option<i64>, StoreError> {
        let user_id: Option<Option<i64>> =
            sqlx::query_scalar("SELECT user_id FROM leasing_watches WHERE lower(financing_id) = lower($1)")
                .bind(financing_id)
                .fetch_optional(self.pool())
                .await?;
        Ok(user_id.flatten())
    }
}
