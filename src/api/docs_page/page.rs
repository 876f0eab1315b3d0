//! The API reference page and its assets, as served: the template and the vendored files
//! compiled into the binary, rendered once at start-up (held in the handlers' context).

use http::HeaderValue;
use sha2::{Digest, Sha256};

/// One embedded file below `/{DOCS_PATH}/assets/`.
pub(super) struct Asset {
    pub(super) name: &'static str,
    pub(super) content_type: &'static str,
    pub(super) bytes: &'static [u8],
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

pub(super) const ASSETS: &[Asset] = &[
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
    pub(super) in_folder: String,
    /// For `/{DOCS_PATH}`: URLs through the last path segment.
    pub(super) bare: String,
    /// `ETag` of each asset, in the order of [`ASSETS`].
    pub(super) etags: Vec<HeaderValue>,
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
