//! Upstream record models: lenient JSON Schema → typify.
//!
//! The mirrors store whole upstream documents; the models give typed access and must accept
//! whatever a (newer, customised) upstream sends. So the schemas handed to typify are lenient:
//!
//! - every property is optional (`required` is dropped): upstreams omit fields (`properties=`
//!   selections, nulls not serialized), and a missing field must not fail a record;
//! - enumerations become strings, their known values listed in the doc comment: a value added
//!   upstream must not fail a record;
//! - string formats, patterns, lengths, bounds, `uniqueItems` and defaults are dropped: they make
//!   typify emit validating newtypes, chrono/uuid values, sets and default values, which change
//!   the JSON on the way back (and cost compile time);
//! - every object with properties keeps unknown fields in a flattened `extra` map;
//! - references to scalars and arrays are inlined; only objects (and compositions) become types;
//!   inline objects are hoisted into definitions under a unique name (`ParentProperty`), so typify
//!   never has to invent a name that could clash with a component.
//!
//! - every property also accepts `null` (arrays become `Option<Vec<_>>`, so `[]` survives).
//!
//! Known loss: an explicit `null` on an optional property reads as `None` and is not written
//! back (the key disappears). Code that must keep the exact document keeps the JSON it received.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use anyhow::{Context, Result, bail};
use heck::ToUpperCamelCase;
use proc_macro2::TokenStream;
use serde_json::{Map, Value, json};
use typify::{TypeSpace, TypeSpaceSettings};

use crate::normalize::esc;

/// Typify output for one module.
pub struct ModelSet {
    pub tokens: TokenStream,
    /// Number of Rust types typify generated.
    pub type_count: usize,
    /// Definition key → Rust type name, for the requested roots.
    pub names: BTreeMap<String, String>,
}

/// Run typify over JSON Schema `definitions`; `roots` are the definition keys whose Rust names
/// the caller needs (the registry entries).
pub fn typify(defs: &BTreeMap<String, Value>, roots: &[String], derives: &[&str], file: &str) -> Result<ModelSet> {
    let mut settings = TypeSpaceSettings::default();
    settings.with_map_type("::std::collections::BTreeMap");
    for derive in derives {
        settings.with_derive(derive.to_string());
    }
    let mut space = TypeSpace::new(&settings);
    let mut schemas = Vec::with_capacity(defs.len());
    for (key, value) in defs {
        let schema: schemars::schema::Schema = serde_json::from_value(value.clone())
            .with_context(|| format!("{file}: model {key}: not a valid JSON Schema"))?;
        schemas.push((key.clone(), schema));
    }
    space.add_ref_types(schemas).map_err(|e| anyhow::anyhow!("{file}: typify rejected the models: {e}"))?;
    let mut names = BTreeMap::new();
    for root in roots {
        let reference = schemars::schema::Schema::Object(schemars::schema::SchemaObject {
            reference: Some(format!("#/definitions/{root}")),
            ..Default::default()
        });
        let id = space.add_type(&reference).map_err(|e| anyhow::anyhow!("{file}: model {root}: {e}"))?;
        let ty = space.get_type(&id).map_err(|e| anyhow::anyhow!("{file}: model {root}: {e}"))?;
        names.insert(root.clone(), ty.name());
    }
    Ok(ModelSet { tokens: space.to_stream(), type_count: named_types(&space), names })
}

/// Number of named Rust types (structs, enums, newtypes) a type space emits.
pub fn named_types(space: &TypeSpace) -> usize {
    space
        .iter_types()
        .filter(|t| {
            matches!(
                t.details(),
                typify::TypeDetails::Struct(_) | typify::TypeDetails::Enum(_) | typify::TypeDetails::Newtype(_)
            )
        })
        .count()
}

/// Converts (normalized, 3.0-style) OpenAPI schemas into lenient JSON Schema definitions.
pub struct Lenient<'a> {
    doc: &'a Value,
    file: &'a str,
    /// `$ref` pointer → definition key.
    keys: BTreeMap<String, String>,
    used: BTreeSet<String>,
    queue: VecDeque<String>,
    pub defs: BTreeMap<String, Value>,
    /// References being inlined (cycle guard).
    inlining: Vec<String>,
}

impl<'a> Lenient<'a> {
    /// Component schema names get their keys up front, in sorted order, so a key never depends on
    /// which entity happened to reach a schema first.
    pub fn new(doc: &'a Value, file: &'a str) -> Self {
        let mut this = Self {
            doc,
            file,
            keys: BTreeMap::new(),
            used: BTreeSet::new(),
            queue: VecDeque::new(),
            defs: BTreeMap::new(),
            inlining: Vec::new(),
        };
        if let Some(schemas) = doc.pointer("/components/schemas").and_then(Value::as_object) {
            for name in schemas.keys() {
                let key = this.unique(&type_key(name));
                this.keys.insert(format!("#/components/schemas/{}", esc(name)), key);
            }
        }
        this
    }

    fn unique(&mut self, base: &str) -> String {
        let mut key = base.to_string();
        let mut n = 2;
        while !self.used.insert(key.clone()) {
            key = format!("{base}{n}");
            n += 1;
        }
        key
    }

    /// The definition key for a reference; the target is converted (once) by [`Self::finish`].
    /// `hint` names a definition whose reference is not a component (an inline schema).
    pub fn root(&mut self, reference: &str, ptr: &str, hint: Option<&str>) -> Result<String> {
        self.resolve(reference, ptr)?;
        let key = match self.keys.get(reference) {
            Some(key) => key.clone(),
            None => {
                let last = reference.rsplit('/').next().unwrap_or("Model");
                let base = hint.map_or_else(|| type_key(&unescape(last)), type_key);
                let key = self.unique(&base);
                self.keys.insert(reference.to_string(), key.clone());
                key
            }
        };
        if !self.defs.contains_key(&key) && !self.queue.contains(&reference.to_string()) {
            self.queue.push_back(reference.to_string());
        }
        Ok(key)
    }

    fn resolve(&self, reference: &str, ptr: &str) -> Result<&'a Value> {
        let Some(pointer) = reference.strip_prefix('#') else {
            bail!(
                "{}: {ptr}: $ref {reference:?} points outside the document (external references are not supported)",
                self.file
            );
        };
        self.doc.pointer(pointer).with_context(|| format!("{}: {ptr}: $ref {reference:?} does not resolve", self.file))
    }

    /// Convert every queued definition (and whatever they reach).
    pub fn finish(&mut self) -> Result<()> {
        while let Some(reference) = self.queue.pop_front() {
            let key = self.keys[&reference].clone();
            if self.defs.contains_key(&key) {
                continue;
            }
            // Reserve the slot first: recursive references end here.
            self.defs.insert(key.clone(), json!({}));
            let target = self.resolve(&reference, &reference)?;
            let ptr = reference.trim_start_matches('#').to_string();
            let converted = self.convert(target, &ptr, &key, true)?;
            self.defs.insert(key, converted);
        }
        Ok(())
    }

    fn convert(&mut self, v: &Value, ptr: &str, name: &str, at_root: bool) -> Result<Value> {
        let file = self.file;
        let map = match v {
            Value::Bool(_) => return Ok(json!({})),
            Value::Object(map) => map,
            other => bail!("{file}: {ptr}: expected a schema object, found {other}"),
        };
        if let Some(reference) = map.get("$ref") {
            let reference = reference.as_str().with_context(|| format!("{file}: {ptr}/$ref: expected a string"))?;
            let target = self.resolve(reference, ptr)?;
            if inlinable(target) && !self.inlining.iter().any(|r| r == reference) {
                self.inlining.push(reference.to_string());
                let inner_ptr = reference.trim_start_matches('#').to_string();
                let result = self.convert(target, &inner_ptr, name, false);
                self.inlining.pop();
                return result;
            }
            let key = self.root(reference, ptr, None)?;
            return Ok(json!({ "$ref": format!("#/definitions/{key}") }));
        }
        if !at_root && has_properties(map) {
            let key = self.unique(name);
            self.defs.insert(key.clone(), json!({}));
            let converted = self.convert(v, ptr, &key, true)?;
            self.defs.insert(key.clone(), converted);
            return Ok(json!({ "$ref": format!("#/definitions/{key}") }));
        }
        if let Some(Value::Array(members)) = map.get("allOf")
            && members.len() == 1
            && !has_properties(map)
        {
            return self.convert(&members[0], &format!("{ptr}/allOf/0"), name, at_root);
        }

        let mut out = Map::new();
        let mut description = map.get("description").and_then(Value::as_str).map(str::to_string);
        if let Some(Value::Array(values)) = map.get("enum") {
            let known: Vec<String> = values
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            let note = format!("Known values: {}.", known.join(", "));
            description = Some(match description {
                Some(d) => format!("{}\n\n{note}", d.trim_end()),
                None => note,
            });
        }
        if let Some(d) = description {
            out.insert("description".into(), json!(d));
        }
        let nullable = map.get("nullable") == Some(&Value::Bool(true));
        if let Some(t) = map.get("type") {
            let t = t.as_str().with_context(|| format!("{file}: {ptr}/type: expected a type name"))?;
            if !["string", "integer", "number", "boolean", "array", "object"].contains(&t) {
                bail!("{file}: {ptr}/type: unknown type {t:?}");
            }
            out.insert("type".into(), if nullable { json!([t, "null"]) } else { json!(t) });
            if t == "integer" {
                let format = match map.get("format").and_then(Value::as_str) {
                    Some("int32") => "int32",
                    _ => "int64",
                };
                out.insert("format".into(), json!(format));
            }
        }
        if let Some(props) = map.get("properties") {
            let props = props.as_object().with_context(|| format!("{file}: {ptr}/properties: expected an object"))?;
            let mut converted = Map::new();
            for (prop, schema) in props {
                let sub_name = format!("{name}{}", type_key(prop));
                let sub_ptr = format!("{ptr}/properties/{}", esc(prop));
                let mut prop_schema = self.convert(schema, &sub_ptr, &sub_name, false)?;
                allow_null(&mut prop_schema);
                converted.insert(prop.clone(), prop_schema);
            }
            out.insert("properties".into(), Value::Object(converted));
        }
        match map.get("additionalProperties") {
            Some(Value::Object(schema)) => {
                let sub = self.convert(
                    &Value::Object(schema.clone()),
                    &format!("{ptr}/additionalProperties"),
                    &format!("{name}Value"),
                    false,
                )?;
                out.insert("additionalProperties".into(), sub);
            }
            Some(Value::Bool(true)) | None if has_properties(map) => {
                out.insert("additionalProperties".into(), json!({}));
            }
            _ => {}
        }
        if let Some(items) = map.get("items") {
            let sub = self.convert(items, &format!("{ptr}/items"), &format!("{name}Item"), false)?;
            out.insert("items".into(), sub);
        }
        for key in ["oneOf", "anyOf", "allOf"] {
            if let Some(members) = map.get(key) {
                let members = members.as_array().with_context(|| format!("{file}: {ptr}/{key}: expected an array"))?;
                let mut converted = Vec::with_capacity(members.len());
                for (i, member) in members.iter().enumerate() {
                    let sub_name = format!("{name}Variant{}", i + 1);
                    converted.push(self.convert(member, &format!("{ptr}/{key}/{i}"), &sub_name, false)?);
                }
                out.insert(key.into(), Value::Array(converted));
            }
        }
        Ok(Value::Object(out))
    }
}

/// Let a property be `null` as well: typify then makes arrays `Option<Vec<_>>` rather than a
/// `Vec` that refuses `null` and drops `[]` on the way back.
pub fn allow_null(schema: &mut Value) {
    if let Some(t) = schema.get("type").and_then(Value::as_str).map(str::to_string) {
        schema["type"] = json!([t, "null"]);
    }
}

fn has_properties(map: &Map<String, Value>) -> bool {
    map.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty())
}

/// Scalars, arrays and free-form maps are inlined where they are referenced.
fn inlinable(target: &Value) -> bool {
    let Some(map) = target.as_object() else {
        return true;
    };
    !(has_properties(map)
        || map.contains_key("$ref")
        || map.contains_key("oneOf")
        || map.contains_key("anyOf")
        || map.contains_key("allOf"))
}

fn unescape(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}

/// A definition key that typify keeps as the Rust type name: UpperCamelCase, starting with a
/// letter.
pub fn type_key(name: &str) -> String {
    let key = name.to_upper_camel_case();
    let key: String = key.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    match key.chars().next() {
        Some(c) if c.is_ascii_alphabetic() => key,
        _ => format!("T{key}"),
    }
}
