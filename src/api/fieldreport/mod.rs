//! The field-report area's routes: the per-entity endpoints of every mirrored set, the tool
//! routes (show, sync, setup, post) and the change feeds.

pub mod entities;
pub mod feed;
pub mod tools;
