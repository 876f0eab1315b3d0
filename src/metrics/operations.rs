//! Which operation a public request path belongs to, for the `operation` label.
//!
//! Built once at start from the served OpenAPI document, whose paths are already the public
//! ones (the front's rewrite table is applied to the document), so a request is named by the
//! operationId a consumer sees. A path no template matches is `unmatched`: the raw path never
//! becomes a label value.

use std::collections::HashMap;

use serde_json::Value;

/// The label of a request no operation matches.
pub const UNMATCHED: &str = "unmatched";

const METHODS: [&str; 7] = ["get", "put", "post", "delete", "patch", "head", "options"];

#[derive(Debug, Default)]
struct Node {
    literals: HashMap<String, Node>,
    variable: Option<Box<Node>>,
    /// Upper-case method and operation index, for a path that ends here.
    operations: Vec<(String, usize)>,
}

/// Maps (method, path) to an operation index; [`OperationMatcher::names`] holds the names,
/// sorted, with [`UNMATCHED`] last.
#[derive(Debug)]
pub struct OperationMatcher {
    root: Node,
    names: Vec<String>,
}

fn is_variable(segment: &str) -> bool {
    segment.starts_with('{') && segment.ends_with('}')
}

impl OperationMatcher {
    /// From a document's `paths` and any `extra` (method, path template, operation) rows for
    /// operations the document does not list (the document itself, served at a configured path).
    pub fn new(document: &Value, extra: &[(&str, &str, &str)]) -> OperationMatcher {
        let mut rows: Vec<(String, String, String)> = extra
            .iter()
            .map(|(method, path, operation)| (method.to_uppercase(), path.to_string(), operation.to_string()))
            .collect();
        for (path, item) in document["paths"].as_object().into_iter().flatten() {
            for (method, operation) in item.as_object().into_iter().flatten() {
                if let (true, Some(id)) = (METHODS.contains(&method.as_str()), operation["operationId"].as_str()) {
                    rows.push((method.to_uppercase(), path.clone(), id.to_string()));
                }
            }
        }
        let mut names: Vec<String> = rows.iter().map(|(_, _, id)| id.clone()).collect();
        names.sort();
        names.dedup();
        names.push(UNMATCHED.to_string());
        let mut root = Node::default();
        for (method, path, id) in rows {
            let index = names.iter().position(|name| *name == id).expect("every operation is named");
            let mut node = &mut root;
            for segment in path.trim_start_matches('/').split('/') {
                node = if is_variable(segment) {
                    node.variable.get_or_insert_with(Default::default)
                } else {
                    node.literals.entry(segment.to_string()).or_default()
                };
            }
            node.operations.push((method, index));
        }
        OperationMatcher { root, names }
    }

    /// Operation names by index; the last is [`UNMATCHED`].
    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn unmatched(&self) -> usize {
        self.names.len() - 1
    }

    /// The operation of a request. Like the router, the path decides first (a literal segment
    /// before a variable one), then the method: a known path with another method is unmatched.
    pub fn operation(&self, method: &str, path: &str) -> usize {
        let Some(rest) = path.strip_prefix('/') else { return self.unmatched() };
        find(&self.root, rest)
            .and_then(|node| node.operations.iter().find(|(m, _)| m == method).map(|(_, index)| *index))
            .unwrap_or_else(|| self.unmatched())
    }
}

/// The node of the template matching `rest` (the path after a `/`), preferring literals.
fn find<'a>(node: &'a Node, rest: &str) -> Option<&'a Node> {
    let (segment, next) = match rest.split_once('/') {
        Some((segment, next)) => (segment, Some(next)),
        None => (rest, None),
    };
    let descend = |child: &'a Node| match next {
        Some(next) => find(child, next),
        None => (!child.operations.is_empty()).then_some(child),
    };
    if let Some(found) = node.literals.get(segment).and_then(descend) {
        return Some(found);
    }
    match &node.variable {
        Some(variable) if !segment.is_empty() => descend(variable),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn matcher() -> OperationMatcher {
        let document = json!({"paths": {
            "/api/v1/leasing/{financingId}": {"get": {"operationId": "show"}, "patch": {"operationId": "patch"}},
            "/api/v1/leasing/calculate": {"get": {"operationId": "calculate_default"}},
            "/api/v1/leasing/calculate/{amount}": {"get": {"operationId": "calculate"}},
            "/api/v1/leasing/{financingId}/lessee": {"patch": {"operationId": "patch_lessee"}},
            "/healthz": {"get": {"operationId": "healthz"}, "parameters": []},
            "/a/b/c": {"get": {"operationId": "abc"}},
            "/a/{v}": {"get": {"operationId": "av"}}
        }});
        OperationMatcher::new(&document, &[("get", "/docs/v1/openapi.json", "openapi_document")])
    }

    fn name<'a>(m: &'a OperationMatcher, method: &str, path: &str) -> &'a str {
        &m.names()[m.operation(method, path)]
    }

    #[test]
    fn paths_are_named_by_their_template() {
        let m = matcher();
        assert_eq!(name(&m, "GET", "/api/v1/leasing/abc-1"), "show");
        assert_eq!(name(&m, "PATCH", "/api/v1/leasing/abc-1"), "patch");
        assert_eq!(name(&m, "GET", "/api/v1/leasing/calculate"), "calculate_default", "a literal wins");
        assert_eq!(name(&m, "GET", "/api/v1/leasing/calculate/299"), "calculate");
        assert_eq!(name(&m, "PATCH", "/api/v1/leasing/abc-1/lessee"), "patch_lessee");
        assert_eq!(name(&m, "GET", "/a/b/c"), "abc");
        assert_eq!(name(&m, "GET", "/a/b"), "av", "a literal that ends nowhere gives way to the variable");
        assert_eq!(name(&m, "GET", "/healthz"), "healthz");
        assert_eq!(name(&m, "GET", "/docs/v1/openapi.json"), "openapi_document");
    }

    #[test]
    fn everything_else_is_unmatched() {
        let m = matcher();
        for (method, path) in [
            ("PATCH", "/api/v1/leasing/calculate"),
            // The path is the calculation's (as in the router), which has no PATCH.
            ("PATCH", "/api/v1/leasing/calculate/lessee"),
            ("DELETE", "/api/v1/leasing/abc"),
            ("GET", "/api/v1/leasing/"),
            ("GET", "/api/v1/leasing"),
            ("GET", "/api/v1/leasing/a/b/c"),
            ("GET", "/nope"),
            ("GET", ""),
            ("GET", "/"),
        ] {
            assert_eq!(name(&m, method, path), UNMATCHED, "{method} {path}");
        }
        assert_eq!(m.names().last().map(String::as_str), Some(UNMATCHED));
    }
}
