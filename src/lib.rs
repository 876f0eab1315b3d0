//! integration-service: one authenticated, documented HTTP API in front of a leasing
//! provider, a field-report system and a cloud ERP.
//!
//! Layout (see docs/architecture.md, "Layers"): `api` holds the dropshot API and its handlers,
//! `auth` and the other areas hold domain logic free of HTTP types, `store` holds every SQL
//! statement, `front` is the thin HTTP layer before dropshot, `server` assembles them.
//! `vocabulary` holds the small types several areas share; it imports none of them.

// dropshot takes handler errors by value, and `ApiError` carries its whole body; errors are
// the cold path, so their size is not worth boxing every handler's result for.
#![allow(clippy::result_large_err)]

pub mod api;
pub mod assembly;
pub mod auth;
pub mod background;
pub mod cli;
pub mod config;
pub mod digest;
pub mod erp;
pub mod error;
pub mod feed;
pub mod fieldreport;
pub mod file_storage;
pub mod front;
pub mod jobs;
pub mod leasing;
pub mod mail;
pub mod metrics;
pub mod sandbox;
pub mod server;
pub mod stop;
pub mod store;
pub mod telemetry;
pub mod typed;
pub mod upstream;
pub mod vocabulary;

/// The Rust examples of docs/clients.md, compiled as doc tests so that they keep matching the
/// generated client. (The recipes of docs/adding-a-route.md use the crate's private modules and
/// cannot be doc tests; `cargo xtask check` checks the names they use.)
#[cfg(doctest)]
#[doc = include_str!("../docs/clients.md")]
pub struct ClientsDoc;
