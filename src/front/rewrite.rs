//! The single table that maps public paths onto dropshot's internal ones.
//!
//! dropshot's router cannot hold a literal and a variable segment side by side (dropshot
//! issue #199), yet the seed's public paths need exactly that (e.g. `/api/v1/leasing/calculate`
//! beside `/api/v1/leasing/{financingId}`). Colliding operations are registered under
//! non-colliding internal paths below `/__internal`; this table maps each public path pattern
//! to its internal pattern. The front rewrites requests with it, and the OpenAPI document is
//! rewritten with the same rows, so both always agree.

use crate::api::OPENAPI_INTERNAL_PATH;
use crate::api::docs_page::{ASSETS_INTERNAL_PATH, BARE_PAGE_INTERNAL_PATH, PAGE_INTERNAL_PATH};

/// One row: a public path pattern and the internal pattern it is served by. `{name}` matches
/// one path segment and carries over by name.
#[derive(Debug, Clone)]
pub struct Rewrite {
    pub public: String,
    pub internal: String,
}

/// Every internal path starts with this; the front refuses it from clients.
pub const INTERNAL_PREFIX: &str = "/__internal/";

#[derive(Debug, Clone, Default)]
pub struct RewriteTable {
    rows: Vec<Rewrite>,
}

fn is_var(segment: &str) -> bool {
    segment.starts_with('{') && segment.ends_with('}')
}

impl RewriteTable {
    /// The rows that do not depend on configuration: none, now that every API route is
    /// registered at its public path (dropshot prefers a literal segment to a variable one
    /// beside it). Rows are tried in order; put literal rows before variable rows that could
    /// match the same path.
    pub fn static_rules() -> Self {
        RewriteTable::default()
    }

    /// The static rows plus the served document at `/{docs_path}/openapi.json` and the API
    /// reference page at `/{docs_path}` and `/{docs_path}/` with its assets.
    pub fn with_docs_path(docs_path: &str) -> Self {
        let mut table = Self::static_rules();
        for (public, internal) in [
            (format!("/{docs_path}/openapi.json"), OPENAPI_INTERNAL_PATH),
            (format!("/{docs_path}"), BARE_PAGE_INTERNAL_PATH),
            (format!("/{docs_path}/"), PAGE_INTERNAL_PATH),
            (format!("/{docs_path}/assets/{{file}}"), ASSETS_INTERNAL_PATH),
        ] {
            table.rows.push(Rewrite { public, internal: internal.to_string() });
        }
        table
    }

    /// The internal path for a public request path, if a row matches.
    pub fn to_internal(&self, path: &str) -> Option<String> {
        let segments: Vec<&str> = path.split('/').collect();
        self.rows.iter().find_map(|row| {
            let pattern: Vec<&str> = row.public.split('/').collect();
            if pattern.len() != segments.len() {
                return None;
            }
            let mut vars = Vec::new();
            for (p, s) in pattern.iter().zip(&segments) {
                if is_var(p) {
                    if s.is_empty() {
                        return None;
                    }
                    vars.push((*p, *s));
                } else if p != s {
                    return None;
                }
            }
            let internal =
                row.internal
                    .split('/')
                    .map(|seg| {
                        if is_var(seg) {
                            vars.iter().find(|(name, _)| *name == seg).map_or(seg, |(_, v)| v)
                        } else {
                            seg
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("/");
            Some(internal)
        })
    }

    /// The public pattern of an internal pattern, for the document.
    pub fn public_path_of(&self, internal_pattern: &str) -> Option<String> {
        self.rows.iter().find(|row| row.internal == internal_pattern).map(|row| row.public.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> RewriteTable {
        RewriteTable {
            rows: vec![
                Rewrite { public: "/a/calculate".into(), internal: "/__internal/a/calculate".into() },
                Rewrite { public: "/a/{id}/x".into(), internal: "/__internal/a/by-id/{id}/x".into() },
            ],
        }
    }

    #[test]
    fn rewrites_by_pattern_and_carries_variables() {
        let t = table();
        assert_eq!(t.to_internal("/a/calculate").as_deref(), Some("/__internal/a/calculate"));
        assert_eq!(t.to_internal("/a/42/x").as_deref(), Some("/__internal/a/by-id/42/x"));
        assert_eq!(t.to_internal("/a//x"), None);
        assert_eq!(t.to_internal("/a/42/y"), None);
        assert_eq!(t.to_internal("/b"), None);
        assert_eq!(t.public_path_of("/__internal/a/by-id/{id}/x").as_deref(), Some("/a/{id}/x"));
    }

    #[test]
    fn api_routes_are_not_rewritten() {
        let t = RewriteTable::static_rules();
        assert!(t.rows.is_empty());
        let t = RewriteTable::with_docs_path("docs");
        assert_eq!(t.to_internal("/api/v1/leasing/calculate"), None);
        assert_eq!(t.to_internal("/api/v1/leasing/leasing/request-flow"), None);
    }

    #[test]
    fn docs_path_row_follows_configuration() {
        let t = RewriteTable::with_docs_path("reference/v1");
        assert_eq!(t.to_internal("/reference/v1/openapi.json").as_deref(), Some(OPENAPI_INTERNAL_PATH));
        assert_eq!(t.to_internal("/docs/openapi.json"), None);
        assert_eq!(t.to_internal("/reference/v1").as_deref(), Some(BARE_PAGE_INTERNAL_PATH));
        assert_eq!(t.to_internal("/reference/v1/").as_deref(), Some(PAGE_INTERNAL_PATH));
        assert_eq!(
            t.to_internal("/reference/v1/assets/swagger-ui.css").as_deref(),
            Some("/__internal/docs/assets/swagger-ui.css")
        );
        assert_eq!(t.to_internal("/reference/v1/assets/"), None);
        assert_eq!(t.to_internal("/reference"), None);
    }
}
