//! The `users` table.

use crate::store::columns::IntBool;
use crate::store::{Dialect, Store, StoreError, WriteTransaction, now_ms};

/// A user as stored, with the password hash.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct UserRow {
    pub id: i64,
    pub name: String,
    pub email: String,
    pub password_hash: String,
    pub created_at: i64,
    #[sqlx(try_from = "IntBool")]
    pub operator: bool,
}

const USER_COLUMNS: &str = "id, name, email, password_hash, created_at, operator";

impl Store {
    /// Holds the user's row within `tx` on Postgres until `tx` ends, so that transactions
    /// that count a user's rows before adding one take turns per user (requests sent at once
    /// would otherwise each count without the others). SQLite's write transaction holds the
    /// whole database already.
    pub(crate) async fn hold_user(&self, tx: &mut WriteTransaction, user_id: i64) -> Result<(), StoreError> {
        if self.dialect() == Dialect::Postgres {
            sqlx::query("SELECT id FROM users WHERE id = $1 FOR UPDATE")
                .bind(user_id)
                .fetch_optional(&mut **tx)
                .await?;
        }
        Ok(())
    }

    pub async fn insert_user(
        &self,
        name: &str,
        email: &str,
        password_hash: &str,
        operator: bool,
    ) -> Result<UserRow, StoreError> {
        Ok(sqlx::query_as::<_, UserRow>(sql!(
            "INSERT INTO users (name, email, password_hash, created_at, operator) VALUES ($1, $2, $3, $4, $5) \
             RETURNING {USER_COLUMNS}"
        ))
        .bind(name)
        .bind(email)
        .bind(password_hash)
        .bind(now_ms())
        .bind(i64::from(operator))
        .fetch_one(self.pool())
        .await?)
    }

    pub async fn user_by_email(&self, email: &str) -> Result<Option<UserRow>, StoreError> {
        Ok(sqlx::query_as::<_, UserRow>(sql!("SELECT {USER_COLUMNS} FROM users WHERE email = $1"))
            .bind(email)
            .fetch_optional(self.pool())
            .await?)
    }

    pub async fn list_users(&self) -> Result<Vec<UserRow>, StoreError> {
        Ok(sqlx::query_as::<_, UserRow>(sql!("SELECT {USER_COLUMNS} FROM users ORDER BY id"))
            .fetch_all(self.pool())
            .await?)
    }

    /// Sets whether the user with this email is an operator; none when there is no such user.
    pub async fn set_operator(&self, email: &str, operator: bool) -> Result<Option<UserRow>, StoreError> {
        let user = sqlx::query_as::<_, UserRow>(sql!(
            "UPDATE users SET operator = $1 WHERE email = $2 RETURNING {USER_COLUMNS}"
        ))
        .bind(i64::from(operator))
        .bind(email)
        .fetch_optional(self.pool())
        .await?;
        // Token checks carry the flag: cached owners are read again.
        self.forget_token_owners();
        Ok(user)
    }

    /// Gives the user `id` the email `email` unless another user has it; returns whether it did.
    pub async fn change_user_email(&self, id: i64, email: &str) -> Result<bool, StoreError> {
        let changed = sqlx::query(
            "UPDATE users SET email = $1 WHERE id = $2 AND NOT EXISTS (SELECT 1 FROM users WHERE email = $1)",
        )
        .bind(email)
        .bind(id)
        .execute(self.pool())
        .await?;
        self.forget_token_owners();
        Ok(changed.rows_affected() > 0)
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
