//! The field-report area: a local mirror of 15 entity types, written through to the upstream.

pub mod identity;
pub mod key_pages;
pub mod merge;
mod page;
pub mod push;
pub mod reconcile;
pub mod reconcile_report;
pub mod service;
mod settle;
pub mod stages;
pub mod sync;
mod upstream_ids;
