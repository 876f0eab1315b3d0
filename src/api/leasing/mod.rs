//! The leasing area's routes: financing requests, the one-shot request flow and the
//! calculations, the watcher's subscriptions, and the schemas they share.

pub mod owner;
pub mod requests;
pub mod schema;
pub mod watch;
