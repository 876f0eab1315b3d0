//! The API reference's place follows configuration (`DOCS_PATH`, e.g. `reference/v1`), which
//! a route's path in code cannot: the document, the page and its assets are registered under
//! fixed internal paths below `/__internal`, and the front maps the configured public paths
//! onto them. Every other route is registered at its public path.

use crate::api::OPENAPI_INTERNAL_PATH;
use crate::api::docs_page::{ASSETS_INTERNAL_PATH, BARE_PAGE_INTERNAL_PATH, PAGE_INTERNAL_PATH};

/// Every internal path starts with this; the front refuses it from clients.
pub const INTERNAL_PREFIX: &str = "/__internal/";

/// Where the document, the page and the page's assets are served.
#[derive(Debug, Clone)]
pub struct DocsPaths {
    /// `/{docs_path}`, without a trailing slash.
    base: String,
}

impl DocsPaths {
    pub fn new(docs_path: &str) -> Self {
        DocsPaths { base: format!("/{}", docs_path.trim_matches('/')) }
    }

    /// The internal path for a public request path below the docs path, if it is one:
    /// `/{docs_path}/openapi.json`, `/{docs_path}`, `/{docs_path}/` and
    /// `/{docs_path}/assets/{file}` (one non-empty segment).
    pub fn to_internal(&self, path: &str) -> Option<String> {
        let rest = path.strip_prefix(&self.base)?;
        match rest {
            "" => Some(BARE_PAGE_INTERNAL_PATH.to_string()),
            "/" => Some(PAGE_INTERNAL_PATH.to_string()),
            "/openapi.json" => Some(OPENAPI_INTERNAL_PATH.to_string()),
            _ => {
                let file = rest.strip_prefix("/assets/").filter(|file| !file.is_empty() && !file.contains('/'))?;
                Some(ASSETS_INTERNAL_PATH.replace("{file}", file))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configured_docs_path_maps_onto_the_internal_routes() {
        let t = DocsPaths::new("reference/v1");
        assert_eq!(t.to_internal("/reference/v1/openapi.json").as_deref(), Some(OPENAPI_INTERNAL_PATH));
        assert_eq!(t.to_internal("/docs/openapi.json"), None);
        assert_eq!(t.to_internal("/reference/v1").as_deref(), Some(BARE_PAGE_INTERNAL_PATH));
        assert_eq!(t.to_internal("/reference/v1/").as_deref(), Some(PAGE_INTERNAL_PATH));
        assert_eq!(
            t.to_internal("/reference/v1/assets/swagger-ui.css").as_deref(),
            Some("/__internal/docs/assets/swagger-ui.css")
        );
        assert_eq!(t.to_internal("/reference/v1/assets/"), None);
        assert_eq!(t.to_internal("/reference/v1/assets/a/b"), None);
        assert_eq!(t.to_internal("/reference/v1x"), None);
        assert_eq!(t.to_internal("/reference"), None);
        assert_eq!(t.to_internal("/api/v1/leasing/calculate"), None);
    }
}
