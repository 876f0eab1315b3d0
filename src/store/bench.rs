//! The baseline of `cargo xtask bench`'s sync scenario: the documents of the mirror inserted
//! by a plain batched loop (500 rows per statement, one transaction each) into a scratch
//! table of the same database, so the sync's rate can be read against what the database alone
//! does.

use std::time::{Duration, Instant};

use sqlx::Row;

use super::{Store, StoreError};

const BATCH: usize = 500;
const SCRATCH: &str = "bench_insert_baseline";

impl Store {
    /// Inserts every mirrored document of `entity` into the scratch table; returns how many
    /// and how long the inserts took (reading them is not timed). The table is dropped after.
    pub async fn bench_insert_baseline(&self, entity: &str) -> Result<(u64, Duration), StoreError> {
        let rows = sqlx::query("SELECT record_id, document FROM fieldreport_records WHERE entity = $1")
            .bind(entity)
            .fetch_all(self.pool())
            .await?;
        let documents: Vec<(String, String)> = rows
            .iter()
            .map(|r| Ok((r.try_get("record_id")?, r.try_get("document")?)))
            .collect::<Result<_, StoreError>>()?;
        sqlx::query(sql!("DROP TABLE IF EXISTS {SCRATCH}")).execute(self.pool()).await?;
        sqlx::query(sql!("CREATE TABLE {SCRATCH} (record_id TEXT PRIMARY KEY, document TEXT NOT NULL)"))
            .execute(self.pool())
            .await?;
        let started = Instant::now();
        for chunk in documents.chunks(BATCH) {
            // Parameters by position on SQLite, as the sync's statements take them there (sqlx
            // looks up each parameter's name, and SQLite finds a name by walking the list).
            let values: Vec<String> = match self.dialect() {
                super::Dialect::Sqlite => vec!["(?, ?)".to_string(); chunk.len()],
                super::Dialect::Postgres => {
                    (0..chunk.len()).map(|i| format!("(${}, ${})", 2 * i + 1, 2 * i + 2)).collect()
                }
            };
            let statement = format!("INSERT INTO {SCRATCH} (record_id, document) VALUES {}", values.join(", "));
            let mut query = sqlx::query(sqlx::AssertSqlSafe(statement));
            for (id, document) in chunk {
                query = query.bind(id).bind(document);
            }
            let mut tx = self.pool().begin().await?;
            query.execute(&mut *tx).await?;
            tx.commit().await?;
        }
        let elapsed = started.elapsed();
        sqlx::query(sql!("DROP TABLE {SCRATCH}")).execute(self.pool()).await?;
        Ok((documents.len() as u64, elapsed))
    }
}
