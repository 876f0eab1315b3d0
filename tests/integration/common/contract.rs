//! Every answer the tests receive from the service is checked against `spec/openapi.json` with
//! OpenAPI 3.0.3's own rules, strictly: the operation (by method and path template), the status
//! (by its own code: a `4XX` range alone does not do), the `x-request-id` header, the value of
//! every declared header against its schema, and the body against the response's schema, with
//! formats asserted. A mismatch panics in the test that received the answer, naming the
//! operation, the status and what did not fit.
//!
//! The schemas are checked as JSON Schema draft 4 (OpenAPI 3.0's schema objects are an
//! extended subset of it) after the rewrite of `nullable: true`: beside a `type`, it adds `null`
//! to it (OpenAPI 3.0.3's rule); beside an `allOf` of one `$ref` (the document's optional
//! reference), it allows `null` besides the reference, as the client generators read it
//! (docs/architecture.md, "Optional values"); elsewhere it does nothing.
//!
//! Calls go through [`Checked::checked`] in place of `send`. Only answers from an address of a
//! service the tests started are checked ([`served_at`]); the simulators' are not ours to judge.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{LazyLock, Mutex};

use serde_json::{Map, Value};

use super::DOCUMENT;

/// The document as a draft-4 resource, and the schema of every JSON answer it declares,
/// compiled (by its location in the document).
struct Contract {
    document: Value,
    schemas: boon::Schemas,
    compiled: HashMap<String, boon::SchemaIndex>,
}

const RESOURCE: &str = "urn:integration-service:openapi.json";

static CONTRACT: LazyLock<Contract> = LazyLock::new(|| {
    let mut document: Value = serde_json::from_str(DOCUMENT).expect("spec/openapi.json is JSON");
    as_draft_4(&mut document);
    let mut compiler = boon::Compiler::new();
    compiler.set_default_draft(boon::Draft::V4);
    compiler.enable_format_assertions();
    compiler.add_resource(RESOURCE, document.clone()).expect("the document is a resource");
    let mut schemas = boon::Schemas::new();
    let mut compiled = HashMap::new();
    for location in json_answer_schemas(&document) {
        let index = compiler.compile(&location, &mut schemas).unwrap_or_else(|e| panic!("{location}: {e:#}"));
        compiled.insert(location, index);
    }
    Contract { document, schemas, compiled }
});

/// Where the schema of each JSON answer is: `<resource>#<pointer>`.
fn json_answer_schemas(document: &Value) -> Vec<String> {
    let mut locations = Vec::new();
    let mut add = |pointer: String, response: &Value| {
        for media in response["content"].as_object().into_iter().flat_map(|c| c.keys()) {
            if media.starts_with("application/json") {
                locations.push(format!("{RESOURCE}#{pointer}/content/{}/schema", token(media)));
            }
        }
    };
    for (name, response) in document["components"]["responses"].as_object().into_iter().flatten() {
        add(format!("/components/responses/{}", token(name)), response);
    }
    for (template, item) in document["paths"].as_object().into_iter().flatten() {
        for (method, operation) in item.as_object().into_iter().flatten() {
            for (status, response) in operation["responses"].as_object().into_iter().flatten() {
                add(format!("/paths/{}/{method}/responses/{status}", token(template)), response);
            }
        }
    }
    locations
}

/// The services' addresses (`host:port`) whose answers are checked.
static SERVICES: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Default::default);

/// Answers from `base` (`http://127.0.0.1:1234`) are the service's: check them.
pub fn served_at(base: &str) {
    let url = reqwest::Url::parse(base).expect("a service's base URL");
    SERVICES.lock().unwrap().insert(authority(&url));
}

fn is_service(url: &reqwest::Url) -> bool {
    SERVICES.lock().unwrap().contains(&authority(url))
}

/// `host:port` of a URL, the port spelled out.
fn authority(url: &reqwest::Url) -> String {
    format!("{}:{}", url.host_str().unwrap_or_default(), url.port_or_known_default().unwrap_or(0))
}

/// `nullable` as draft 4 says it: `type: T` becomes `type: [T, "null"]` (OpenAPI 3.0.3's rule);
/// `allOf: [{$ref}]` becomes `anyOf: [{$ref}, {type: "null"}]` (the generators' reading of an
/// optional reference); anywhere else it has no effect, and goes.
fn as_draft_4(value: &mut Value) {
    match value {
        Value::Object(object) => {
            let nullable = object.remove("nullable") == Some(Value::Bool(true));
            let one_reference = object.get("allOf").and_then(Value::as_array).is_some_and(|all| all.len() == 1);
            if nullable && let Some(Value::String(kind)) = object.get("type").cloned() {
                object.insert("type".into(), Value::from(vec![kind, "null".to_string()]));
            } else if nullable && one_reference && !object.contains_key("anyOf") {
                let reference = object.remove("allOf").and_then(|mut all| all.as_array_mut().and_then(Vec::pop));
                object.insert("anyOf".into(), serde_json::json!([reference, {"type": "null"}]));
            }
            object.values_mut().for_each(as_draft_4);
        }
        Value::Array(items) => items.iter_mut().for_each(as_draft_4),
        _ => {}
    }
}

/// The path template of the document that `path` takes: literal segments win over variables
/// (as the router decides), then the template with more literals.
fn template_of<'a>(paths: &'a Map<String, Value>, path: &str) -> Option<&'a str> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    paths
        .keys()
        .filter_map(|template| {
            let parts: Vec<&str> = template.trim_start_matches('/').split('/').collect();
            if parts.len() != segments.len() {
                return None;
            }
            let mut literals = Vec::with_capacity(parts.len());
            for (part, segment) in parts.iter().zip(&segments) {
                let variable = part.starts_with('{') && part.ends_with('}');
                if !variable && part != segment {
                    return None;
                }
                literals.push(!variable);
            }
            Some((literals, template.as_str()))
        })
        .max_by(|(a, _), (b, _)| a.cmp(b))
        .map(|(_, template)| template)
}

/// Whether a header's value is of its declared schema's type and format (the forms the
/// document's headers use: an integer with its bounds, a string, a uuid).
fn header_fits(schema: &Value, value: &http::HeaderValue) -> Result<(), String> {
    let text = value.to_str().map_err(|_| "is not visible ASCII".to_string())?;
    match schema["type"].as_str() {
        Some("integer") => {
            let number: i64 = text.parse().map_err(|_| "is not an integer".to_string())?;
            if schema["minimum"].as_i64().is_some_and(|minimum| number < minimum) {
                return Err(format!("is below the minimum {}", schema["minimum"]));
            }
        }
        Some("string") | None => {}
        Some(other) => return Err(format!("has a schema of type {other}, which the check does not know")),
    }
    if schema["format"] == "uuid" && uuid::Uuid::parse_str(text).is_err() {
        return Err("is not a uuid".into());
    }
    Ok(())
}

/// Escapes one JSON-pointer token.
fn token(text: &str) -> String {
    text.replace('~', "~0").replace('/', "~1")
}

impl Contract {
    /// Checks one answer; `Err` says what does not fit.
    fn check(
        &self,
        method: &str,
        path: &str,
        status: u16,
        headers: &http::HeaderMap,
        body: &[u8],
    ) -> Result<(), String> {
        let paths = self.document["paths"].as_object().expect("the document has paths");
        let Some(template) = template_of(paths, path) else { return Ok(()) };
        let method = method.to_ascii_lowercase();
        let Some(operation) = paths[template].get(&method) else {
            // A method the path does not have: the router answers 405 on its own.
            return if status == 405 { Ok(()) } else { Err(format!("{method} {template} is not in the document")) };
        };
        let op_id = operation["operationId"].as_str().unwrap_or(template);
        let responses = &operation["responses"];
        let code = status.to_string();
        // Declared by its own code: a `4XX` range alone is dropped by some generators
        // (docs/clients.md), and says nothing of the body's `error_code`s.
        let key = code.as_str();
        if responses.get(key).is_none() {
            let range = format!("{}XX", status / 100);
            return Err(match responses.get(&range) {
                Some(_) => format!("{op_id}: status {status} is declared only by the range {range}"),
                None => format!("{op_id}: status {status} is not documented"),
            });
        }
        let mut pointer = format!("/paths/{}/{method}/responses/{key}", token(template));
        let mut response = &responses[key];
        if let Some(reference) = response["$ref"].as_str() {
            pointer = reference.trim_start_matches('#').to_string();
            response = self.document.pointer(&pointer).ok_or_else(|| format!("{op_id}: no {reference}"))?;
        }
        if response["headers"].get("x-request-id").is_some() && !headers.contains_key("x-request-id") {
            return Err(format!("{op_id} {status}: no x-request-id header"));
        }
        for (name, declared) in response["headers"].as_object().into_iter().flatten() {
            let declared = match declared["$ref"].as_str() {
                Some(reference) => self.document.pointer(reference.trim_start_matches('#')).unwrap_or(declared),
                None => declared,
            };
            if let Some(value) = headers.get(name.as_str()) {
                header_fits(&declared["schema"], value)
                    .map_err(|e| format!("{op_id} {status}: its {name} header {value:?} {e}"))?;
            }
        }
        // A header a client is told to act on must be declared where it is sent.
        for name in ANNOUNCED_HEADERS {
            let declared =
                response["headers"].as_object().is_some_and(|h| h.keys().any(|k| k.eq_ignore_ascii_case(name)));
            if headers.contains_key(*name) && !declared {
                return Err(format!("{op_id} {status}: a {name} header the document does not declare"));
            }
        }
        let media = headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or_default().trim().to_ascii_lowercase());
        let content = response.get("content").and_then(Value::as_object);
        let Some(content) = content else {
            return if body.is_empty() {
                Ok(())
            } else {
                Err(format!("{op_id} {status}: a body the document does not declare"))
            };
        };
        if body.is_empty() && status == 204 {
            return Ok(());
        }
        let Some(media) = media else { return Err(format!("{op_id} {status}: a body without a content type")) };
        let declared = content.keys().find(|k| k.split(';').next().unwrap_or_default().trim() == media);
        let Some(declared) = declared else {
            return Err(format!("{op_id} {status}: content type {media}, the document declares {:?}", content.keys()));
        };
        if media != "application/json" {
            return Ok(());
        }
        let instance: Value =
            serde_json::from_slice(body).map_err(|e| format!("{op_id} {status}: the body is not JSON ({e})"))?;
        let location = format!("{RESOURCE}#{pointer}/content/{}/schema", token(declared));
        let index = self.compiled.get(&location).ok_or_else(|| format!("{op_id}: {location} was not compiled"))?;
        self.schemas
            .validate(&instance, *index)
            .map_err(|e| format!("{op_id} {status}: the body does not fit: {e:#}\nbody: {instance}"))
    }
}

/// Whether `instance` fits the schema at `schema` (a JSON pointer into the document, such as
/// `/components/schemas/Job`), by the rules above.
pub fn fits(schema: &str, instance: &Value) -> Result<(), String> {
    let mut compiler = boon::Compiler::new();
    compiler.set_default_draft(boon::Draft::V4);
    compiler.enable_format_assertions();
    compiler.add_resource(RESOURCE, CONTRACT.document.clone()).map_err(|e| format!("{e:#}"))?;
    let mut schemas = boon::Schemas::new();
    let index = compiler.compile(&format!("{RESOURCE}#{schema}"), &mut schemas).map_err(|e| format!("{e:#}"))?;
    schemas.validate(instance, index).map_err(|e| format!("{e:#}"))
}

/// The headers that tell a client what to do, which an answer may carry only where declared.
const ANNOUNCED_HEADERS: &[&str] = &["retry-after", "location", "etag"];

/// Whether an answer of the service fits the document; `Err` says what does not.
pub fn mismatch(
    method: &reqwest::Method,
    url: &reqwest::Url,
    status: u16,
    headers: &http::HeaderMap,
    body: &[u8],
) -> Result<(), String> {
    CONTRACT
        .check(method.as_str(), url.path(), status, headers, body)
        .map_err(|mismatch| format!("the answer to {method} {} does not fit spec/openapi.json: {mismatch}", url.path()))
}

/// Panics when an answer of the service does not fit the document.
pub fn check(method: &reqwest::Method, url: &reqwest::Url, status: u16, headers: &http::HeaderMap, body: &[u8]) {
    if !is_service(url) {
        return;
    }
    if let Err(mismatch) = mismatch(method, url, status, headers, body) {
        panic!("{mismatch}");
    }
}

/// `send`, then [`check`] the answer; the answer is handed on whole (its body read already).
pub trait Checked {
    fn checked(self) -> impl Future<Output = reqwest::Result<reqwest::Response>> + Send;
}

impl Checked for reqwest::RequestBuilder {
    async fn checked(self) -> reqwest::Result<reqwest::Response> {
        let (client, request) = self.build_split();
        let request = request?;
        let (method, url) = (request.method().clone(), request.url().clone());
        let response = client.execute(request).await?;
        let (status, version, headers) = (response.status(), response.version(), response.headers().clone());
        let body = response.bytes().await?;
        check(&method, &url, status.as_u16(), &headers, &body);
        let mut answer = http::Response::new(body);
        *answer.status_mut() = status;
        *answer.version_mut() = version;
        *answer.headers_mut() = headers;
        Ok(reqwest::Response::from(answer))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// `nullable` counts beside `type` and beside an optional reference, nowhere else.
    #[test]
    fn nullable_needs_a_type_or_one_reference() {
        let mut schema = json!({"properties": {
            "a": {"type": "string", "nullable": true},
            "b": {"allOf": [{"$ref": "#/x"}], "nullable": true, "description": "B."},
            "c": {"allOf": [{"$ref": "#/x"}, {"$ref": "#/y"}], "nullable": true}
        }});
        super::as_draft_4(&mut schema);
        assert_eq!(schema["properties"]["a"], json!({"type": ["string", "null"]}));
        assert_eq!(
            schema["properties"]["b"],
            json!({"anyOf": [{"$ref": "#/x"}, {"type": "null"}], "description": "B."})
        );
        assert_eq!(schema["properties"]["c"], json!({"allOf": [{"$ref": "#/x"}, {"$ref": "#/y"}]}));
    }

    /// A body that does not fit, a missing header and an undocumented status are each named.
    #[test]
    fn mismatches_are_named() {
        let mut headers = http::HeaderMap::new();
        headers.insert("content-type", "application/json".parse().unwrap());
        headers.insert("x-request-id", "0d5c1e3e-8b7f-4f4e-9c57-2f1f0c9e1a11".parse().unwrap());
        let check = |status, headers: &http::HeaderMap, body: &str| {
            super::CONTRACT.check("GET", "/api/v1/jobs/7", status, headers, body.as_bytes())
        };
        let error = r#"{"message": "no job 7", "error_code": "not_found", "request_id": "0d5c1e3e-8b7f-4f4e-9c57-2f1f0c9e1a11"}"#;
        assert_eq!(check(404, &headers, error), Ok(()));
        let wrong =
            r#"{"message": "no job 7", "error_code": 404, "request_id": "0d5c1e3e-8b7f-4f4e-9c57-2f1f0c9e1a11"}"#;
        assert!(check(404, &headers, wrong).unwrap_err().contains("does not fit"));
        assert!(check(404, &headers, r#"{"message": null, "error_code": "x", "request_id": "y"}"#).is_err());
        assert!(check(302, &headers, error).unwrap_err().contains("not documented"));
        let teapot =
            r#"{"message": "no", "error_code": "client_error", "request_id": "0d5c1e3e-8b7f-4f4e-9c57-2f1f0c9e1a11"}"#;
        assert!(check(418, &headers, teapot).unwrap_err().contains("only by the range 4XX"));
        let busy = r#"{"message": "busy", "error_code": "service_unavailable", "request_id": "0d5c1e3e-8b7f-4f4e-9c57-2f1f0c9e1a11"}"#;
        let mut waiting = headers.clone();
        waiting.insert("retry-after", "2".parse().unwrap());
        assert_eq!(check(503, &waiting, busy), Ok(()));
        waiting.insert("retry-after", "Wed, 21 Oct 2026 07:28:00 GMT".parse().unwrap());
        assert!(check(503, &waiting, busy).unwrap_err().contains("is not an integer"));
        let mut odd_id = headers.clone();
        odd_id.insert("x-request-id", "req-1".parse().unwrap());
        assert!(check(404, &odd_id, error).unwrap_err().contains("is not a uuid"));
        let mut without_id = headers.clone();
        without_id.remove("x-request-id");
        assert!(check(404, &without_id, error).unwrap_err().contains("x-request-id"));
    }

    #[test]
    fn literal_segments_win() {
        let paths = json!({"/a/{x}": {}, "/a/b": {}, "/a/{x}/c": {}});
        let paths = paths.as_object().unwrap();
        assert_eq!(super::template_of(paths, "/a/b"), Some("/a/b"));
        assert_eq!(super::template_of(paths, "/a/z"), Some("/a/{x}"));
        assert_eq!(super::template_of(paths, "/a/z/c"), Some("/a/{x}/c"));
        assert_eq!(super::template_of(paths, "/q"), None);
    }
}
