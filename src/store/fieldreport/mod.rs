//! The field-report mirror's tables: its records, a sync's pages and state, tombstones,
//! unsettled forwarded writes and what a reconciling sync reads.

pub mod deletes;
pub mod reconcile;
pub mod records;
pub mod sync;
pub mod unsettled;
