//! The endpoints for operators: probes, the served document, the metrics, and the bench's
//! constant answer.

use dropshot::{Body, HttpResponseOk, RequestContext};
use http::Response;
use schemars::JsonSchema;
use secrecy::ExposeSecret;
use serde::Serialize;

use crate::api::ApiContext;
use crate::api::support::guard::bearer_token;
use crate::error::ApiError;
use crate::metrics::{DatabaseGauges, exposition};

/// The process is up.
#[derive(Serialize, JsonSchema)]
pub struct Health {
    /// Always `ok`.
    #[schemars(schema_with = "crate::vocabulary::closed_set::of::ok")]
    pub status: String,
}

/// The service can serve requests.
#[derive(Serialize, JsonSchema)]
pub struct Readiness {
    /// `ready`.
    #[schemars(schema_with = "crate::vocabulary::closed_set::of::ready")]
    pub status: String,
    /// `ok`: the database answered.
    #[schemars(schema_with = "crate::vocabulary::closed_set::of::ok")]
    pub database: String,
}

/// A constant answer, for `cargo xtask bench`'s baseline: the cost of the HTTP stack
/// alone (front and dropshot), with no authentication and no database.
#[dropshot::endpoint { method = GET, path = "/bench/constant", tags = ["operations"], unpublished = true }]
pub async fn bench_constant(_rqctx: RequestContext<ApiContext>) -> Result<HttpResponseOk<Health>, ApiError> {
    Ok(HttpResponseOk(Health { status: "ok".into() }))
}

/// Liveness
///
/// Answers 200 while the process is up; it does not touch the database.
#[dropshot::endpoint { method = GET, path = "/healthz", tags = ["operations"] }]
pub async fn healthz(_rqctx: RequestContext<ApiContext>) -> Result<HttpResponseOk<Health>, ApiError> {
    Ok(HttpResponseOk(Health { status: "ok".into() }))
}

/// Readiness
///
/// Answers 200 when the database answers, 503 otherwise.
#[dropshot::endpoint { method = GET, path = "/readyz", tags = ["operations"] }]
pub async fn readyz(rqctx: RequestContext<ApiContext>) -> Result<HttpResponseOk<Readiness>, ApiError> {
    rqctx.context().store.ping().await.map_err(ApiError::unavailable)?;
    Ok(HttpResponseOk(Readiness { status: "ready".into(), database: "ok".into() }))
}

/// The OpenAPI document of this service (served at `/{DOCS_PATH}/openapi.json`).
#[dropshot::endpoint { method = GET, path = "/__internal/docs/openapi.json", tags = ["operations"], unpublished = true }]
pub async fn openapi_document(rqctx: RequestContext<ApiContext>) -> Result<Response<Body>, ApiError> {
    Response::builder()
        .status(200)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::CACHE_CONTROL, "no-cache")
        .body(Body::from(rqctx.context().openapi.clone()))
        .map_err(ApiError::internal)
}

/// Metrics
///
/// The service's metrics in the Prometheus text exposition format (version 0.0.4):
/// requests per operation and status, upstream calls per system and outcome (both with
/// latency histograms), leasing flow outcomes by `error_code`, the ERP webhook inbox and
/// the field-report push queue, database pool usage, start time and version. When the
/// service sets `METRICS_TOKEN`, send it as `Authorization: Bearer <METRICS_TOKEN>`;
/// otherwise the route is open.
#[dropshot::endpoint { method = GET, path = "/metrics", tags = ["operations"] }]
pub async fn metrics(rqctx: RequestContext<ApiContext>) -> Result<Response<Body>, ApiError> {
    // Behind `METRICS_TOKEN` when it is set (compared in constant time); not a user's token,
    // so not a `BearerToken`.
    let context = rqctx.context();
    if let Some(expected) = &context.metrics_token {
        let presented = bearer_token(rqctx.request.headers()).ok_or_else(ApiError::unauthenticated)?;
        if !crate::digest::same_secret(presented, expected.expose_secret()) {
            return Err(ApiError::unauthenticated());
        }
    }
    let database = DatabaseGauges::read(&context.store).await;
    Response::builder()
        .status(200)
        .header(http::header::CONTENT_TYPE, exposition::CONTENT_TYPE)
        .header(http::header::CACHE_CONTROL, "no-store")
        .body(Body::from(context.metrics.render(&database)))
        .map_err(ApiError::internal)
}
