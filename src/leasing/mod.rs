//! The leasing area: financing requests at the leasing provider, free of HTTP types.

pub mod calculation;
