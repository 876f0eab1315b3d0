//! The interactive API reference at `/{DOCS_PATH}`: Swagger UI over the served document.
//!
//! Swagger UI comes from the npm registry's `swagger-ui-dist` package, vendored under
//! `assets/swagger-ui/` (version and tarball integrity pinned in `vendored.json`, checked by
//! `cargo xtask swagger-ui`) and compiled into the binary, so the page works offline. The page
//! names its document and assets by relative URLs, so it works under any `DOCS_PATH` and
//! behind a proxy that mounts the service under a prefix. No inline script or style: the page
//! is served with a strict Content-Security-Policy.

use bytes::Bytes;
use dropshot::{Body, Path, RequestContext};
use http::{HeaderValue, Response, StatusCode, header};
use schemars::JsonSchema;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::ApiContext;
use crate::error::ApiError;

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

/// One embedded file below `/{DOCS_PATH}/assets/`.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

macro_rules! vendored {
    ($name:literal, $content_type:literal) => {
        Asset {
            name: $name,
            content_type: $content_type,
            bytes: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/swagger-ui/", $name)),
        }
    };
}

const ASSETS: &[Asset] = &[
    vendored!("swagger-ui-bundle.js", "text/javascript; charset=utf-8"),
    vendored!("swagger-ui.css", "text/css; charset=utf-8"),
    vendored!("favicon-32x32.png", "image/png"),
    vendored!("swagger-ui-bundle.js.LICENSE.txt", "text/plain; charset=utf-8"),
    vendored!("LICENSE", "text/plain; charset=utf-8"),
    vendored!("NOTICE", "text/plain; charset=utf-8"),
    Asset {
        name: "docs-page.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/docs-page/docs-page.js")),
    },
];

const PAGE_TEMPLATE: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/docs-page/index.html"));

/// The two renderings of the page and the assets' validators, built once at start-up.
pub struct DocsPage {
    /// For `/{DOCS_PATH}/`: URLs relative to the folder.
    in_folder: String,
    /// For `/{DOCS_PATH}`: URLs through the last path segment.
    bare: String,
    /// `ETag` of each asset, in the order of [`ASSETS`].
    etags: Vec<HeaderValue>,
}

impl DocsPage {
    pub fn new(docs_path: &str) -> DocsPage {
        let last_segment = docs_path.rsplit('/').next().unwrap_or(docs_path);
        let render = |prefix: &str| PAGE_TEMPLATE.replace("{{prefix}}", prefix);
        let etags = ASSETS
            .iter()
            .map(|asset| {
                let digest: String = Sha256::digest(asset.bytes).iter().take(16).map(|b| format!("{b:02x}")).collect();
                HeaderValue::from_str(&format!("\"{digest}\"")).expect("a hex digest is a header value")
            })
            .collect();
        DocsPage { in_folder: render(""), bare: render(&format!("{last_segment}/")), etags }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// The vendored files are the ones `cargo xtask swagger-ui` verified against the registry.
    #[test]
    fn vendored_files_match_their_manifest() {
        let manifest: serde_json::Value =
            serde_json::from_str(include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/swagger-ui/vendored.json")))
                .unwrap();
        assert_eq!(manifest["package"], "swagger-ui-dist");
        let files = manifest["files"].as_object().unwrap();
        let vendored: Vec<&Asset> = ASSETS.iter().filter(|a| files.contains_key(a.name)).collect();
        assert_eq!(vendored.len(), files.len(), "every vendored file is served");
        for asset in vendored {
            let digest: String = Sha256::digest(asset.bytes).iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(files[asset.name], digest.as_str(), "{} differs from vendored.json", asset.name);
        }
    }

    #[test]
    fn page_urls_are_relative_to_where_it_is_served() {
        let page = DocsPage::new("reference/v1");
        assert!(page.in_folder.contains(r#"data-openapi-url="openapi.json""#));
        assert!(page.in_folder.contains(r#"src="assets/swagger-ui-bundle.js""#));
        assert!(page.bare.contains(r#"data-openapi-url="v1/openapi.json""#));
        assert!(page.bare.contains(r#"href="v1/assets/swagger-ui.css""#));
        assert!(!page.in_folder.contains("{{") && !page.in_folder.contains("<script>"));
    }
}
