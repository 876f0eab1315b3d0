//! Who created each financing request the service watches: `leasing_watches.user_id`
//! (migration 0026), set when the request was created through the service or first watched.

use crate::store::{Store, StoreError};

impl Store {
    /// The users the watches of a financing request belong to (`None` for a watch made before
    /// owners were recorded); empty when it is not watched. The id is compared without regard
    /// to case (migration 0036): the provider's ids are UUIDs, one id in any case, and a
    /// provider may answer `ABC…` with the request `abc…`.
    pub async fn financing_request_owners(&self, financing_id: &str) -> Result<Vec<Option<i64>>, StoreError> {
        Ok(sqlx::query_scalar("SELECT user_id FROM leasing_watches WHERE lower(financing_id) = lower($1)")
            .bind(financing_id)
            .fetch_all(self.pool())
            .await?)
    }
}
