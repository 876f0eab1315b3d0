//! The compatibility promise of `spec/openapi.json` (docs/clients.md, "Compatibility"): a
//! client generated from the last release's document keeps working with the next one. The
//! document of the last release is committed as [`BASELINE`]; `cargo xtask check` compares the
//! current document with it and refuses each change that would break such a client:
//!
//! - an operation (method and path) removed, or its `operationId` changed;
//! - a parameter removed, or a required one added (or an optional one made required);
//! - a request body made required;
//! - a success status of an operation no longer answered;
//! - a schema removed, a property removed from one, its type, format or `$ref` changed, or a
//!   property made required or no longer required;
//! - a value removed from an enum.
//!
//! What it allows: new operations, optional parameters, new schemas, new optional properties,
//! new enum values (announced in CHANGELOG.md: a strict generated client may refuse a value it
//! does not know in an answer), descriptions and examples.

use serde_json::Value;

/// The document of the last release: replaced by the current one when a release is cut.
pub const BASELINE: &str = "spec/released/openapi.json";

const METHODS: [&str; 5] = ["get", "put", "post", "delete", "patch"];

/// Every change from `old` to `new` that breaks a client generated from `old`, one line each.
pub fn breaking(old: &Value, new: &Value) -> Vec<String> {
    let mut found = Vec::new();
    for (path, old_item) in old["paths"].as_object().into_iter().flatten() {
        for method in METHODS {
            let Some(old_op) = old_item.get(method) else { continue };
            let at = format!("{} {path}", method.to_uppercase());
            match new["paths"].get(path).and_then(|item| item.get(method)) {
                Some(new_op) => operation(&at, old_op, new_op, &mut found),
                None => found.push(format!("{at}: the operation was removed")),
            }
        }
    }
    let new_schemas = &new["components"]["schemas"];
    for (name, old_schema) in old["components"]["schemas"].as_object().into_iter().flatten() {
        match new_schemas.get(name) {
            Some(new_schema) => schema(&format!("schema {name}"), old_schema, new_schema, &mut found),
            None => found.push(format!("schema {name}: removed")),
        }
    }
    found
}

fn operation(at: &str, old: &Value, new: &Value, found: &mut Vec<String>) {
    if old["operationId"] != new["operationId"] {
        found.push(format!("{at}: operationId {} became {}", old["operationId"], new["operationId"]));
    }
    let key = |p: &Value| (p["name"].as_str().unwrap_or_default().to_string(), p["in"].clone());
    let parameters = |op: &Value| op["parameters"].as_array().cloned().unwrap_or_default();
    let (old_parameters, new_parameters) = (parameters(old), parameters(new));
    for parameter in &old_parameters {
        if !new_parameters.iter().any(|p| key(p) == key(parameter)) {
            found.push(format!("{at}: parameter {} was removed", parameter["name"]));
        }
    }
    for parameter in &new_parameters {
        let before = old_parameters.iter().find(|p| key(p) == key(parameter));
        let required = |p: &Value| p["required"] == Value::Bool(true);
        if required(parameter) && !before.is_some_and(required) {
            found.push(format!("{at}: parameter {} is required now", parameter["name"]));
        }
    }
    if new["requestBody"]["required"] == Value::Bool(true) && old["requestBody"]["required"] != Value::Bool(true) {
        found.push(format!("{at}: the request body is required now"));
    }
    for (status, _) in old["responses"].as_object().into_iter().flatten().filter(|(s, _)| s.starts_with('2')) {
        if new["responses"].get(status).is_none() {
            found.push(format!("{at}: no longer answers {status}"));
        }
    }
}

fn schema(at: &str, old: &Value, new: &Value, found: &mut Vec<String>) {
    for key in ["type", "format", "$ref"] {
        if old.get(key) != new.get(key) {
            found.push(format!("{at}: {key} {} became {}", shown(old.get(key)), shown(new.get(key))));
        }
    }
    for value in old["enum"].as_array().into_iter().flatten() {
        if !new["enum"].as_array().is_some_and(|values| values.contains(value)) {
            found.push(format!("{at}: enum value {value} was removed"));
        }
    }
    let required =
        |schema: &Value, name: &str| schema["required"].as_array().is_some_and(|names| names.iter().any(|n| n == name));
    for (name, old_property) in old["properties"].as_object().into_iter().flatten() {
        let property = format!("{at}.{name}");
        let Some(new_property) = new["properties"].get(name) else {
            found.push(format!("{property}: removed"));
            continue;
        };
        if required(old, name) != required(new, name) {
            let now = if required(new, name) { "required" } else { "optional" };
            found.push(format!("{property}: {now} now"));
        }
        schema(&property, old_property, new_property, found);
    }
    for name in new["properties"].as_object().into_iter().flat_map(|p| p.keys()) {
        if old["properties"].get(name).is_none() && required(new, name) {
            found.push(format!("{at}.{name}: a new required property"));
        }
    }
    for key in ["items", "additionalProperties"] {
        if let (Some(old_part), Some(new_part)) = (old.get(key), new.get(key))
            && old_part.is_object()
            && new_part.is_object()
        {
            schema(&format!("{at}.{key}"), old_part, new_part, found);
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        let (old_parts, new_parts) = (old[key].as_array(), new[key].as_array());
        if let (Some(old_parts), Some(new_parts)) = (old_parts, new_parts)
            && old_parts.len() == new_parts.len()
        {
            for (i, (old_part, new_part)) in old_parts.iter().zip(new_parts).enumerate() {
                schema(&format!("{at}.{key}[{i}]"), old_part, new_part, found);
            }
        } else if old_parts != new_parts {
            found.push(format!("{at}: {key} changed"));
        }
    }
}

fn shown(value: Option<&Value>) -> String {
    value.map_or_else(|| "(none)".to_string(), Value::to_string)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    fn document(schema: Value, op: Value) -> Value {
        json!({"paths": {"/things": {"get": op}}, "components": {"schemas": {"Thing": schema}}})
    }

    fn op() -> Value {
        json!({"operationId": "things_list", "parameters": [{"name": "page", "in": "query", "required": false}],
               "responses": {"200": {"description": "ok"}}})
    }

    fn thing() -> Value {
        json!({"type": "object", "required": ["id"], "properties": {
            "id": {"type": "string"}, "size": {"type": "integer", "format": "int64"},
            "kind": {"type": "string", "enum": ["a", "b"]}
        }})
    }

    #[test]
    fn additions_are_compatible() {
        let old = document(thing(), op());
        let mut new = old.clone();
        new["paths"]["/more"] = json!({"post": op()});
        let parameters = new["paths"]["/things"]["get"]["parameters"].as_array_mut().unwrap();
        parameters.push(json!({"name": "q", "in": "query", "required": false}));
        new["components"]["schemas"]["Thing"]["properties"]["note"] = json!({"type": "string"});
        let kinds = new["components"]["schemas"]["Thing"]["properties"]["kind"]["enum"].as_array_mut().unwrap();
        kinds.push(json!("c"));
        new["components"]["schemas"]["Other"] = json!({"type": "object"});
        new["components"]["schemas"]["Thing"]["description"] = json!("A thing.");
        assert_eq!(super::breaking(&old, &new), Vec::<String>::new());
    }

    /// A change of a document, named by what the check must say of it.
    type Change = (&'static str, Box<dyn Fn(&mut Value)>);

    #[test]
    fn each_breaking_change_is_named() {
        let old = document(thing(), op());
        let cases: Vec<Change> = vec![
            ("the operation was removed", Box::new(|d| d["paths"] = json!({}))),
            ("operationId", Box::new(|d| d["paths"]["/things"]["get"]["operationId"] = json!("things_all"))),
            ("parameter \"page\" was removed", Box::new(|d| d["paths"]["/things"]["get"]["parameters"] = json!([]))),
            (
                "parameter \"page\" is required now",
                Box::new(|d| d["paths"]["/things"]["get"]["parameters"][0]["required"] = json!(true)),
            ),
            ("no longer answers 200", Box::new(|d| d["paths"]["/things"]["get"]["responses"] = json!({"201": {}}))),
            ("schema Thing: removed", Box::new(|d| d["components"]["schemas"] = json!({}))),
            (
                "schema Thing.size: removed",
                Box::new(|d| {
                    d["components"]["schemas"]["Thing"]["properties"].as_object_mut().unwrap().remove("size");
                }),
            ),
            (
                "schema Thing.size: format",
                Box::new(|d| d["components"]["schemas"]["Thing"]["properties"]["size"]["format"] = json!("int32")),
            ),
            (
                "schema Thing.id: optional now",
                Box::new(|d| d["components"]["schemas"]["Thing"]["required"] = json!([])),
            ),
            (
                "schema Thing.kind: enum value \"b\" was removed",
                Box::new(|d| d["components"]["schemas"]["Thing"]["properties"]["kind"]["enum"] = json!(["a"])),
            ),
            (
                "schema Thing.note: a new required property",
                Box::new(|d| {
                    d["components"]["schemas"]["Thing"]["properties"]["note"] = json!({"type": "string"});
                    d["components"]["schemas"]["Thing"]["required"] = json!(["id", "note"]);
                }),
            ),
        ];
        for (expected, change) in cases {
            let mut new = old.clone();
            change(&mut new);
            let found = super::breaking(&old, &new);
            assert!(found.iter().any(|line| line.contains(expected)), "{expected}: found {found:?}");
        }
    }
}
