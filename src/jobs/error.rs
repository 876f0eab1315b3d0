//! What can go wrong with a job request: invalid input (by field), an unknown job, a job of
//! the same kind and target still active, a cancel of an ended job, the database.

use crate::store::StoreError;
use crate::vocabulary::field_errors::FieldErrors;

#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("{}", crate::vocabulary::field_errors::describe(.0))]
    Invalid(FieldErrors),
    #[error("no job {0}")]
    NotFound(i64),
    /// A cancel by a user who neither queued the job nor is an operator.
    #[error("job {0} was queued by another user; only they or an operator may cancel it")]
    NotYours(i64),
    /// A job of the same kind and target is queued or running.
    #[error("job {id} ({kind}{of}) is {status}; follow it at /api/v1/jobs/{id} or cancel it first", of = of_target(.target))]
    Active { id: i64, kind: String, target: String, status: String },
    /// The user has as many jobs queued or running as they may.
    #[error("you have {0} jobs queued or running, the most a user may have; wait for one to end")]
    TooManyActive(u64),
    /// The user queued as many jobs within the last minute as they may.
    #[error("you queued {most} jobs within a minute, the most a user may; retry in {retry_after_seconds} s")]
    TooFast { most: u64, retry_after_seconds: u64 },
    /// Cancel of a job that has already ended.
    #[error("job {id} has already ended ({status})")]
    Ended { id: i64, status: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// ` of <target>`, or nothing for every target.
fn of_target(target: &str) -> String {
    if target.is_empty() { String::new() } else { format!(" of {target}") }
}

impl JobError {
    /// One line for the command line: the messages of an invalid field rather than the
    /// summary the API answers beside them.
    pub fn explained(&self) -> String {
        match self {
            JobError::Invalid(errors) => errors
                .iter()
                .map(|(field, messages)| format!("{field}: {}", messages.join("; ")))
                .collect::<Vec<_>>()
                .join("; "),
            other => other.to_string(),
        }
    }
}

pub(crate) fn invalid(field: &str, message: impl Into<String>) -> JobError {
    JobError::Invalid(FieldErrors::from([(field.to_string(), vec![message.into()])]))
}
