//! The example of every success answer: the schema's own where it has one (the records, jobs,
//! subscriptions, flows written by hand beside their types), else one made from the schema,
//! so that every JSON answer a consumer reads about shows its shape. Each one fits its schema
//! (`tests/integration/edge/examples.rs` validates every one against the document).

use serde_json::{Map, Value, json};

/// How many `$ref`s deep optional properties are still shown: deeper, only required ones.
const OPTIONAL_DEPTH: usize = 2;

/// Gives each 2xx JSON answer without an example the one [`example_of`] makes of its schema.
pub(super) fn give_response_examples(doc: &mut Value) {
    let schemas = doc["components"]["schemas"].clone();
    for item in doc["paths"].as_object_mut().into_iter().flat_map(|p| p.values_mut()) {
        for op in item.as_object_mut().into_iter().flat_map(|i| i.values_mut()) {
            for (status, response) in op["responses"].as_object_mut().into_iter().flatten() {
                if !status.starts_with('2') {
                    continue;
                }
                let Some(media) = response.pointer_mut("/content/application~1json") else { continue };
                if media.get("example").is_some() {
                    continue;
                }
                if let Some(example) = example_of(&media["schema"], &schemas, &mut Vec::new()) {
                    media["example"] = example;
                }
            }
        }
    }
}

/// A value that fits `schema`: its `example` if it has one, else one made of its parts.
/// `expanding` holds the `$ref`s being expanded (a reference back to one of them is left out).
fn example_of(schema: &Value, schemas: &Value, expanding: &mut Vec<String>) -> Option<Value> {
    if let Some(example) = schema.get("example") {
        return Some(example.clone());
    }
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.trim_start_matches("#/components/schemas/").to_string();
        if expanding.contains(&name) {
            return None;
        }
        expanding.push(name.clone());
        let example = example_of(&schemas[&name], schemas, expanding);
        expanding.pop();
        return example;
    }
    if let Some(values) = schema["enum"].as_array() {
        return values.first().cloned();
    }
    for alternatives in ["oneOf", "anyOf"] {
        if let Some(first) = schema[alternatives].as_array().and_then(|all| all.first()) {
            return example_of(first, schemas, expanding);
        }
    }
    if let Some(parts) = schema["allOf"].as_array() {
        let mut merged = Map::new();
        for part in parts {
            match example_of(part, schemas, expanding)? {
                Value::Object(object) => merged.extend(object),
                other if parts.len() == 1 => return Some(other),
                _ => return None,
            }
        }
        return Some(Value::Object(merged));
    }
    match schema["type"].as_str() {
        Some("object") | None if schema.get("properties").is_some() => object_example(schema, schemas, expanding),
        Some("object") | None if schema.get("additionalProperties").is_some() => Some(json!({})),
        Some("array") => Some(json!([example_of(&schema["items"], schemas, expanding)?])),
        Some("string") => Some(string_example(schema, "")),
        Some("integer") => Some(integer_example(schema)),
        Some("number") => Some(json!(schema["minimum"].as_f64().unwrap_or(0.0).max(12.5))),
        Some("boolean") => Some(json!(true)),
        _ => None,
    }
}

fn object_example(schema: &Value, schemas: &Value, expanding: &mut Vec<String>) -> Option<Value> {
    let required: Vec<&str> = schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let mut example = Map::new();
    for (name, property) in schema["properties"].as_object().into_iter().flatten() {
        let is_required = required.contains(&name.as_str());
        if !is_required && expanding.len() > OPTIONAL_DEPTH {
            continue;
        }
        let value = match property["type"].as_str() {
            Some("string") if property.get("enum").is_none() && property.get("example").is_none() => {
                Some(string_example(property, name))
            }
            _ => example_of(property, schemas, expanding),
        };
        match value {
            // An optional part with nothing in it says nothing.
            Some(value) if !is_required && is_empty(&value) => {}
            Some(value) => {
                example.insert(name.clone(), value);
            }
            None if is_required => return None,
            None => {}
        }
    }
    Some(Value::Object(example))
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Object(object) => object.is_empty(),
        Value::Array(items) => items.iter().all(is_empty),
        _ => false,
    }
}

/// A string for `schema`, by its format, else by the property's `name` (`Id`s, e-mail
/// addresses, dates and names look like what they are).
fn string_example(schema: &Value, name: &str) -> Value {
    let text = match schema["format"].as_str() {
        Some("date-time") => "2026-11-27T10:00:00.000Z",
        Some("date") => "2026-11-27",
        Some("uuid") => "0d5c1e3e-8b7f-4f4e-9c57-2f1f0c9e1a11",
        Some("uri") => "https://shop.example/",
        Some("email") => "ops@example.com",
        _ if name.ends_with("Id") || name.ends_with("_id") || name == "id" => "1001",
        _ if name.to_ascii_lowercase().contains("mail") => "office@acme.example",
        _ if name.starts_with("Date") => "2026-11-27T10:00:00Z",
        _ if name.ends_with("Name") || name == "name" => "Example",
        _ => "example",
    };
    let min = schema["minLength"].as_u64().unwrap_or(0) as usize;
    json!(format!("{text}{}", "x".repeat(min.saturating_sub(text.len()))))
}

fn integer_example(schema: &Value) -> Value {
    let min = schema["minimum"].as_i64().unwrap_or(i64::MIN).max(1);
    let max = schema["maximum"].as_i64().unwrap_or(i64::MAX);
    json!(min.min(max))
}
