//! What can go wrong with a mail: its template, its addresses, its delivery, `MAIL_URL`.

use crate::file_storage::StorageError;

#[derive(Debug, thiserror::Error)]
pub enum MailError {
    #[error("mail template {0:?} not found")]
    TemplateMissing(String),
    #[error("mail template {name:?} does not render: {detail}")]
    Template { name: String, detail: String },
    /// The template could not be loaded (e.g. the ERP is unreachable).
    #[error("{0}")]
    Source(String),
    #[error("no recipient for the mail")]
    NoRecipient,
    #[error("bad address {0:?}")]
    Address(String),
    #[error("mail could not be built: {0}")]
    Build(String),
    #[error("mail could not be delivered: {0}")]
    Delivery(String),
    #[error("MAIL_URL: {0}")]
    Config(String),
}

impl From<StorageError> for MailError {
    fn from(e: StorageError) -> Self {
        MailError::Delivery(e.to_string())
    }
}
