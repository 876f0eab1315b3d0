//! The leasing area: financing requests at the leasing provider, free of HTTP types.

pub mod calculation;
pub mod flow;
pub mod id;
pub mod missing_info;
pub mod payload;
pub mod service;
pub mod state;
pub mod watch;
