//! The leasing area's tables: the one-shot flows, when each request's missing-info mail last
//! left, the watcher's tables and who created each watched financing request.

pub mod flows;
pub mod mails;
pub mod owners;
pub mod watch;
