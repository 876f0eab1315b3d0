//! The leasing state watcher's routes: subscriptions to state changes (their secrets shown
//! once), their deliveries, and watching a request created elsewhere. The watching and
//! delivering is [`crate::leasing::watch`]'s; the event is described by
//! [`super::event::LeasingStateChangedEvent`], a schema of the document.

use dropshot::{HttpResponseCreated, HttpResponseDeleted, HttpResponseOk, Path, Query, RequestContext, TypedBody};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::api::ApiContext;
use crate::api::leasing::owner::FinancingIdPath;
use crate::api::support::guard::{BearerToken, needs};
use crate::api::support::paging::{Cursor, CursorParam, PageMeta, PageQuery};
use crate::error::ApiError;
use crate::leasing::watch::WatchError;
use crate::leasing::watch::subscriptions::{SubscriptionRequest, WithSecret};
use crate::store::leasing::watch::{SubscriptionRow, Viewer, WatchRow};
use crate::vocabulary::key_page::StampedKey;

/// Subscriptions listed at most, a page.
const MAX_SUBSCRIPTIONS_PER_PAGE: u32 = 100;

/// An epoch-ms time as RFC 3339.
pub(super) fn time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A subscription to be created.
#[derive(Deserialize, JsonSchema)]
#[schemars(example = "SubscriptionCreate::example")]
pub struct SubscriptionCreate {
    /// Where the events are posted: `https`, and a public address (loopback, private,
    /// link-local and unique-local addresses, and `http`, only with `CALLBACK_ALLOW_PRIVATE`).
    /// Redirects are not followed. At most 2,048 characters.
    #[schemars(length(max = 2048))]
    pub url: String,
    /// A note for people (at most 500 characters).
    #[serde(default)]
    #[schemars(length(max = 500))]
    pub description: Option<String>,
    /// The event types to send, at least one (default: every type, i.e. `leasing.state_changed`).
    #[serde(default)]
    #[schemars(schema_with = "event_types_schema")]
    pub events: Option<Vec<String>>,
    /// The events of every financing request, not only of those the caller created: for
    /// operators only (422 otherwise). Default false.
    #[serde(default)]
    pub all_requests: bool,
}

/// The event types a subscription names: the known ones, at least one, or null for every one.
fn event_types_schema(_: &mut schemars::r#gen::SchemaGenerator) -> schemars::schema::Schema {
    let types = crate::leasing::watch::event::EVENT_TYPES;
    serde_json::from_value(json!({
        "type": "array", "nullable": true, "minItems": 1,
        "items": {"type": "string", "enum": types, "description": "An event type: `leasing.state_changed`, a financing request's state changed."}
    }))
    .expect("a valid schema")
}

impl SubscriptionCreate {
    fn example() -> Value {
        json!({"url": "https://shop.example/hooks/leasing", "description": "shop backend", "events": ["leasing.state_changed"]})
    }
}

/// A subscription to the leasing state events. Each event is posted as JSON (its shape:
/// the schema `LeasingStateChangedEvent`) with the Standard Webhooks headers `webhook-id`
/// (the event's id, the same on every retry), `webhook-timestamp` (Unix seconds) and
/// `webhook-signature` (`v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, keyed with the
/// base64-decoded secret after `whsec_`; after a rotation, two signatures, space separated).
#[derive(Serialize, Deserialize, JsonSchema)]
#[schemars(example = "Subscription::example")]
pub struct Subscription {
    pub id: String,
    pub url: String,
    pub description: Option<String>,
    pub events: Vec<String>,
    pub created_at: String,
    /// `active`, or `disabled`: after five days of failing deliveries, or at once when its
    /// receiver answers 410 Gone.
    #[schemars(schema_with = "crate::vocabulary::closed_set::of::subscription_status")]
    pub status: String,
    /// Since when its deliveries fail (null once one succeeds).
    pub failing_since: Option<String>,
    pub disabled_at: Option<String>,
    /// Until when the secret before the last rotation still signs.
    pub previous_secret_expires_at: Option<String>,
    /// Whether it receives the events of every financing request (an operator's choice), or
    /// only of those its owner created.
    pub all_requests: bool,
}

impl Subscription {
    fn example() -> Value {
        json!({"id": "sub_6f1c2a7b9d8e4f0a8b7c6d5e4f3a2b1c", "url": "https://shop.example/hooks/leasing",
               "description": "shop backend", "events": ["leasing.state_changed"],
               "created_at": "2026-11-27T10:00:00.000Z", "status": "active", "failing_since": null,
               "disabled_at": null, "previous_secret_expires_at": null, "all_requests": false})
    }
}

impl From<SubscriptionRow> for Subscription {
    fn from(row: SubscriptionRow) -> Self {
        Subscription {
            status: if row.disabled_at.is_some() { "disabled" } else { "active" }.into(),
            id: row.id,
            url: row.url,
            description: row.description,
            events: row.events,
            created_at: time(row.created_at),
            failing_since: row.failing_since.map(time),
            disabled_at: row.disabled_at.map(time),
            previous_secret_expires_at: row.previous_secret_until.filter(|t| *t > crate::store::now_ms()).map(time),
            all_requests: row.all_requests,
        }
    }
}

/// A subscription with its signing secret: shown in this answer only.
#[derive(Serialize, Deserialize)]
pub struct SubscriptionWithSecret {
    #[serde(flatten)]
    pub subscription: Subscription,
    /// The signing secret, `whsec_<base64>`: keep it; no later answer shows it.
    pub secret: String,
}

/// The derived schema with an example of its own: flattening `Subscription` would bring that
/// one's, which lacks the required `secret`.
impl JsonSchema for SubscriptionWithSecret {
    fn schema_name() -> String {
        "SubscriptionWithSecret".into()
    }
    fn json_schema(generator: &mut schemars::r#gen::SchemaGenerator) -> schemars::schema::Schema {
        /// A subscription with its signing secret: shown in this answer only.
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct SubscriptionWithSecret {
            #[serde(flatten)]
            subscription: Subscription,
            /// The signing secret, `whsec_<base64>`: keep it; no later answer shows it.
            secret: String,
        }
        let mut schema = SubscriptionWithSecret::json_schema(generator).into_object();
        let mut example = Subscription::example();
        example["secret"] = json!("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        schema.extensions.remove("example");
        schema.metadata().examples = vec![example];
        schema.into()
    }
}

impl From<WithSecret> for SubscriptionWithSecret {
    fn from(created: WithSecret) -> Self {
        SubscriptionWithSecret { subscription: created.subscription.into(), secret: created.secret }
    }
}

/// A page of the caller's subscriptions, oldest first. Read by position (`page`,
/// `per_page`) it has `meta`, with the count; read by key (`after`, `limit`) it has
/// `next_cursor` and `next` while subscriptions follow this page, and neither on the last page.
#[derive(Serialize, JsonSchema)]
pub struct SubscriptionList {
    pub items: Vec<Subscription>,
    /// Read by position: the paging and the count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta: Option<PageMeta>,
    /// Read by key: the cursor to pass as `after` for the next page, while subscriptions follow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// Read by key: the path and query that read the next page, while subscriptions follow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
pub struct SubscriptionsQuery {
    /// Read by key: the subscriptions after this cursor (a `next_cursor` answered before);
    /// from the oldest without it. With `after` or `limit` the page has no `meta` (no count).
    pub after: Option<CursorParam>,
    /// Read by key: subscriptions per page, 1 to 100 (default 50).
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
    /// Read by position: page number, from 1 (default 1). Ignored with `after` or `limit`.
    #[schemars(range(min = 1))]
    pub page: Option<u32>,
    /// Read by position: subscriptions per page, 1 to 100 (default 50).
    #[schemars(range(min = 1, max = 100))]
    pub per_page: Option<u32>,
}

#[derive(Deserialize, JsonSchema)]
pub struct SubscriptionPath {
    /// The subscription's id (`sub_…`).
    pub id: String,
}

/// A watched financing request.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Watch {
    #[serde(rename = "financingId")]
    pub financing_id: String,
    #[serde(rename = "requestId")]
    pub request_id: Option<String>,
    /// The state last read.
    pub state: String,
    /// Whether the state is terminal: then the request is no longer read.
    pub terminal: bool,
    /// When it is read next (null once terminal, or once the provider has answered 404 or 410
    /// for `LEASING_WATCH_GONE_SECONDS`).
    pub next_poll_at: Option<String>,
}

impl From<WatchRow> for Watch {
    fn from(row: WatchRow) -> Self {
        Watch {
            financing_id: row.financing_id,
            request_id: row.request_id,
            state: row.state,
            terminal: row.terminal,
            next_poll_at: row.next_poll_at.map(time),
        }
    }
}

/// The caller, as the one whose subscriptions the route may see: their own, and an
/// operator's also those made before subscriptions had owners.
pub(super) async fn authorize(
    rqctx: &RequestContext<ApiContext>,
    token: &BearerToken<needs::Leasing>,
) -> Result<Viewer, ApiError> {
    let caller = token.caller(rqctx).await.map_err(ApiError::leasing)?;
    Ok(Viewer { user_id: caller.user.id, operator: caller.user.operator })
}

/// Subscribe to leasing state changes
///
/// Creates a subscription: every observed state change of a watched financing request is
/// posted to `url` as a `LeasingStateChangedEvent`, signed per Standard Webhooks (see the
/// `Subscription` schema), delivered at least once and in order per financing request. A 2xx
/// answer within 10 s ends a delivery; anything else is retried with exponential back-off
/// for up to 24 h (`LEASING_DELIVERY_RETRY_SECONDS`), with the same `webhook-id`. The answer
/// holds the signing `secret`, shown this once. A `url` that is not `https` or resolves to
/// a loopback, private, link-local or unique-local address is refused (422) unless
/// `CALLBACK_ALLOW_PRIVATE` is set, as is a `url` over 2,048 characters; a user has at most
/// `LEASING_SUBSCRIPTIONS_PER_USER` subscriptions (409 `too_many_subscriptions` beyond). The
/// subscription is the caller's: it receives the events
/// of the financing requests the caller created through the service (every request with
/// `all_requests`, which only operators may set), and no other user sees it (404).
#[dropshot::endpoint { method = POST, path = "/api/v1/leasing/subscriptions", tags = ["leasing"] }]
pub async fn leasing_subscription_create(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    body: TypedBody<SubscriptionCreate>,
) -> Result<HttpResponseCreated<SubscriptionWithSecret>, ApiError> {
    let viewer = authorize(&rqctx, &token).await?;
    let body = body.into_inner();
    let request = SubscriptionRequest {
        url: body.url,
        description: body.description,
        events: body.events,
        all_requests: body.all_requests,
    };
    let created = rqctx.context().leasing.watcher().subscribe(viewer, request).await?;
    Ok(HttpResponseCreated(created.into()))
}

/// List the subscriptions
///
/// The caller's subscriptions, oldest first, without secrets; an operator's list also holds
/// those made before subscriptions had owners. Read by key: `limit` (1 to 100, default 50)
/// subscriptions after the cursor `after` (from the oldest without it), answered with
/// `next_cursor` and the `next` link while more follow, and no count; one added or deleted
/// meanwhile makes no other skip or repeat. Read by position (kept for existing callers):
/// page `page` of `per_page` (1 to 100, default 50), with the count in `meta`. 422 when
/// `limit`, `page` or `per_page` is out of range.
#[dropshot::endpoint { method = GET, path = "/api/v1/leasing/subscriptions", tags = ["leasing"] }]
pub async fn leasing_subscription_list(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    query: Query<SubscriptionsQuery>,
) -> Result<HttpResponseOk<SubscriptionList>, ApiError> {
    let viewer = authorize(&rqctx, &token).await?;
    let query = query.into_inner();
    let paging = PageQuery { after: query.after, limit: query.limit, page: query.page, per_page: query.per_page };
    let watcher = rqctx.context().leasing.watcher();
    let page = paging
        .read(
            50,
            MAX_SUBSCRIPTIONS_PER_PAGE,
            rqctx.request.uri(),
            |after, limit| async move { watcher.subscriptions_after(viewer, after.as_deref(), limit + 1).await },
            |page, per_page| watcher.subscriptions(viewer, page, per_page),
            |row| StampedKey::new(row.created_at, &row.id).text(),
        )
        .await
        .map_err(ApiError::leasing)?;
    let items = page.rows.into_iter().map(Subscription::from).collect();
    Ok(HttpResponseOk(SubscriptionList { items, meta: page.meta, next_cursor: page.next.cursor, next: page.next.link }))
}

/// Read a subscription
///
/// The subscription, without its secret.
#[dropshot::endpoint { method = GET, path = "/api/v1/leasing/subscriptions/{id}", tags = ["leasing"] }]
pub async fn leasing_subscription_show(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<SubscriptionPath>,
) -> Result<HttpResponseOk<Subscription>, ApiError> {
    let viewer = authorize(&rqctx, &token).await?;
    let row = rqctx.context().leasing.watcher().subscription(viewer, &path.into_inner().id).await?;
    Ok(HttpResponseOk(row.into()))
}

/// Delete a subscription
///
/// Deletes the subscription and its deliveries; pending ones are not sent.
#[dropshot::endpoint { method = DELETE, path = "/api/v1/leasing/subscriptions/{id}", tags = ["leasing"] }]
pub async fn leasing_subscription_delete(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<SubscriptionPath>,
) -> Result<HttpResponseDeleted, ApiError> {
    let viewer = authorize(&rqctx, &token).await?;
    rqctx.context().leasing.watcher().unsubscribe(viewer, &path.into_inner().id).await?;
    Ok(HttpResponseDeleted())
}

/// Rotate a subscription's secret
///
/// Makes a new signing secret, shown in this answer only. The old one keeps signing beside it
/// for 24 h (`previous_secret_expires_at`): each delivery then carries two signatures in
/// `webhook-signature`, space separated, so that a receiver can switch at its own pace.
#[dropshot::endpoint {
    method = POST,
    path = "/api/v1/leasing/subscriptions/{id}/rotate-secret",
    tags = ["leasing"],
}]
pub async fn leasing_subscription_rotate_secret(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<SubscriptionPath>,
) -> Result<HttpResponseOk<SubscriptionWithSecret>, ApiError> {
    let viewer = authorize(&rqctx, &token).await?;
    let rotated = rqctx.context().leasing.watcher().rotate_secret(viewer, &path.into_inner().id).await?;
    Ok(HttpResponseOk(rotated.into()))
}

/// Watch a financing request
///
/// Starts watching a request created elsewhere (those created through this service are
/// watched from their creation): reads its state now, then every
/// `LEASING_WATCH_INTERVAL_SECONDS` until it is terminal, and sends each change to the
/// subscriptions. Watching a watched request changes nothing. The answer is the watch.
#[dropshot::endpoint { method = POST, path = "/api/v1/leasing/{financingId}/watch", tags = ["leasing"] }]
pub async fn leasing_watch(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<FinancingIdPath>,
) -> Result<HttpResponseOk<Watch>, ApiError> {
    let (caller, id) = crate::api::leasing::owner::reach(&rqctx, &token, path).await?;
    let leasing = &rqctx.context().leasing;
    let (request, read_at) = leasing.read_to_watch(&id).await?;
    let row = leasing.watcher().start(&id, &request, read_at, caller.user.id).await.map_err(WatchError::Store)?;
    Ok(HttpResponseOk(row.into()))
}
