//! The schemas' forms across the document: one type for a record's `Id` and `Version`, typed
//! timestamps, integer bounds, nullable references, request examples, and the
//! `x-request-id` header on every answer.

use serde_json::{Value, json};

/// A record's `Id` and `Version` have one type, read or written: a string and an integer, as
/// the write bodies (`New<Set>`, `<Set>Update`) take them. The description's `Edm.Int64`
/// union is what the upstream may send; the service normalizes it on the way in
/// (`crate::fieldreport::identity`), so every record schema (top-level or expanded) says so.
pub(super) fn one_record_identity(doc: &mut Value) {
    let edm_int64 = json!([{"$ref": "#/components/schemas/EdmInt64"}]);
    for schema in doc["components"]["schemas"].as_object_mut().into_iter().flat_map(|s| s.values_mut()) {
        let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) else { continue };
        let is_record =
            ["Id", "Version"].iter().all(|key| properties.get(*key).is_some_and(|p| p["allOf"] == edm_int64));
        if !is_record {
            continue;
        }
        let description = |property: &Value| property["description"].as_str().unwrap_or_default().to_string();
        let id = description(&properties["Id"]);
        properties["Id"] = json!({"type": "string", "description": format!("{id} Always a string here (an upstream's number is written out).")});
        let version = description(&properties["Version"]);
        properties["Version"] = json!({"type": "integer", "format": "int64", "description": format!("{version} Always an integer here (an upstream's string is read as one).")});
    }
}

/// Every `*_at` or `*_since` string of the API (a subscription's `failing_since`) is an RFC
/// 3339 instant (the service writes them with `to_rfc3339_opts`): typed `format: date-time`,
/// so that generated clients parse them as timestamps. (Epoch-millisecond `*_at` fields are
/// integers and stay so; a field-report record's own dates are the upstream's text.)
pub(super) fn type_timestamps(value: &mut Value) {
    match value {
        Value::Object(object) => {
            for (name, property) in object.get_mut("properties").and_then(Value::as_object_mut).into_iter().flatten() {
                let timestamp = name.ends_with("_at") || name.ends_with("_since");
                if timestamp && property["type"] == "string" {
                    property["format"] = json!("date-time");
                }
            }
            object.values_mut().for_each(type_timestamps);
        }
        Value::Array(items) => items.iter_mut().for_each(type_timestamps),
        _ => {}
    }
}

/// The example of each request body, beside its schema: the schema's own example where it
/// has one (the financing request, the login, the job), else [`request_example`]. Each one
/// succeeds against the sandbox (`tests/integration/edge/examples.rs` sends every one).
pub(super) fn give_request_examples(doc: &mut Value) {
    let schemas = doc["components"]["schemas"].clone();
    for item in doc["paths"].as_object_mut().into_iter().flat_map(|p| p.values_mut()) {
        for op in item.as_object_mut().into_iter().flat_map(|i| i.values_mut()) {
            let op_id = op["operationId"].as_str().unwrap_or_default().to_string();
            let Some(content) = op.get_mut("requestBody").and_then(|b| b.get_mut("content")) else { continue };
            let Some(media) = content.get_mut("application/json") else { continue };
            let schema = match media["schema"]["$ref"].as_str() {
                Some(reference) => &schemas[reference.trim_start_matches("#/components/schemas/")],
                None => &media["schema"],
            };
            let example = match schema.get("example") {
                Some(example) => Some(example.clone()),
                None => request_example(&op_id, schema, &schemas),
            };
            if let Some(example) = example {
                media["example"] = example;
            }
        }
    }
}

/// The example of a request body whose schema has none.
fn request_example(op_id: &str, schema: &Value, schemas: &Value) -> Option<Value> {
    let signee = json!({"FirstName": "Erika", "LastName": "Mustermann", "Email": "erika.mustermann@acme.example", "Culture": "de-DE", "SigningOrder": 1});
    let e_signature = json!({"ESignatureType": "DocuSign", "CustomerContractSignees": [signee]});
    let example = match op_id {
        "leasing_provider_calculation" => json!({"FinancingAmount": 2598.0, "Period": 48}),
        "leasing_patch" => json!({"Period": 36}),
        "leasing_patch_lessee" => json!({"Email": "finance@acme.example"}),
        "leasing_start_e_signature" => e_signature,
        "leasing_request_flow" => json!({
            "request_payload": schemas["FinancingRequestPayload"]["example"],
            "e_signature_payload": e_signature,
            "max_attempts": 5,
            "sleep_milliseconds": 200
        }),
        "erp_webhook_post" => json!({"entityName": "customer", "entityId": "17", "type": "updated"}),
        _ if op_id.starts_with("fieldreport_") => return fieldreport_example(op_id, schema),
        _ => return None,
    };
    Some(example)
}

/// A field-report write: a create names `Id` and `Version`; an update the `Version` it read
/// (a create's record is at Version 1); both set the set's name-like field, if it has one.
fn fieldreport_example(op_id: &str, schema: &Value) -> Option<Value> {
    let properties = schema["properties"].as_object()?;
    let mut example = if op_id.ends_with("_create") {
        json!({"Id": "new-1", "Version": 1})
    } else if op_id.ends_with("_update") || op_id.ends_with("_replace") {
        json!({"Version": 1})
    } else {
        return None;
    };
    let named = ["Name", "Description", "Title", "Subject", "Email"]
        .into_iter()
        .find(|name| properties.get(*name).is_some_and(|p| p["type"] == "string"));
    if let Some(name) = named {
        example[name] = json!(if op_id.ends_with("_create") { "Example" } else { "Example, changed" });
    }
    Some(example)
}

/// An optional reference stays as schemars writes it, `{allOf: [{$ref}], nullable: true}`: the
/// form progenitor, openapi-typescript and openapi-python-client each read as a plain optional
/// value of the referenced type (no `{enum: [null]}` alternative, which other generators turn
/// into one-member enums; docs/architecture.md, "Optional values"). Only a `nullable` that
/// constrains nothing (an `Option<Value>`: any JSON value, `null` among them) goes.
pub(super) fn express_nullable_references(value: &mut Value) {
    match value {
        Value::Object(object) => {
            if object.get("nullable") == Some(&Value::Bool(true))
                && !["type", "allOf", "anyOf", "oneOf", "$ref", "enum"].iter().any(|k| object.contains_key(*k))
            {
                object.remove("nullable");
            }
            object.values_mut().for_each(express_nullable_references);
        }
        Value::Array(items) => items.iter_mut().for_each(express_nullable_references),
        _ => {}
    }
}

/// Every answer carries the request's id in `x-request-id` (the front sets it): declared on
/// each response, inline or shared.
pub(super) fn declare_request_id(doc: &mut Value) {
    doc["components"]["headers"] = json!({
        "RequestId": {
            "description": "The request's id, also in every error body as `request_id`; quote it when reporting a problem.",
            "schema": {"type": "string", "format": "uuid"}
        }
    });
    let header = json!({"$ref": "#/components/headers/RequestId"});
    let declare = |response: &mut Value| {
        if response.get("$ref").is_none() {
            response["headers"]["x-request-id"] = header.clone();
        }
    };
    for response in doc["components"]["responses"].as_object_mut().into_iter().flat_map(|r| r.values_mut()) {
        declare(response);
    }
    for item in doc["paths"].as_object_mut().into_iter().flat_map(|p| p.values_mut()) {
        for op in item.as_object_mut().into_iter().flat_map(|i| i.values_mut()) {
            for response in op["responses"].as_object_mut().into_iter().flat_map(|r| r.values_mut()) {
                declare(response);
            }
        }
    }
}

/// Gives every integer the bounds of its Rust type (schemars states only `minimum: 0` of
/// unsigned ones), so the document says which numbers the service can read: a larger one is
/// refused (400 or 422), never taken modulo. Formats are OpenAPI's own, `int32` and `int64`:
/// an unsigned 32-bit integer is an `int64` from 0 to 2^32 - 1, and an unsigned 64-bit one an
/// `int64` from 0 (a count the service sends never passes `i64::MAX`, and generators type
/// `int64` as a signed 64-bit integer).
pub(super) fn bound_integers(value: &mut Value) {
    match value {
        Value::Object(object) => {
            let bounds: Option<(&str, Value, Value)> = match object.get("format").and_then(Value::as_str) {
                Some("int32") => Some(("int32", i32::MIN.into(), i32::MAX.into())),
                Some("uint32") => Some(("int64", 0.into(), u32::MAX.into())),
                Some("int64") | Some("int") => Some(("int64", i64::MIN.into(), i64::MAX.into())),
                Some("uint64") | Some("uint") => Some(("int64", 0.into(), i64::MAX.into())),
                _ => None,
            };
            if let Some((format, min, max)) = bounds
                && object.get("type").and_then(Value::as_str) == Some("integer")
            {
                object.insert("format".into(), json!(format));
                object.entry("minimum").or_insert(min);
                object.entry("maximum").or_insert(max);
            }
            object.values_mut().for_each(bound_integers);
        }
        Value::Array(items) => items.iter_mut().for_each(bound_integers),
        _ => {}
    }
}
