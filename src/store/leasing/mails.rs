//! When the missing-info mail of each financing request last left
//! (`leasing_missing_info_mails`, migration 0041): a request's mail takes a turn, at most one
//! per interval however many waits find it in `MissingInfo`, on every instance.

use sqlx::Row;

use crate::store::{Store, StoreError};

/// Whose turn it is to send a request's missing-info mail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailTurn {
    /// The caller's: it sends the mail, and gives the turn back
    /// ([`Store::missing_info_mail_unsent`]) when the mail could not leave.
    Taken,
    /// Nobody's: the mail left at this moment (milliseconds), within the interval.
    SentAt(i64),
}

impl Store {
    /// Takes the turn of `financing_id`'s mail (its id in any case) at `now` when its mail last
    /// left `interval_ms` or longer ago, or never; else says when it left.
    pub async fn missing_info_mail_turn(
        &self,
        financing_id: &str,
        now: i64,
        interval_ms: i64,
    ) -> Result<MailTurn, StoreError> {
        let key = financing_id.to_ascii_lowercase();
        // A turn given back between the two statements is taken at the next try.
        for _ in 0..3 {
            let taken = sqlx::query(
                "INSERT INTO leasing_missing_info_mails (financing_id, sent_at) VALUES ($1, $2) \
                 ON CONFLICT (financing_id) DO UPDATE SET sent_at = excluded.sent_at \
                 WHERE leasing_missing_info_mails.sent_at <= $3",
            )
            .bind(&key)
            .bind(now)
            .bind(now.saturating_sub(interval_ms))
            .execute(self.pool())
            .await?;
            if taken.rows_affected() == 1 {
                return Ok(MailTurn::Taken);
            }
            let sent = sqlx::query("SELECT sent_at FROM leasing_missing_info_mails WHERE financing_id = $1")
                .bind(&key)
                .fetch_optional(self.pool())
                .await?;
            if let Some(row) = sent {
                return Ok(MailTurn::SentAt(row.try_get("sent_at")?));
            }
        }
        Ok(MailTurn::SentAt(now))
    }

    /// Gives back the turn taken at `taken_at` for a mail that did not leave, so that the next
    /// wait sends it.
    pub async fn missing_info_mail_unsent(&self, financing_id: &str, taken_at: i64) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM leasing_missing_info_mails WHERE financing_id = $1 AND sent_at = $2")
            .bind(financing_id.to_ascii_lowercase())
            .bind(taken_at)
            .execute(self.pool())
            .await?;
        Ok(())
    }
}
