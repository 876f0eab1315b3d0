//! The interactive API reference at `/{DOCS_PATH}`: Swagger UI over the served document.
//!
//! Swagger UI comes from the npm registry's `swagger-ui-dist` package, vendored under
//! `assets/swagger-ui/` (version and tarball integrity pinned in `vendored.json`, checked by
//! `cargo xtask swagger-ui`) and compiled into the binary, so the page works offline. The page
//! names its document and assets by relative URLs, so it works under any `DOCS_PATH` and
//! behind a proxy that mounts the service under a prefix. No inline script or style: the page
//! is served with a strict Content-Security-Policy.
//!
//! The page itself, built once at start-up, is in `page.rs`: the handlers' context holds it,
//! and these handlers read the context.

mod page;

use bytes::Bytes;
use dropshot::{Body, Path, RequestContext};
use http::{Response, StatusCode, header};
use schemars::JsonSchema;
use serde::Deserialize;

use super::ApiContext;
use crate::error::ApiError;
use page::ASSETS;
pub use page::DocsPage;

/// Internal path of the page served at `/{DOCS_PATH}/`.
pub const PAGE_INTERNAL_PATH: &str = "/__internal/docs/page/folder";
/// Internal path of the page served at `/{DOCS_PATH}` (no trailing slash).
pub const BARE_PAGE_INTERNAL_PATH: &str = "/__internal/docs/page/bare";
/// Internal path pattern of the assets served at `/{DOCS_PATH}/assets/{file}`.
pub const ASSETS_INTERNAL_PATH: &str = "/__internal/docs/assets/{file}";

/// The page's policy: its own scripts and styles only, fetches only to this origin.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; \
frame-ancestors 'none'";

/// Path of an asset request.
#[derive(Deserialize, JsonSchema)]
pub struct AssetPath {
    /// The asset's file name.
    pub file: String,
}

/// Which URL the page was asked for.
pub enum PageForm {
    /// `/{DOCS_PATH}/`
    InFolder,
    /// `/{DOCS_PATH}`
    Bare,
}

/// The API reference page (served at `/{DOCS_PATH}/`). Not an API operation: HTML for
/// people, at a configurable path.
#[dropshot::endpoint { method = GET, path = "/__internal/docs/page/folder", tags = ["operations"], unpublished = true }]
pub async fn docs_page(rqctx: RequestContext<ApiContext>) -> Result<Response<Body>, ApiError> {
    page(&rqctx, PageForm::InFolder)
}

/// The API reference page (served at `/{DOCS_PATH}`).
#[dropshot::endpoint { method = GET, path = "/__internal/docs/page/bare", tags = ["operations"], unpublished = true }]
pub async fn docs_page_bare(rqctx: RequestContext<ApiContext>) -> Result<Response<Body>, ApiError> {
    page(&rqctx, PageForm::Bare)
}

/// The reference page's scripts, styles and icon (served at `/{DOCS_PATH}/assets/{file}`).
/// An embedded asset; revalidated by `ETag` (the assets change only with the binary).
#[dropshot::endpoint { method = GET, path = "/__internal/docs/assets/{file}", tags = ["operations"], unpublished = true }]
pub async fn docs_asset(rqctx: RequestContext<ApiContext>, path: Path<AssetPath>) -> Result<Response<Body>, ApiError> {
    let file = path.into_inner().file;
    let docs = &rqctx.context().docs_page;
    let Some(index) = ASSETS.iter().position(|asset| asset.name == file) else {
        return Err(ApiError::not_found(format!("No asset named {file:?}.")));
    };
    let asset = &ASSETS[index];
    let etag = &docs.etags[index];
    let unchanged = rqctx
        .request
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|tag| tag.trim() == etag || tag.trim() == "*"));
    let builder = Response::builder()
        .header(header::ETAG, etag.clone())
        .header(header::CACHE_CONTROL, "no-cache")
        .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    let response = if unchanged {
        builder.status(StatusCode::NOT_MODIFIED).body(Body::empty())
    } else {
        builder
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, asset.content_type)
            .body(Body::from(Bytes::from_static(asset.bytes)))
    };
    response.map_err(ApiError::internal)
}

/// The page in the form it was asked for.
fn page(rqctx: &RequestContext<ApiContext>, form: PageForm) -> Result<Response<Body>, ApiError> {
    let docs = &rqctx.context().docs_page;
    let html = match form {
        PageForm::InFolder => &docs.in_folder,
        PageForm::Bare => &docs.bare,
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/html; charset=utf-8")
        .header(header::CACHE_CONTROL, "no-cache")
        .header(header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY)
        .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
        .header(header::REFERRER_POLICY, "no-referrer")
        .body(Body::from(html.clone()))
        .map_err(ApiError::internal)
}
