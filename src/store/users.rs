//! The `users` table.

use sqlx::Row;

use crate::store::{Store, StoreError, now_ms};

/// A user as stored, with the password hash.
#[derive(Debug, Clone)]
pub struct UserRow {
    pub id: i64,
    pub name: String,
    pub email: String,
    pub password_hash: String,
    pub created_at: i64,
}

fn from_row(row: &sqlx::any::AnyRow) -> Result<UserRow, sqlx::Error> {
    Ok(UserRow {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        email: row.try_get("email")?,
        password_hash: row.try_get("password_hash")?,
        created_at: row.try_get("created_at")?,
    })
}

impl Store {
    pub async fn insert_user(&self, name: &str, email: &str, password_hash: &str) -> Result<UserRow, StoreError> {
        let row = sqlx::query(
            "INSERT INTO users (name, email, password_hash, created_at) VALUES ($1, $2, $3, $4) \
             RETURNING id, name, email, password_hash, created_at",
        )
        .bind(name)
        .bind(email)
        .bind(password_hash)
        .bind(now_ms())
        .fetch_one(self.pool())
        .await?;
        Ok(from_row(&row)?)
    }

    pub async fn user_by_email(&self, email: &str) -> Result<Option<UserRow>, StoreError> {
        let row = sqlx::query("SELECT id, name, email, password_hash, created_at FROM users WHERE email = $1")
            .bind(email)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.as_ref().map(from_row).transpose()?)
    }

    pub async fn list_users(&self) -> Result<Vec<UserRow>, StoreError> {
        let rows = sqlx::query("SELECT id, name, email, password_hash, created_at FROM users ORDER BY id")
            .fetch_all(self.pool())
            .await?;
        Ok(rows.iter().map(from_row).collect::<Result<_, _>>()?)
    }

    /// Deletes a user and, with them, every token; returns whether the user existed.
    pub async fn delete_user(&self, email: &str) -> Result<bool, StoreError> {
        let mut tx = self.write_transaction().await?;
        sqlx::query("DELETE FROM personal_access_tokens WHERE user_id IN (SELECT id FROM users WHERE email = $1)")
            .bind(email)
            .execute(&mut *tx)
            .await?;
        let deleted = sqlx::query("DELETE FROM users WHERE email = $1").bind(email).execute(&mut *tx).await?;
        tx.commit().await?;
        self.forget_token_owners();
        Ok(deleted.rows_affected() > 0)
    }
}
