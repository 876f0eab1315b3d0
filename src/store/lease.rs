//! Leases in the database: work that must run once across instances (a sync of one entity, a
//! pull of one model) holds a row's lease until it finishes or the lease expires.
//!
//! The state tables (`fieldreport_sync_state`, `erp_pull_state`) share the columns
//! `lease_owner` and `lease_until`; [`LeaseTable`] names the table and its key column.
//!
//! Queued work (jobs, watched requests, deliveries, webhook calls) is claimed a batch of due
//! rows at a time, each kind with the statement [`DueClaim`] writes for the database.

use crate::store::{Dialect, Store, StoreError, now_ms};

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

/// A claim of a table's due rows, as one statement that sets the claim on them and answers
/// them.
///
/// On Postgres the rows are picked and locked first, in a materialised step of their own
/// (`FOR UPDATE SKIP LOCKED`: instances claiming at once take different rows), and then
/// updated by key: with the pick as an `IN (subquery)` of the UPDATE, one claim behind a
/// backlog of 70,000 webhook calls ran for minutes (`cargo xtask bench --db postgres`). On
/// SQLite the statement runs whole under the database's write lock.
pub struct DueClaim<'a> {
    /// The table, with the alias `due` names it by, if any (`leasing_deliveries d`).
    pub from: &'a str,
    /// The key, as `due` names it (`d.id`).
    pub key: &'a str,
    /// Which rows are due, then their order and how many at most.
    pub due: &'a str,
    /// What claiming a row sets.
    pub set: &'a str,
    /// The columns to answer, comma-separated; empty: none.
    pub returning: &'a str,
}

impl DueClaim<'_> {
    pub fn statement(&self, dialect: Dialect) -> sqlx::AssertSqlSafe<String> {
        let DueClaim { from, key, due, set, returning } = self;
        let (table, alias) = from.split_once(' ').unwrap_or((from, from));
        let column = key.rsplit('.').next().unwrap_or(key);
        match dialect {
            Dialect::Postgres => {
                let lock = if alias == table { String::new() } else { format!(" OF {alias}") };
                let answer = if returning.is_empty() {
                    String::new()
                } else {
                    let columns: Vec<String> = returning.split(", ").map(|c| format!("{table}.{c}")).collect();
                    format!(" RETURNING {}", columns.join(", "))
                };
                sql!(
                    "WITH picked AS MATERIALIZED (SELECT {key} FROM {from} WHERE {due} FOR UPDATE{lock} SKIP LOCKED) \
                     UPDATE {table} SET {set} FROM picked WHERE {table}.{column} = picked.{column}{answer}"
                )
            }
            Dialect::Sqlite => {
                let answer = if returning.is_empty() { String::new() } else { format!(" RETURNING {returning}") };
                sql!("UPDATE {table} SET {set} WHERE {column} IN (SELECT {key} FROM {from} WHERE {due}){answer}")
            }
        }
    }
}
