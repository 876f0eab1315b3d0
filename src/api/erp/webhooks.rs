//! The ERP's webhooks: the receiver of its GET and POST calls, stored in the inbox.

use async_trait::async_trait;
use dropshot::{
    ApiEndpointBodyContentType, ExtractorMetadata, Header, HttpError, HttpResponseAccepted, Query, RequestContext,
    ServerContext, SharedExtractor, TypedBody,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::api::ApiContext;
use crate::api::support::documented::Documented;
use crate::api::support::guard::client_address;
use crate::erp::webhook::{self, WebhookRefusal};
use crate::erp::{ErpError, ErpService};
use crate::error::ApiError;

/// The header that may carry the webhook secret (else `?secret=`).
pub const SECRET_HEADER: &str = "x-webhook-secret";

/// The webhook secret as a caller may send it in a header, declared in the document so that a
/// generated client can send it.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct SecretHeaderParameter {
    /// The webhook secret, for callers that send it as a header rather than in the URL
    /// (`?secret=`); when both are sent, the header counts.
    #[serde(rename = "x-webhook-secret")]
    secret: Option<String>,
}

/// The `X-Webhook-Secret` header of a call. A value that is not visible ASCII counts as absent
/// (the call is then refused as one without the secret, 401), as before it was declared.
pub struct SecretHeader(Option<String>);

#[async_trait]
impl SharedExtractor for SecretHeader {
    async fn from_request<Context: ServerContext>(rqctx: &RequestContext<Context>) -> Result<Self, HttpError> {
        let value = rqctx.request.headers().get(SECRET_HEADER).and_then(|v| v.to_str().ok());
        Ok(SecretHeader(value.map(str::to_string)))
    }

    fn metadata(body_content_type: ApiEndpointBodyContentType) -> ExtractorMetadata {
        <Header<SecretHeaderParameter> as SharedExtractor>::metadata(body_content_type)
    }
}

/// The query of a POST webhook call: only the secret (the call itself is in the body).
#[derive(Deserialize, JsonSchema)]
pub struct WebhookSecretQuery {
    /// The webhook secret, when it is part of the URL registered at the ERP.
    pub secret: Option<String>,
}

/// A webhook call as the ERP sends it with GET, and the secret.
#[derive(Deserialize, JsonSchema)]
pub struct WebhookQuery {
    /// The webhook secret, when it is part of the URL registered at the ERP.
    pub secret: Option<String>,
    /// Entity type, e.g. `customer`: letters, digits, `_`, `-` and `.`, at most 64 (GET calls:
    /// required).
    #[serde(rename = "entityName")]
    #[schemars(regex(pattern = r"^\s*[A-Za-z0-9_.-]{1,64}\s*$"))]
    pub entity_name: Option<String>,
    /// Id of the record: letters, digits and `-`, at most 64 (GET calls: this or `id` is
    /// required; blank counts as absent).
    #[serde(rename = "entityId")]
    #[schemars(regex(pattern = r"^\s*([A-Za-z0-9-]{1,64}\s*)?$"))]
    pub entity_id: Option<String>,
    /// Fallback for `entityId` (blank counts as absent).
    #[schemars(regex(pattern = r"^\s*([A-Za-z0-9-]{1,64}\s*)?$"))]
    pub id: Option<String>,
    /// `created`, `updated` or `deleted` (GET calls).
    #[serde(rename = "type")]
    pub event: Option<String>,
}

/// The body of a POST webhook call: entity name, entity id and event. Further fields are
/// accepted and ignored; the record is fetched from the ERP by id.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
pub struct WebhookPayload {
    /// Entity type, e.g. `customer`: letters, digits, `_`, `-` and `.`, at most 64 (also
    /// accepted: `entity_name`, `entity`).
    #[serde(rename = "entityName")]
    #[schemars(regex(pattern = r"^\s*[A-Za-z0-9_.-]{1,64}\s*$"))]
    pub entity_name: String,
    /// Id of the record: letters, digits and `-`, at most 64, or an integer (also accepted:
    /// `entity_id`, `id`, `entity.id`).
    #[serde(rename = "entityId")]
    #[schemars(schema_with = "record_id_schema")]
    pub entity_id: String,
    /// `created`, `updated` or `deleted` (also accepted: `event`, `action`); absent means a
    /// change.
    #[serde(rename = "type")]
    pub event: Option<String>,
}

/// A record id in a webhook body: text of letters, digits and `-`, or an integer.
fn record_id_schema(_: &mut schemars::r#gen::SchemaGenerator) -> schemars::schema::Schema {
    serde_json::from_value(serde_json::json!({
        "anyOf": [
            {"type": "string", "pattern": r"^\s*[A-Za-z0-9-]{1,64}\s*$"},
            {"type": "integer", "format": "int64"}
        ]
    }))
    .expect("a valid schema")
}

/// A stored webhook call.
#[derive(Serialize, JsonSchema)]
pub struct WebhookAccepted {
    /// Always true: the call is stored and will be processed.
    pub accepted: bool,
    /// Id of the call in the inbox (see `GET /api/v1/erp/show`).
    pub inbox_id: i64,
    #[serde(rename = "entityName")]
    pub entity_name: String,
    #[serde(rename = "entityId")]
    pub entity_id: String,
    /// `created`, `updated` or `deleted`.
    #[schemars(schema_with = "crate::vocabulary::closed_set::of::webhook_event")]
    pub event: String,
}

async fn receive(
    rqctx: &RequestContext<ApiContext>,
    header: SecretHeader,
    secret: Option<&str>,
    fields: Map<String, Value>,
) -> Result<HttpResponseAccepted<WebhookAccepted>, ApiError> {
    let erp: &ErpService = &rqctx.context().erp;
    erp.guard().admit(client_address(rqctx), header.0.as_deref().or(secret)).map_err(ErpError::from)?;
    let call = webhook::parse(&fields).map_err(ErpError::from)?;
    let inbox_id = erp.accept(&call, &Value::Object(fields)).await?;
    Ok(HttpResponseAccepted(WebhookAccepted {
        accepted: true,
        inbox_id,
        entity_name: call.entity_name,
        entity_id: call.entity_id,
        event: call.event.as_str().to_string(),
    }))
}

/// Receive an ERP webhook (GET)
///
/// The ERP calls this when a watched record is created, changed or deleted, with the entity
/// name, the record id and the event in the query. Not token-guarded: only calls from an
/// address in `ERP_WEBHOOK_ALLOWLIST` are admitted (403 otherwise; behind a proxy listed in
/// `TRUSTED_PROXIES` the address comes from `X-Forwarded-For`), and with
/// `ERP_WEBHOOK_SECRET` set the call must carry it as `?secret=` or `X-Webhook-Secret`
/// (401 otherwise). The call is stored before the 202 answer and processed afterwards:
/// the record is fetched from the ERP by id, the mirror updated (or the record removed),
/// and mapped records (customer → companies, contact → contacts, article → products) are
/// written to the field-report mirror without forwarding. Repeated deliveries change
/// nothing; failed processing is retried with back-off (see `GET /api/v1/erp/show`).
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/webhooks", tags = ["erp"] }]
pub async fn erp_webhook_get(
    rqctx: RequestContext<ApiContext>,
    header: SecretHeader,
    query: Query<WebhookQuery>,
) -> Result<HttpResponseAccepted<WebhookAccepted>, ApiError> {
    let query = query.into_inner();
    let mut fields = Map::new();
    for (key, value) in
        [("entityName", query.entity_name), ("entityId", query.entity_id), ("id", query.id), ("type", query.event)]
    {
        if let Some(value) = value {
            fields.insert(key.into(), Value::String(value));
        }
    }
    receive(&rqctx, header, query.secret.as_deref(), fields).await
}

/// Receive an ERP webhook (POST)
///
/// As the GET form, with the entity name, id and event in a JSON body
/// (`{"entityName", "entityId", "type"}`; the variants `entity_name`, `id`, `entity.id`,
/// `event`, `action` are accepted too).
#[dropshot::endpoint { method = POST, path = "/api/v1/erp/webhooks", tags = ["erp"] }]
pub async fn erp_webhook_post(
    rqctx: RequestContext<ApiContext>,
    header: SecretHeader,
    query: Query<WebhookSecretQuery>,
    body: TypedBody<Documented<WebhookPayload>>,
) -> Result<HttpResponseAccepted<WebhookAccepted>, ApiError> {
    let fields = match body.into_inner().into_inner() {
        Value::Object(fields) => fields,
        _ => return Err(ErpError::from(WebhookRefusal::Invalid("the body must be a JSON object".into())).into()),
    };
    receive(&rqctx, header, query.into_inner().secret.as_deref(), fields).await
}
