//! The leasing area's tables: the one-shot flows, the watcher's tables and who created each
//! watched financing request.

pub mod flows;
pub mod owners;
pub mod watch;
