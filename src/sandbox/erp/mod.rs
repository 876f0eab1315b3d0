//! The ERP simulator, in the style of weclapp REST API v1 under [`API_ROOT`].
//!
//! Every call needs the header `AuthenticationToken: <API_KEY>` (else 401). Every entity of
//! `generated::erp::MODELS` is served (any other name is 404): `GET /<m>` → `{result: [...]}`,
//! `GET /<m>/count` → `{result: n}`, `GET /<m>/id/{id}` → the bare entity, `POST /<m>` → 201,
//! `PUT /<m>/id/{id}` → 200, `DELETE /<m>/id/{id}` → 204. Records are JSON objects; a create
//! assigns `id` (digits, increasing), `version` ("0") and `createdDate`/`lastModifiedDate`
//! (epoch milliseconds, `lastModifiedDate` strictly increasing over every write). A PUT
//! replaces the entity, or with `ignoreMissingProperties=true` only the given top-level
//! fields; a `version` in its body that differs from the stored one is a 409
//! `optimistic_lock`; a successful PUT counts `version` up by one.
//!
//! Lists take `page` (from 1), `pageSize` (default 100, at most 1000), `sort` (`field`,
//! `-field`, comma-separated; default by id) and filters on top-level properties
//! `<property>-<op>=value` with ops eq, ne, gt, ge, lt, le, in/notin (comma-separated or a
//! JSON array), like/ilike (`%` wildcard), null, notnull; values compare as numbers when both
//! sides are numbers, else as text. Other query names are ignored. Errors are problem JSON
//! `{type, title, status, detail, validationErrors}`, also for injected faults without a body.
//!
//! Webhooks: a `webhook` record `{entityName, atCreate, atUpdate, atDelete, requestMethod, url}`
//! makes every matching write through the API (not seeding) call `url` in the background:
//! `GET url?…&entityName=…&entityId=…&type=created|updated|deleted`, or `POST url` with the JSON
//! `{entityName, entityId, type}`.
//!
//! Seeded at start: the mail template `leasing-missing-info`, the customer attribute
//! definitions `fieldReportId` and `serviceLevel`, a unit, three customers, contacts and
//! articles.
//!
//! For tests (no authentication): `GET /__sandbox/received` lists every write received
//! (`{method, path, query, body}`); `GET /__sandbox/webhook-calls` lists the webhook calls made
//! (`{url, method, entityName, entityId, type, status}`, status 0 when the call failed);
//! `POST /__sandbox/seed {model, records: [...]}` inserts records as given (keeping a given
//! `id`) and `{model, count}` generates records, both without webhooks;
//! `POST /__sandbox/behaviour {"most_per_page": n}` serves at most `n` records a page whatever
//! `pageSize` asks (`null`: as asked), `{"sort": "ignored"}` lists in id order whatever `sort`
//! asks (`"by-change"`: in the order of their last writes; `"honoured"`, the default: as
//! asked), `{"clock_offset_ms": n}` stamps writes `n` ms
//! ahead of now (0, the default: a right clock; set back, the stamps go back too).

mod api;
mod query;
mod seed;
mod server;
mod state;
#[cfg(test)]
mod tests;
mod webhooks;

pub use self::api::{API_KEY, API_ROOT};
pub use self::seed::MAIL_TEMPLATE;
pub use self::server::start;
