//! The integration tests, one binary with a folder per area, as in src/: each test starts the
//! real service (in this process, or the built binary as a process of its own where a test kills
//! it or runs its command line) against the upstream simulators, and talks to it over HTTP. One
//! binary links the service once instead of once per area; `cargo test --test integration
//! <area>::` runs one area. Shared fixtures live in [`common`].

#[macro_use]
mod common;

mod edge;
mod erp;
mod fieldreport;
mod leasing;
mod operations;
