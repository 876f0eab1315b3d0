//! What the routes of every area share and no route of its own: the request context and the
//! API's settings, the bearer-token guard, `Idempotency-Key`, held calls and exports per user,
//! query flags, paging, the change feeds' wire, the documented answers, and the OpenAPI
//! document built from the description.

pub mod answers;
pub mod config;
pub mod context;
pub mod documented;
pub mod feed;
pub mod guard;
pub mod held_calls;
pub mod idempotency;
pub mod openapi;
pub mod paging;
pub mod per_user;
pub mod query_flag;
