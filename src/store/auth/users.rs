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
    pub operator: bool,
}

const USER_COLUMNS: &str = "id, name, email, password_hash, created_at, operator";

fn from_row(row: &sqlx::any::AnyRow) -> Result<UserRow, sqlx::Error> {
    Ok(UserRow {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        email: row.try_get("email")?,
        password_hash: row.try_get("password_hash")?,
        created_at: row.try_get("created_at")?,
        operator: row.try_get::<i64, _>("operator")? != 0,
    })
}

impl Store {
    pub async fn insert_user(
        &self,
        name: &str,
        email: &str,
        password_hash: &str,
        operator: bool,
    ) -> Result<UserRow, StoreError> {
        let row = sqlx::query(sql!(
            "INSERT INTO users (name, email, password_hash, created_at, operator) VALUES ($1, $2, $3, $4, $5) \
             RETURNING {USER_COLUMNS}"
        ))
        .bind(name)
        .bind(email)
        .bind(password_hash)
        .bind(now_ms())
        .bind(i64::from(operator))
        .fetch_one(self.pool())
        .await?;
        Ok(from_row(&row)?)
    }

    pub async fn user_by_email(&self, email: &str) -> Result<Option<UserRow>, StoreError> {
        let row = sqlx::query(sql!("SELECT {USER_COLUMNS} FROM users WHERE email = $1"))
            .bind(email)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.as_ref().map(from_row).transpose()?)
    }

    pub async fn list_users(&self) -> Result<Vec<UserRow>, StoreError> {
        let rows = sqlx::query(sql!("SELECT {USER_COLUMNS} FROM users ORDER BY id")).fetch_all(self.pool()).await?;
        Ok(rows.iter().map(from_row).collect::<Result<_, _>>()?)
    }

    /// Sets whether the user with this email is an operator; none when there is no such user.
    pub async fn set_operator(&self, email: &str, operator: bool) -> Result<Option<UserRow>, StoreError> {
        let row = sqlx::query(sql!("UPDATE users SET operator = $1 WHERE email = $2 RETURNING {USER_COLUMNS}"))
            .bind(i64::from(operator))
            .bind(email)
            .fetch_optional(self.pool())
            .await?;
        // Token checks carry the flag: cached owners are read again.
        self.forget_token_owners();
        Ok(row.as_ref().map(from_row).transpose()?)
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
