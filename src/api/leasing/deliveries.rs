//! A leasing subscription's deliveries: each event sent (or to be sent) to it, listed newest
//! first (by key, or by position for existing callers), and sent again on request.

use dropshot::{HttpResponseAccepted, HttpResponseOk, Path, Query, RequestContext};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::watch::{SubscriptionPath, authorize, time};
use crate::api::ApiContext;
use crate::api::support::guard::{BearerToken, needs};
use crate::api::support::paging::{Cursor, CursorParam, checked_key_limit, key_rows};
use crate::error::ApiError;
use crate::store::leasing::watch::DeliveryRow;

/// Deliveries listed at most, a page.
const MAX_DELIVERIES: u32 = 500;

#[derive(Deserialize, JsonSchema)]
pub struct DeliveryPath {
    /// The subscription's id (`sub_…`).
    pub id: String,
    /// The delivery's id.
    pub delivery: i64,
}

#[derive(Deserialize, JsonSchema)]
pub struct DeliveriesQuery {
    /// Read by key: the deliveries older than this cursor (a `next_cursor` answered before);
    /// from the newest without it.
    pub after: Option<CursorParam>,
    /// How many deliveries a page, newest first (1 to 500; default 100).
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
    /// Read by position (the slower way: a page costs what it skips): which page of `limit`
    /// deliveries, from 1 (the newest). Without it (and with `after`) the list is read by key.
    #[schemars(range(min = 1))]
    pub page: Option<u32>,
}

/// One event sent to one subscription.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Delivery {
    pub id: i64,
    /// The event's id, sent as `webhook-id` on every attempt.
    pub event_id: String,
    pub financing_id: String,
    /// `pending` (not delivered yet; retried at `next_attempt_at`), `delivered` (a 2xx) or
    /// `failed` (not delivered within the retry horizon, or the subscription was disabled).
    #[schemars(schema_with = "crate::vocabulary::closed_set::of::delivery_status")]
    pub status: String,
    pub attempts: i64,
    /// The receiver's status code at the last attempt (null: no answer).
    pub last_status_code: Option<i64>,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    pub next_attempt_at: Option<String>,
    pub created_at: String,
    pub last_attempt_at: Option<String>,
    pub finished_at: Option<String>,
}

impl From<DeliveryRow> for Delivery {
    fn from(row: DeliveryRow) -> Self {
        Delivery {
            next_attempt_at: row.next_attempt_at.filter(|_| row.status == "pending").map(time),
            id: row.id,
            event_id: row.event_id,
            financing_id: row.financing_id,
            status: row.status,
            attempts: row.attempts,
            last_status_code: row.last_status_code,
            last_error: row.last_error,
            created_at: time(row.created_at),
            last_attempt_at: row.last_attempt_at.map(time),
            finished_at: row.finished_at.map(time),
        }
    }
}

/// A page of a subscription's deliveries, newest first. Read by key (without `page`) it has
/// `next_cursor` and `next` while older deliveries follow this page, and neither on the last.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct DeliveryList {
    pub items: Vec<Delivery>,
    /// Read by key: the cursor to pass as `after` for the next page, while deliveries follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// Read by key: the path and query that read the next page, while deliveries follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// List a subscription's deliveries
///
/// The newest deliveries first, `limit` (1 to 500, default 100) a page: each event sent (or
/// to be sent) to this subscription, with its attempts, the last answer's status code or
/// error, and the next attempt. Read by key (without `page`): the deliveries older than the
/// cursor `after` (from the newest without it), answered with `next_cursor` and the `next`
/// link while older ones follow; a page costs the same at any depth, and a delivery made
/// meanwhile shifts no other. Read by position (kept for existing callers): `page` 2 holds the
/// next older ones after page 1. 422 when `limit` is not from 1 to 500 or `page` is 0.
#[dropshot::endpoint {
    method = GET,
    path = "/api/v1/leasing/subscriptions/{id}/deliveries",
    tags = ["leasing"],
}]
pub async fn leasing_subscription_deliveries(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<SubscriptionPath>,
    query: Query<DeliveriesQuery>,
) -> Result<HttpResponseOk<DeliveryList>, ApiError> {
    let viewer = authorize(&rqctx, &token).await?;
    let query = query.into_inner();
    let (limit, page) = (query.limit.unwrap_or(100), query.page.unwrap_or(1));
    let mut errors = checked_key_limit(query.limit, 100, MAX_DELIVERIES).err().unwrap_or_default();
    if page == 0 {
        errors.insert("page".into(), vec!["The page is at least 1.".into()]);
    }
    if !errors.is_empty() {
        return Err(ApiError::validation(errors).leasing());
    }
    let id = path.into_inner().id;
    let watcher = rqctx.context().leasing.watcher();
    if query.page.is_some() && query.after.is_none() {
        let rows = watcher.deliveries(viewer, &id, limit, page).await?;
        let items = rows.into_iter().map(Delivery::from).collect();
        return Ok(HttpResponseOk(DeliveryList { items, next_cursor: None, next: None }));
    }
    // A cursor that spells no delivery id reads from the newest.
    let before = query.after.map(CursorParam::key).transpose().map_err(ApiError::leasing)?;
    let before = before.and_then(|key| key.parse::<i64>().ok());
    let rows = watcher.deliveries_before(viewer, &id, before, limit + 1).await?;
    let (rows, next) = key_rows(rows, limit, rqctx.request.uri(), query.limit, |row| row.id.to_string());
    let items = rows.into_iter().map(Delivery::from).collect();
    Ok(HttpResponseOk(DeliveryList { items, next_cursor: next.cursor, next: next.link }))
}

/// Send a delivery again
///
/// Queues the delivery to be sent now, whatever became of it (delivered, failed or still
/// pending), with the same `webhook-id`. The answer is the delivery as queued; follow it in
/// the deliveries list. A user may ask for `LEASING_DELIVERY_RETRIES_PER_MINUTE_PER_USER` (60)
/// a minute; more are answered 429 `too_many_delivery_retries` with `Retry-After`.
#[dropshot::endpoint {
    method = POST,
    path = "/api/v1/leasing/subscriptions/{id}/deliveries/{delivery}/retry",
    tags = ["leasing"],
}]
pub async fn leasing_subscription_delivery_retry(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<DeliveryPath>,
) -> Result<HttpResponseAccepted<Delivery>, ApiError> {
    let viewer = authorize(&rqctx, &token).await?;
    let path = path.into_inner();
    let row = rqctx.context().leasing.watcher().retry_delivery(viewer, &path.id, path.delivery).await?;
    Ok(HttpResponseAccepted(row.into()))
}
