//! The auth area's tables: users, personal access tokens and failed logins.

pub mod login_failures;
pub mod tokens;
pub mod users;
