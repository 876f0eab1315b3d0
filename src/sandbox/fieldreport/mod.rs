//! The field-report simulator: OData at `/odata/<Set>` with HTTP Basic, `<Set>(<Id>L)` keys,
//! ids assigned on create, 409 on a stale `Version` (an update must carry the stored version
//! plus one), `DateModified` set on every write, paging with `$top`/`$skip` and
//! `@odata.nextLink` by position (`$skip`; server page size 100), `$filter` (comparisons joined
//! by `and`/`or`, see [`super::odata_filter`]), `$orderby=DateModified[,Id]` (else Id order),
//! `$expand` (navigation properties are served only when expanded), `$select`, `<Set>/$count`
//! (with `$filter`), and `$metadata`
//! served from `spec/upstream/fieldreport/metadata.xml`.
//!
//! For tests, what a real upstream does to a sync: `GET /__sandbox/received` lists the writes it
//! received (method, path, body; the newest 10,000); `POST /__sandbox/seed {set, count}` creates
//! generated records; `POST /__sandbox/behaviour {stamps, stamp_literals}` stamps in whole
//! seconds, or accepts a `$filter`'s stamps only bare (as OData v4) or typed (as v3, the
//! description's form and the default);
//! `POST /__sandbox/during-list {set, after_pages, touch}` has another client change records
//! while a sync pages; `POST /__sandbox/late {set, ago_seconds | at_newest, id?}` commits a
//! change stamped in the past; slow pages are a fault with a 2xx status and a delay.

mod controls;
mod odata;
mod server;
mod sets;
mod state;

pub use self::server::{PASSWORD, USERNAME, start};
