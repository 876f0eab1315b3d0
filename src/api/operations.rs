//! Handlers for operators: probes, the served document and the metrics.

use dropshot::{Body, HttpResponseOk, RequestContext};
use http::Response;
use schemars::JsonSchema;
use secrecy::ExposeSecret;
use serde::Serialize;

use super::ApiContext;
use super::guard::bearer_token;
use crate::error::ApiError;
use crate::metrics::{DatabaseGauges, exposition};

/// The process is up.
#[derive(Serialize, JsonSchema)]
pub struct Health {
    /// Always `ok`.
    pub status: String,
}

/// The service can serve requests.
#[derive(Serialize, JsonSchema)]
pub struct Readiness {
    /// `ready`.
    pub status: String,
    /// `ok` when the database answered.
    pub database: String,
}

pub async fn readyz(rqctx: &RequestContext<ApiContext>) -> Result<HttpResponseOk<Readiness>, ApiError> {
    rqctx.context().store.ping().await.map_err(ApiError::unavailable)?;
    Ok(HttpResponseOk(Readiness { status: "ready".into(), database: "ok".into() }))
}

pub fn openapi_document(rqctx: &RequestContext<ApiContext>) -> Result<Response<Body>, ApiError> {
    Response::builder()
        .status(200)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::CACHE_CONTROL, "no-cache")
        .body(Body::from(rqctx.context().openapi.as_str().to_owned()))
        .map_err(ApiError::internal)
}

/// The exposition, behind `METRICS_TOKEN` when it is set (compared in constant time).
pub async fn metrics(rqctx: &RequestContext<ApiContext>) -> Result<Response<Body>, ApiError> {
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
