//! The ERP area's routes: webhooks, the mirror and its pulls, the ERP → field-report posts,
//! and the change feed.

pub mod feed;
pub mod mirror;
