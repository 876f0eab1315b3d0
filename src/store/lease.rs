//! Leases in the database: work that must run once across instances (a sync of one entity, a
//! pull of one model) holds a row's lease until it finishes or the lease expires.
//!
//! The state tables (`fieldreport_sync_state`, `erp_pull_state`) share the columns
//! `lease_owner` and `lease_until`; [`LeaseTable`] names the table and its key column.

use crate::store::{Store, StoreError, now_ms};

/// A table with lease columns, keyed by one text column.
#[derive(Debug, Clone, Copy)]
pub struct LeaseTable {
    pub table: &'static str,
    pub key: &'static str,
}

pub const FIELDREPORT_SYNC: LeaseTable = LeaseTable { table: "fieldreport_sync_state", key: "entity" };
pub const ERP_PULL: LeaseTable = LeaseTable { table: "erp_pull_state", key: "model" };

impl Store {
    /// Takes the lease of `key` for `owner` until `until` (epoch ms) if nobody else holds an
    /// unexpired one; renews it when `owner` already holds it.
    pub async fn take_lease(&self, at: LeaseTable, key: &str, owner: &str, until: i64) -> Result<bool, StoreError> {
        let LeaseTable { table, key: column } = at;
        sqlx::query(sql!("INSERT INTO {table} ({column}) VALUES ($1) ON CONFLICT ({column}) DO NOTHING"))
            .bind(key)
            .execute(self.pool())
            .await?;
        let taken = sqlx::query(sql!(
            "UPDATE {table} SET lease_owner = $1, lease_until = $2 \
             WHERE {column} = $3 AND (lease_owner IS NULL OR lease_owner = $1 OR lease_until < $4)"
        ))
        .bind(owner)
        .bind(until)
        .bind(key)
        .bind(now_ms())
        .execute(self.pool())
        .await?;
        Ok(taken.rows_affected() == 1)
    }

    /// Releases a lease held by `owner`.
    pub async fn release_lease(&self, at: LeaseTable, key: &str, owner: &str) -> Result<(), StoreError> {
        let LeaseTable { table, key: column } = at;
        sqlx::query(sql!(
            "UPDATE {table} SET lease_owner = NULL, lease_until = NULL WHERE {column} = $1 AND lease_owner = $2"
        ))
        .bind(key)
        .bind(owner)
        .execute(self.pool())
        .await?;
        Ok(())
    }
}
