//! Handlers for operators: probes and the served document.

use dropshot::{Body, HttpResponseOk, RequestContext};
use http::Response;
use schemars::JsonSchema;
use serde::Serialize;

use super::ApiContext;
use crate::error::ApiError;

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
