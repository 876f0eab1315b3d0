//! Bring an upstream OpenAPI description (3.0.x or 3.1.x, JSON) into the form progenitor and
//! typify accept, without knowing anything about the particular upstream:
//!
//! - the `openapi` header becomes `3.0.3` (progenitor accepts only 3.0.x); 3.1-only keywords are
//!   translated (`type: [T, "null"]` → `nullable`, `const` → `enum`, numeric `exclusiveMinimum`)
//!   or dropped;
//! - `additionalProperties: false` is dropped (typify would emit `deny_unknown_fields`);
//! - `allOf` compositions of object schemas are merged into one object schema (the shape of an
//!   inheriting entity); a single-member `allOf` (the 3.0 idiom for a described `$ref`) and
//!   compositions of non-objects are left for typify;
//! - every object schema with properties gets `additionalProperties: {}`, which typify turns into
//!   a flattened `extra` map: unknown fields of upstream records survive a round trip.
//!
//! Errors name the file and the JSON pointer of the offending value.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};

/// 3.1 keywords without a 3.0 equivalent that do not change the shape of the data.
const DROP_31: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "$anchor",
    "$dynamicAnchor",
    "$defs",
    "examples",
    "contentMediaType",
    "contentEncoding",
    "contentSchema",
    "unevaluatedProperties",
    "unevaluatedItems",
    "dependentRequired",
    "dependentSchemas",
    "prefixItems",
    "patternProperties",
    "propertyNames",
    "if",
    "then",
    "else",
    "contains",
    "minContains",
    "maxContains",
];

/// Escape one JSON-pointer segment (RFC 6901).
pub fn esc(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Normalize a whole OpenAPI document in place (see the module documentation).
pub fn normalize(doc: &mut Value, file: &str) -> Result<()> {
    let root = doc.as_object_mut().with_context(|| format!("{file}: the document is not a JSON object"))?;
    let version = root
        .get("openapi")
        .and_then(Value::as_str)
        .with_context(|| {
            format!("{file}: /openapi: missing or not a string (only OpenAPI 3.0.x and 3.1.x are supported)")
        })?
        .to_string();
    if version.starts_with("3.1") {
        root.insert("openapi".into(), json!("3.0.3"));
        root.remove("webhooks");
        root.remove("jsonSchemaDialect");
        if let Some(components) = root.get_mut("components").and_then(Value::as_object_mut) {
            components.remove("pathItems");
        }
        if let Some(license) = root.get_mut("info").and_then(|i| i.get_mut("license")).and_then(Value::as_object_mut) {
            license.remove("identifier");
        }
    } else if !version.starts_with("3.0") {
        bail!("{file}: /openapi: version {version:?} is not supported (only OpenAPI 3.0.x and 3.1.x)");
    }

    // 1. Keyword translation, everywhere a schema can appear.
    walk_document(doc, "", file)?;

    // 2. allOf merging, with references into components/schemas resolved.
    let originals = doc.pointer("/components/schemas").and_then(Value::as_object).cloned().unwrap_or_default();
    let mut merger = Merger { file, originals: &originals, done: BTreeMap::new(), stack: Vec::new() };
    for name in originals.keys() {
        merger.component(name)?;
    }
    let merged = std::mem::take(&mut merger.done);
    if let Some(schemas) = doc.pointer_mut("/components/schemas").and_then(Value::as_object_mut) {
        for (name, schema) in merged {
            schemas.insert(name, schema);
        }
    }
    // allOf inside paths (inline request/response schemas) are merged too.
    if let Some(paths) = doc.get_mut("paths") {
        let mut merger = Merger { file, originals: &originals, done: BTreeMap::new(), stack: Vec::new() };
        merge_in_document(paths, "/paths", &mut merger)?;
    }

    // 3. Unknown fields survive: every object schema with properties keeps the rest.
    keep_unknown_in_document(doc);
    Ok(())
}

/// Visit the document and hand every schema position to [`fix_schema`].
fn walk_document(v: &mut Value, ptr: &str, file: &str) -> Result<()> {
    match v {
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                if key == "example" || key == "examples" || key.starts_with("x-") {
                    continue;
                }
                let child_ptr = format!("{ptr}/{}", esc(&key));
                let child = map.get_mut(&key).expect("key from the same map");
                if key == "schema" {
                    fix_schema(child, &child_ptr, file)?;
                } else if key == "schemas" && ptr == "/components" {
                    if let Some(schemas) = child.as_object_mut() {
                        for (name, schema) in schemas.iter_mut() {
                            fix_schema(schema, &format!("{child_ptr}/{}", esc(name)), file)?;
                        }
                    } else {
                        bail!("{file}: {child_ptr}: expected an object of schemas");
                    }
                } else {
                    walk_document(child, &child_ptr, file)?;
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                walk_document(item, &format!("{ptr}/{i}"), file)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Translate one schema (and its sub-schemas) to OpenAPI 3.0 keywords.
fn fix_schema(v: &mut Value, ptr: &str, file: &str) -> Result<()> {
    if v.is_boolean() {
        // 3.1 boolean schemas: `true` is the permissive schema; `false` matches nothing, which
        // 3.0 cannot say: keep it permissive rather than reject upstream data.
        *v = json!({});
        return Ok(());
    }
    let found = kind(v);
    let map = v.as_object_mut().with_context(|| format!("{file}: {ptr}: expected a schema object, found {found}"))?;

    if let Some(reference) = map.get("$ref").cloned() {
        if !reference.is_string() {
            bail!("{file}: {ptr}/$ref: expected a string");
        }
        // 3.0 ignores everything beside $ref; 3.1 allows siblings. Keep only the reference.
        map.retain(|k, _| k == "$ref");
        return Ok(());
    }

    for key in DROP_31 {
        map.remove(*key);
    }
    if let Some(Value::Array(types)) = map.get("type").cloned() {
        let mut rest: Vec<Value> = Vec::new();
        for t in &types {
            match t.as_str() {
                Some("null") => {
                    map.insert("nullable".into(), json!(true));
                }
                Some(_) => rest.push(t.clone()),
                None => bail!("{file}: {ptr}/type: expected type names, found {t}"),
            }
        }
        map.remove("type");
        match rest.len() {
            0 => {}
            1 => {
                map.insert("type".into(), rest.remove(0));
            }
            _ => {
                let alternatives: Vec<Value> = rest.into_iter().map(|t| json!({ "type": t })).collect();
                map.insert("anyOf".into(), Value::Array(alternatives));
            }
        }
    }
    if let Some(c) = map.remove("const") {
        map.insert("enum".into(), json!([c]));
    }
    for (exclusive, bound) in [("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")] {
        if let Some(n) = map.get(exclusive).filter(|n| n.is_number()).cloned() {
            map.insert(bound.into(), n);
            map.insert(exclusive.into(), json!(true));
        }
    }
    if map.get("additionalProperties") == Some(&Value::Bool(false)) {
        map.remove("additionalProperties");
    }

    if let Some(props) = map.get_mut("properties") {
        let props = props.as_object_mut().with_context(|| format!("{file}: {ptr}/properties: expected an object"))?;
        for (name, schema) in props.iter_mut() {
            fix_schema(schema, &format!("{ptr}/properties/{}", esc(name)), file)?;
        }
    }
    for key in ["items", "not"] {
        if let Some(schema) = map.get_mut(key) {
            fix_schema(schema, &format!("{ptr}/{key}"), file)?;
        }
    }
    if let Some(schema) = map.get_mut("additionalProperties")
        && schema.is_object()
    {
        fix_schema(schema, &format!("{ptr}/additionalProperties"), file)?;
    }
    for key in ["allOf", "oneOf", "anyOf"] {
        if let Some(list) = map.get_mut(key) {
            let list = list.as_array_mut().with_context(|| format!("{file}: {ptr}/{key}: expected an array"))?;
            for (i, schema) in list.iter_mut().enumerate() {
                fix_schema(schema, &format!("{ptr}/{key}/{i}"), file)?;
            }
        }
    }
    Ok(())
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Merges `allOf` compositions; components are merged once and memoized.
struct Merger<'a> {
    file: &'a str,
    originals: &'a Map<String, Value>,
    done: BTreeMap<String, Value>,
    stack: Vec<String>,
}

const COMPONENT_PREFIX: &str = "#/components/schemas/";

impl Merger<'_> {
    /// The merged form of a component schema.
    fn component(&mut self, name: &str) -> Result<Value> {
        if let Some(done) = self.done.get(name) {
            return Ok(done.clone());
        }
        if self.stack.iter().any(|n| n == name) {
            // A cycle through allOf: leave the composition to typify.
            return Ok(self.originals[name].clone());
        }
        let mut schema = self
            .originals
            .get(name)
            .cloned()
            .with_context(|| format!("{}: $ref to {COMPONENT_PREFIX}{name}, which does not exist", self.file))?;
        self.stack.push(name.to_string());
        let result = self.merge(&mut schema, &format!("/components/schemas/{}", esc(name)));
        self.stack.pop();
        result?;
        self.done.insert(name.to_string(), schema.clone());
        Ok(schema)
    }

    /// Merge every mergeable `allOf` inside `v` (post-order).
    fn merge(&mut self, v: &mut Value, ptr: &str) -> Result<()> {
        let Some(map) = v.as_object_mut() else {
            return Ok(());
        };
        if let Some(props) = map.get_mut("properties").and_then(Value::as_object_mut) {
            for (name, schema) in props.iter_mut() {
                self.merge(schema, &format!("{ptr}/properties/{}", esc(name)))?;
            }
        }
        for key in ["items", "not", "additionalProperties"] {
            if let Some(schema) = map.get_mut(key) {
                self.merge(schema, &format!("{ptr}/{key}"))?;
            }
        }
        for key in ["allOf", "oneOf", "anyOf"] {
            if let Some(list) = map.get_mut(key).and_then(Value::as_array_mut) {
                for (i, schema) in list.iter_mut().enumerate() {
                    self.merge(schema, &format!("{ptr}/{key}/{i}"))?;
                }
            }
        }
        let Some(Value::Array(members)) = map.get("allOf").cloned() else {
            return Ok(());
        };
        if members.len() < 2 {
            return Ok(());
        }
        let mut resolved = Vec::with_capacity(members.len());
        for (i, member) in members.iter().enumerate() {
            let schema = match member.get("$ref").and_then(Value::as_str) {
                Some(r) => match r.strip_prefix(COMPONENT_PREFIX) {
                    Some(name) => self.component(name).with_context(|| format!("{ptr}/allOf/{i}"))?,
                    None => return Ok(()), // not a component: leave it to typify
                },
                None => member.clone(),
            };
            if !object_like(&schema) {
                return Ok(());
            }
            resolved.push((member.get("$ref").is_some(), schema));
        }
        let mut properties = Map::new();
        let mut required = BTreeSet::new();
        let mut description = None;
        for (is_ref, schema) in &resolved {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, p) in props {
                    properties.insert(k.clone(), p.clone());
                }
            }
            if let Some(req) = schema.get("required").and_then(Value::as_array) {
                required.extend(req.iter().filter_map(Value::as_str).map(str::to_string));
            }
            if !is_ref && let Some(d) = schema.get("description") {
                description = Some(d.clone());
            }
        }
        map.remove("allOf");
        map.insert("type".into(), json!("object"));
        map.insert("properties".into(), Value::Object(properties));
        if !required.is_empty() {
            map.insert("required".into(), json!(required));
        }
        if !map.contains_key("description")
            && let Some(d) = description
        {
            map.insert("description".into(), d);
        }
        Ok(())
    }
}

/// True when a schema describes a plain object: something whose properties can be merged.
fn object_like(schema: &Value) -> bool {
    let Some(map) = schema.as_object() else {
        return false;
    };
    let typed_object = match map.get("type") {
        None => map.contains_key("properties"),
        Some(t) => t == "object",
    };
    typed_object
        && !["allOf", "oneOf", "anyOf", "enum", "items", "not", "$ref"].iter().any(|k| map.contains_key(*k))
        && !matches!(map.get("additionalProperties"), Some(Value::Object(ap)) if !ap.is_empty())
}

fn merge_in_document(v: &mut Value, ptr: &str, merger: &mut Merger<'_>) -> Result<()> {
    match v {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                let child_ptr = format!("{ptr}/{}", esc(key));
                if key == "schema" {
                    merger.merge(child, &child_ptr)?;
                } else if !key.starts_with("x-") && key != "example" && key != "examples" {
                    merge_in_document(child, &child_ptr, merger)?;
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                merge_in_document(item, &format!("{ptr}/{i}"), merger)?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn keep_unknown_in_document(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if key == "schema" {
                    keep_unknown(child);
                } else if key == "schemas" {
                    if let Some(schemas) = child.as_object_mut() {
                        schemas.values_mut().for_each(keep_unknown);
                    }
                } else if !key.starts_with("x-") && key != "example" && key != "examples" {
                    keep_unknown_in_document(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(keep_unknown_in_document),
        _ => {}
    }
}

/// Give every object schema with properties an `additionalProperties: {}` (when it has none or
/// `true`), recursively. typify turns that into `#[serde(flatten)] extra: Map<String, Value>`.
///
/// A record that itself has a property called `extra` cannot get the flattened map (typify names
/// it `extra` too); it keeps its fields and drops unknown ones, and a warning says so.
pub fn keep_unknown(v: &mut Value) {
    let Some(map) = v.as_object_mut() else {
        return;
    };
    if let Some(props) = map.get_mut("properties").and_then(Value::as_object_mut) {
        props.values_mut().for_each(keep_unknown);
    }
    for key in ["items", "not", "additionalProperties"] {
        if let Some(schema) = map.get_mut(key) {
            keep_unknown(schema);
        }
    }
    for key in ["allOf", "oneOf", "anyOf"] {
        if let Some(list) = map.get_mut(key).and_then(Value::as_array_mut) {
            list.iter_mut().for_each(keep_unknown);
        }
    }
    let has_props = map.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty());
    let permissive = matches!(map.get("additionalProperties"), None | Some(Value::Bool(true)));
    if has_props && permissive {
        let clash = map["properties"]
            .as_object()
            .is_some_and(|p| p.keys().any(|k| heck::ToSnakeCase::to_snake_case(k.as_str()) == "extra"));
        if clash {
            eprintln!(
                "warning: a record with a property named `extra` cannot keep unknown fields (typify's flattened map has that name)"
            );
        } else {
            map.insert("additionalProperties".into(), json!({}));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(schemas: Value) -> Value {
        json!({ "openapi": "3.1.0", "info": { "title": "t", "version": "1" }, "paths": {},
                "components": { "schemas": schemas } })
    }

    #[test]
    fn down_converts_31() {
        let mut d = doc(json!({
            "a": { "type": "object", "additionalProperties": false,
                   "properties": { "n": { "type": ["string", "null"] }, "c": { "const": "x" } } }
        }));
        normalize(&mut d, "t.json").unwrap();
        assert_eq!(d["openapi"], "3.0.3");
        let a = &d["components"]["schemas"]["a"];
        assert_eq!(a["properties"]["n"], json!({ "type": "string", "nullable": true }));
        assert_eq!(a["properties"]["c"], json!({ "enum": ["x"] }));
        assert_eq!(a["additionalProperties"], json!({}), "unknown fields are kept, never denied");
    }

    #[test]
    fn merges_all_of_chains() {
        let mut d = doc(json!({
            "base": { "type": "object", "required": ["id"], "properties": { "id": { "type": "string" } } },
            "mid": { "allOf": [{ "$ref": "#/components/schemas/base" },
                               { "properties": { "m": { "type": "integer" } } }] },
            "leaf": { "allOf": [{ "$ref": "#/components/schemas/mid" }, { "type": "object" }] },
            "described": { "allOf": [{ "$ref": "#/components/schemas/base" }], "description": "d" }
        }));
        normalize(&mut d, "t.json").unwrap();
        let leaf = &d["components"]["schemas"]["leaf"];
        assert!(leaf.get("allOf").is_none());
        let props: Vec<&String> = leaf["properties"].as_object().unwrap().keys().collect();
        assert_eq!(props, ["id", "m"]);
        assert_eq!(leaf["required"], json!(["id"]));
        // A single described reference stays a reference (typify uses the referenced type).
        assert!(d["components"]["schemas"]["described"].get("allOf").is_some());
    }

    #[test]
    fn errors_name_file_and_pointer() {
        let mut d = doc(json!({ "a": { "properties": { "x": 5 } } }));
        let err = normalize(&mut d, "t.json").unwrap_err().to_string();
        assert_eq!(err, "t.json: /components/schemas/a/properties/x: expected a schema object, found a number");
    }
}
