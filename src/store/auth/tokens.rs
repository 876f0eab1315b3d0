//! The `personal_access_tokens` table. Only a SHA-256 of each token's secret is stored.

use rusqlite::OptionalExtension;
use sqlx::FromRow;

use crate::store::engine::cache::Lookup;
pub use crate::store::engine::token_cache::TokenOwner;
use crate::store::{Store, StoreError, now_ms};

/// A token and its user, by token id.
const TOKEN_OWNER: &str = "SELECT t.id AS token_id, t.token_hash, t.expires_at, t.last_used_at, t.abilities, \
            u.id AS user_id, u.name, u.email, u.created_at, u.operator \
     FROM personal_access_tokens t JOIN users u ON u.id = t.user_id WHERE t.id = $1";

/// A token to store.
pub struct NewToken<'a> {
    pub user_id: i64,
    /// Hex SHA-256 of the secret.
    pub token_hash: &'a str,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub name: &'a str,
    /// Names, space-separated.
    pub abilities: &'a str,
}

/// A stored token as listed: everything but its hash.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct TokenRow {
    pub id: i64,
    pub name: String,
    pub abilities: String,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
    pub expires_at: Option<i64>,
}

impl Store {
    /// Stores a token; a second token of one name for one user (other than `login`) is
    /// [`StoreError::Duplicate`].
    pub async fn insert_token(&self, token: &NewToken<'_>) -> Result<i64, StoreError> {
        Ok(self.insert_token_with(token, None).await?.0)
    }

    /// Stores a token and revokes the user's other tokens of its name beyond the `keep` used
    /// (else issued) most recently, this one counted: what one user's logins leave stays
    /// bounded. Returns the token's id and how many were revoked.
    pub async fn insert_token_keeping(&self, token: &NewToken<'_>, keep: u64) -> Result<(i64, u64), StoreError> {
        self.insert_token_with(token, Some(keep)).await
    }

    async fn insert_token_with(&self, token: &NewToken<'_>, keep: Option<u64>) -> Result<(i64, u64), StoreError> {
        let mut transaction = self.write_transaction().await?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO personal_access_tokens (user_id, token_hash, created_at, expires_at, name, abilities) \
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
        )
        .bind(token.user_id)
        .bind(token.token_hash)
        .bind(token.created_at)
        .bind(token.expires_at)
        .bind(token.name)
        .bind(token.abilities)
        .fetch_one(&mut *transaction)
        .await?;
        let mut revoked = 0;
        if let Some(keep) = keep {
            revoked = sqlx::query(
                "DELETE FROM personal_access_tokens WHERE user_id = $1 AND name = $2 AND id NOT IN \
                   (SELECT id FROM personal_access_tokens WHERE user_id = $1 AND name = $2 \
                    ORDER BY COALESCE(last_used_at, created_at) DESC, id DESC LIMIT $3)",
            )
            .bind(token.user_id)
            .bind(token.name)
            .bind(i64::try_from(keep).unwrap_or(i64::MAX))
            .execute(&mut *transaction)
            .await?
            .rows_affected();
        }
        transaction.commit().await?;
        if revoked > 0 {
            self.forget_token_owners();
        }
        Ok((id, revoked))
    }

    /// The tokens of the user with this email, oldest first (never their secrets).
    pub async fn tokens_of(&self, email: &str) -> Result<Vec<TokenRow>, StoreError> {
        Ok(sqlx::query_as::<_, TokenRow>(
            "SELECT t.id, t.name, t.abilities, t.created_at, t.last_used_at, t.expires_at \
             FROM personal_access_tokens t JOIN users u ON u.id = t.user_id WHERE u.email = $1 ORDER BY t.id",
        )
        .bind(email)
        .fetch_all(self.pool())
        .await?)
    }

    /// Revokes the user's tokens of this name; returns how many there were.
    pub async fn delete_named_tokens(&self, email: &str, name: &str) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "DELETE FROM personal_access_tokens \
             WHERE name = $2 AND user_id IN (SELECT id FROM users WHERE email = $1)",
        )
        .bind(email)
        .bind(name)
        .execute(self.pool())
        .await?;
        self.forget_token_owners();
        Ok(done.rows_affected())
    }

    /// Read on every authenticated request: in place on SQLite, else on a request connection.
    pub async fn token_owner(&self, token_id: i64) -> Result<Option<TokenOwner>, StoreError> {
        if let Some(reads) = self.engine.sqlite_reads() {
            return reads
                .run(move |c| {
                    c.prepare_cached(TOKEN_OWNER)?
                        .query_row(rusqlite::named_params! {"$1": token_id}, |row| {
                            Ok(TokenOwner {
                                token_id: row.get("token_id")?,
                                token_hash: row.get("token_hash")?,
                                expires_at: row.get("expires_at")?,
                                last_used_at: row.get("last_used_at")?,
                                abilities: row.get("abilities")?,
                                user_id: row.get("user_id")?,
                                name: row.get("name")?,
                                email: row.get("email")?,
                                created_at: row.get("created_at")?,
                                operator: row.get::<_, i64>("operator")? != 0,
                            })
                        })
                        .optional()
                })
                .await;
        }
        let generation = match self.engine.token_cache().map(|cache| cache.lookup(token_id)) {
            Some(Lookup::Hit(owner)) => return Ok(Some(owner)),
            Some(Lookup::Miss(generation)) => generation,
            None => None,
        };
        let mut lease = self.lease().await?;
        let row = sqlx::query(TOKEN_OWNER).bind(token_id).fetch_optional(lease.connection()).await;
        let Some(row) = lease.settle(row)? else { return Ok(None) };
        let owner = TokenOwner::from_row(&row)?;
        if let Some(cache) = self.engine.token_cache() {
            cache.put(generation, &owner);
        }
        Ok(Some(owner))
    }

    /// Records when tokens were last used, `(token id, epoch milliseconds)`, in one
    /// transaction; a time older than the stored one leaves it.
    pub async fn touch_tokens(&self, uses: &[(i64, i64)]) -> Result<(), StoreError> {
        let mut transaction = self.write_transaction().await?;
        for (token_id, at) in uses {
            sqlx::query(
                "UPDATE personal_access_tokens SET last_used_at = $1 \
                 WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $1)",
            )
            .bind(*at)
            .bind(*token_id)
            .execute(&mut *transaction)
            .await?;
        }
        transaction.commit().await?;
        if let Some(cache) = self.engine.token_cache() {
            for (token_id, at) in uses {
                cache.touched(*token_id, *at);
            }
        }
        Ok(())
    }

    pub async fn delete_token(&self, token_id: i64) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM personal_access_tokens WHERE id = $1").bind(token_id).execute(self.pool()).await?;
        if let Some(cache) = self.engine.token_cache() {
            cache.forget(token_id);
        }
        Ok(())
    }

    /// Revokes every token of the user with this email; returns how many there were.
    pub async fn delete_tokens_of(&self, email: &str) -> Result<u64, StoreError> {
        let done =
            sqlx::query("DELETE FROM personal_access_tokens WHERE user_id IN (SELECT id FROM users WHERE email = $1)")
                .bind(email)
                .execute(self.pool())
                .await?;
        self.forget_token_owners();
        Ok(done.rows_affected())
    }

    /// Empties the token cache (this instance's own revocations of many tokens, users deleted).
    pub(in crate::store) fn forget_token_owners(&self) {
        if let Some(cache) = self.engine.token_cache() {
            cache.forget_all();
        }
    }

    /// Drops tokens that expired before `now`.
    pub async fn delete_expired_tokens(&self) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM personal_access_tokens WHERE expires_at IS NOT NULL AND expires_at < $1")
            .bind(now_ms())
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Beyond `keep` tokens of a name, those used (else issued) longest ago go; tokens of
    /// other names and of other users stay.
    #[tokio::test]
    async fn a_token_stored_keeping_revokes_the_least_recently_used() {
        crate::store::testing::on_both_databases(async |store| {
            let ada = store.insert_user("Ada", "ada@example.com", "hash", false).await.unwrap().id;
            let grace = store.insert_user("Grace", "grace@example.com", "hash", false).await.unwrap().id;
            let token = |user_id, name, created_at, hash| NewToken {
                user_id,
                token_hash: hash,
                created_at,
                expires_at: None,
                name,
                abilities: "",
            };
            let named = store.insert_token(&token(ada, "ci", 0, "h0")).await.unwrap();
            let other = store.insert_token_keeping(&token(grace, "login", 1, "h1"), 1).await.unwrap().0;
            let mut ids = Vec::new();
            for (created_at, hash) in [(1, "a"), (2, "b"), (3, "c")] {
                let (id, revoked) =
                    store.insert_token_keeping(&token(ada, "login", created_at, hash), 3).await.unwrap();
                assert_eq!(revoked, 0);
                ids.push(id);
            }
            // The first one is used after the others were issued: the second is now the one
            // used longest ago.
            store.touch_tokens(&[(ids[0], 10)]).await.unwrap();
            let (fourth, revoked) = store.insert_token_keeping(&token(ada, "login", 4, "d"), 3).await.unwrap();
            assert_eq!(revoked, 1);
            let kept: Vec<i64> = store.tokens_of("ada@example.com").await.unwrap().iter().map(|t| t.id).collect();
            assert_eq!(kept, [named, ids[0], ids[2], fourth]);
            let graces: Vec<i64> = store.tokens_of("grace@example.com").await.unwrap().iter().map(|t| t.id).collect();
            assert_eq!(graces, [other]);
        })
        .await;
    }
}
