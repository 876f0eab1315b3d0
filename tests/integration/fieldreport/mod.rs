//! The field-report area (`src/fieldreport/`, `api/fieldreport/`): the per-entity routes, sync
//! and push, the change feed, reading back by key, and convergence under any history.

mod entities;
mod feed;
mod feed_durable;
mod feed_live;
mod feed_locks;
mod feed_positions;
mod feed_restore;
mod histories;
mod other_upstreams;
mod push;
mod read_back;
mod sync;
mod sync_timing;
