//! The integration tests, one binary with a module per area: each starts the real service (in
//! this process, or the built binary as a process of its own where a test kills it or runs its
//! command line) against the upstream simulators, and talks to it over HTTP. One binary links
//! the service once instead of once per area; `cargo test --test integration <area>::` runs
//! one area. Shared fixtures live in [`common`].

#[macro_use]
mod common;

mod abuse;
mod auth;
mod backup;
mod cli;
mod client;
mod crash;
mod cursor_lists;
mod database_outage;
mod docs_page;
mod erp;
mod erp_webhooks;
mod examples;
mod feed;
mod fieldreport;
mod fieldreport_push;
mod fieldreport_sync;
mod generated_clients;
mod histories;
mod http;
mod idempotency_keys;
mod jobs;
mod leasing;
mod leasing_calculate;
mod leasing_flow;
mod leasing_mtls;
mod leasing_owners;
mod leasing_watch;
mod mail_smtp;
mod metrics;
mod metrics_size;
mod operator_files;
mod oversized_heads;
mod python_client;
mod read_back;
mod readme_tour;
mod sandbox;
mod sandbox_erp;
mod storage_s3;
mod sync_timing;
mod tls;
mod tokens;
mod upstream_faults;
