//! The baselines of `cargo xtask bench`'s sync scenario: the documents of the mirror inserted
//! again by a plain batched loop (500 rows per statement, one transaction each, committed as
//! any write is), so the sync's rate can be read against what the database alone does:
//! - into a scratch table of two columns (id and document), the baseline;
//! - into the mirror itself, as a set of their own ([`MIRROR_BASELINE_SET`], removed after),
//!   with the mirror's indexes and triggers: what storing them costs in the mirror's shape,
//!   so that the rest of the sync's time is what the service and its upstream add.

use std::time::{Duration, Instant};

use sqlx::Row;

use super::{Dialect, Store, StoreError};

const BATCH: usize = 500;
const SCRATCH: &str = "bench_insert_baseline";
/// The set the mirror-shaped baseline inserts into (no entity of the field-report system).
pub const MIRROR_BASELINE_SET: &str = "benchInsertBaseline";

/// `count` parameter marks numbered from `$first` on Postgres, and positional (`?`) on
/// SQLite: sqlx looks up the name of every parameter it binds, and SQLite finds a name (`$7`)
/// by walking the statement's list of names, so binding a batch's 1,500 named parameters took
/// a million steps (`perf` of `cargo xtask bench --scenario sync`: 15% of the machine). A
/// statement using them must take its other parameters by position too, on SQLite.
fn parameter_marks(dialect: Dialect, count: usize, first: usize) -> Vec<String> {
    (first..first + count)
        .map(|n| match dialect {
            Dialect::Sqlite => "?".to_string(),
            Dialect::Postgres => format!("${n}"),
        })
        .collect()
}

/// [`parameter_marks`] for `rows` rows of `width` values: `(…), (…)`.
fn parameter_rows(dialect: Dialect, rows: usize, width: usize, first: usize) -> String {
    let marks = parameter_marks(dialect, rows * width, first);
    marks.chunks(width.max(1)).map(|row| format!("({})", row.join(", "))).collect::<Vec<_>>().join(", ")
}

/// Where the baseline inserts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaselineTable {
    /// A scratch table `(record_id TEXT PRIMARY KEY, document TEXT)`.
    Scratch,
    /// The mirror, as the set [`MIRROR_BASELINE_SET`].
    Mirror,
}

impl Store {
    /// Inserts every mirrored document of `entity` again, into `table`; returns how many rows
    /// went in and how long the inserts took (reading them is not timed). What was inserted is removed
    /// after.
    pub async fn bench_insert_baseline(
        &self,
        entity: &str,
        table: BaselineTable,
    ) -> Result<(u64, Duration), StoreError> {
        let rows =
            sqlx::query("SELECT record_id, version, external_id, document FROM fieldreport_records WHERE entity = $1")
                .bind(entity)
                .fetch_all(self.pool())
                .await?;
        let documents: Vec<(String, i64, Option<String>, String)> = rows
            .iter()
            .map(|r| {
                Ok((r.try_get("record_id")?, r.try_get("version")?, r.try_get("external_id")?, r.try_get("document")?))
            })
            .collect::<Result<_, StoreError>>()?;
        let dialect = self.dialect();
        match table {
            BaselineTable::Scratch => {
                sqlx::query(sql!("DROP TABLE IF EXISTS {SCRATCH}")).execute(self.pool()).await?;
                sqlx::query(sql!("CREATE TABLE {SCRATCH} (record_id TEXT PRIMARY KEY, document TEXT NOT NULL)"))
                    .execute(self.pool())
                    .await?;
            }
            BaselineTable::Mirror => self.remove_mirror_baseline().await?,
        }
        let started = Instant::now();
        let mut inserted = 0;
        for chunk in documents.chunks(BATCH) {
            let query = match table {
                BaselineTable::Scratch => {
                    let statement = format!(
                        "INSERT INTO {SCRATCH} (record_id, document) VALUES {}",
                        parameter_rows(dialect, chunk.len(), 2, 1)
                    );
                    chunk.iter().fold(sqlx::query(sqlx::AssertSqlSafe(statement)), |query, (id, _, _, document)| {
                        query.bind(id).bind(document)
                    })
                }
                BaselineTable::Mirror => {
                    let statement = format!(
                        "INSERT INTO fieldreport_records (entity, record_id, version, external_id, document, created_at, updated_at) \
                         VALUES {}",
                        parameter_rows(dialect, chunk.len(), 7, 1)
                    );
                    let now = super::now_ms();
                    chunk.iter().fold(
                        sqlx::query(sqlx::AssertSqlSafe(statement)),
                        |query, (id, version, external_id, document)| {
                            query
                                .bind(MIRROR_BASELINE_SET)
                                .bind(id)
                                .bind(*version)
                                .bind(external_id)
                                .bind(document)
                                .bind(now)
                                .bind(now)
                        },
                    )
                }
            };
            let mut tx = self.write_transaction().await?;
            inserted += query.execute(&mut *tx).await?.rows_affected();
            tx.commit().await?;
        }
        let elapsed = started.elapsed();
        match table {
            BaselineTable::Scratch => {
                sqlx::query(sql!("DROP TABLE {SCRATCH}")).execute(self.pool()).await?;
            }
            BaselineTable::Mirror => self.remove_mirror_baseline().await?,
        }
        Ok((inserted, elapsed))
    }

    /// Forgets a mirrored set, for the sync scenario's next run: removes its records, its sync
    /// cursor and its change feed's tombstones (the removals just made), so that the next sync
    /// fetches and inserts every record again into a set as it was before its first. Returns
    /// how many records were removed.
    pub async fn bench_forget_set(&self, entity: &str) -> Result<u64, StoreError> {
        let mut tx = self.write_transaction().await?;
        let removed =
            sqlx::query("DELETE FROM fieldreport_records WHERE entity = $1").bind(entity).execute(&mut *tx).await?;
        sqlx::query("UPDATE fieldreport_sync_state SET cursor_value = NULL, last_sync_at = NULL WHERE entity = $1")
            .bind(entity)
            .execute(&mut *tx)
            .await?;
        for forget in [
            "DELETE FROM mirror_removals WHERE mirror = 'fieldreport' AND entity = $1",
            "DELETE FROM mirror_feed WHERE mirror = 'fieldreport' AND entity = $1",
        ] {
            sqlx::query(forget).bind(entity).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        // The next sync starts with the log empty, as the first one did: the deletes' pages
        // would otherwise be checkpointed during it.
        if self.dialect() == super::Dialect::Sqlite {
            sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(self.pool()).await?;
        }
        Ok(removed.rows_affected())
    }

    /// The scale scenario's baseline: every record of a mirrored set (`fieldreport` or `erp`)
    /// read straight from the database in key order, as one streamed statement; how many and
    /// how long. What the service adds to this is what a read-back or an export costs.
    pub async fn bench_read_set(&self, mirror: &str, set: &str) -> Result<(u64, Duration), StoreError> {
        use futures::TryStreamExt;
        let (table, column) = match mirror {
            "fieldreport" => ("fieldreport_records", "entity"),
            "erp" => ("erp_records", "model"),
            other => return Err(StoreError::Query(format!("no mirror {other:?}: fieldreport or erp"))),
        };
        let started = Instant::now();
        let statement = format!(
            "SELECT record_id, document FROM {table} WHERE {column} = $1 ORDER BY LENGTH(record_id), record_id"
        );
        let mut rows = sqlx::query(sqlx::AssertSqlSafe(statement)).bind(set).fetch(self.pool());
        let (mut count, mut bytes) = (0u64, 0usize);
        while let Some(row) = rows.try_next().await? {
            let document: &str = row.try_get("document")?;
            bytes += document.len();
            count += 1;
        }
        // Every document was read whole (not only counted).
        std::hint::black_box(bytes);
        Ok((count, started.elapsed()))
    }

    async fn remove_mirror_baseline(&self) -> Result<(), StoreError> {
        self.bench_forget_set(MIRROR_BASELINE_SET).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_positional_on_sqlite_and_numbered_on_postgres() {
        assert_eq!(parameter_marks(Dialect::Sqlite, 3, 2), ["?", "?", "?"]);
        assert_eq!(parameter_marks(Dialect::Postgres, 2, 3), ["$3", "$4"]);
        assert_eq!(parameter_rows(Dialect::Sqlite, 2, 2, 1), "(?, ?), (?, ?)");
        assert_eq!(parameter_rows(Dialect::Postgres, 2, 3, 3), "($3, $4, $5), ($6, $7, $8)");
    }

    #[tokio::test]
    async fn both_baselines_insert_every_document_and_leave_nothing_behind() {
        crate::store::testing::on_both_databases(async |store| {
            for id in ["1", "2", "3"] {
                let record = super::super::fieldreport::records::MirrorRecord {
                    id: id.into(),
                    version: 1,
                    document: serde_json::json!({"Id": id}),
                };
                store.mirror_insert("tags", &record, None).await.unwrap();
            }
            for table in [BaselineTable::Scratch, BaselineTable::Mirror] {
                let (count, _) = store.bench_insert_baseline("tags", table).await.unwrap();
                assert_eq!(count, 3, "{table:?} on {:?}", store.dialect());
            }
            let mut counts = store.mirror_counts().await.unwrap();
            counts.sort();
            assert_eq!(counts, [("tags".to_string(), 3)], "the baseline's set is removed, with its count");
        })
        .await;
    }

    #[tokio::test]
    async fn a_forgotten_set_loses_its_records_count_and_cursor_and_no_other_set_changes() {
        crate::store::testing::on_both_databases(async |store| {
            for (entity, id) in [("tags", "1"), ("tags", "2"), ("contacts", "7")] {
                let record = super::super::fieldreport::records::MirrorRecord {
                    id: id.into(),
                    version: 1,
                    document: serde_json::json!({"Id": id}),
                };
                store.mirror_insert(entity, &record, None).await.unwrap();
            }
            for entity in ["tags", "contacts"] {
                assert!(store.take_sync_lease(entity, "bench", store.lease_deadline()).await.unwrap());
                store.finish_sync(entity, "bench", Some("2026-11-27T05:00:00Z")).await.unwrap();
            }
            assert_eq!(store.bench_forget_set("tags").await.unwrap(), 2, "{:?}", store.dialect());
            let mut counts = store.mirror_counts().await.unwrap();
            counts.sort();
            assert_eq!(counts, [("contacts".to_string(), 1)], "{:?}: the set's count is 0", store.dialect());
            assert_eq!(store.sync_state("tags").await.unwrap().cursor, None);
            assert_eq!(store.sync_state("contacts").await.unwrap().cursor.as_deref(), Some("2026-11-27T05:00:00Z"));
        })
        .await;
    }
}
