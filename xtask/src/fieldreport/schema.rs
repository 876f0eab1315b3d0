//! The JSON Schema definitions of the models, built from the description's types.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};

use super::csdl::{Kind, TypeDef};
use crate::models::{self, type_key};

/// Shared definition keys of the tolerant OData number types.
pub(super) const INT64: &str = "EdmInt64";
pub(super) const NUMBER: &str = "EdmNumber";

pub(super) struct Builder<'a> {
    pub(super) types: &'a BTreeMap<String, TypeDef>,
    /// Qualified type name → definition key.
    pub(super) keys: BTreeMap<String, String>,
    pub(super) used: BTreeSet<String>,
    pub(super) defs: BTreeMap<String, Value>,
}

impl Builder<'_> {
    /// The definition key of a structured type, converting it (and what it reaches) once.
    pub(super) fn reference(&mut self, qualified: &str) -> Result<String> {
        if let Some(key) = self.keys.get(qualified) {
            return Ok(key.clone());
        }
        let def = self.types.get(qualified).with_context(|| format!("unknown type {qualified}"))?;
        let Kind::Structured { .. } = def.kind else {
            bail!("{}: {qualified} is not an entity or complex type", def.pos);
        };
        let base = type_key(&def.name);
        let mut key = base.clone();
        let mut n = 2;
        while !self.used.insert(key.clone()) {
            key = format!("{base}{n}");
            n += 1;
        }
        self.keys.insert(qualified.to_string(), key.clone());
        let mut properties = Map::new();
        self.properties(qualified, &mut properties, &mut Vec::new())?;
        let mut schema = Map::new();
        if let Some(d) = &def.description {
            schema.insert("description".into(), json!(d));
        }
        schema.insert("type".into(), json!("object"));
        if properties.keys().any(|k| heck::ToSnakeCase::to_snake_case(k.as_str()) == "extra") {
            eprintln!("warning: {}: a property named `extra` leaves no room for unknown fields", def.pos);
        } else {
            schema.insert("additionalProperties".into(), json!({}));
        }
        schema.insert("properties".into(), Value::Object(properties));
        self.defs.insert(key.clone(), Value::Object(schema));
        Ok(key)
    }

    /// Properties of a structured type, its base types' first.
    pub(super) fn properties(
        &mut self,
        qualified: &str,
        out: &mut Map<String, Value>,
        stack: &mut Vec<String>,
    ) -> Result<()> {
        let def = self.types.get(qualified).with_context(|| format!("unknown type {qualified}"))?;
        if stack.iter().any(|s| s == qualified) {
            bail!("{}: {qualified} derives from itself", def.pos);
        }
        let Kind::Structured { base, props } = &def.kind else {
            bail!("{}: {qualified} is not an entity or complex type", def.pos);
        };
        if let Some(base) = base {
            stack.push(qualified.to_string());
            self.properties(base, out, stack).with_context(|| format!("{}: base type of {qualified}", def.pos))?;
            stack.pop();
        }
        for p in props {
            let mut schema =
                self.schema_of(&p.ty).with_context(|| format!("{}: property {} of {qualified}", def.pos, p.name))?;
            if let (Some(d), Some(obj)) = (&p.description, schema.as_object_mut()) {
                if obj.contains_key("$ref") {
                    schema = json!({ "description": d, "allOf": [schema] });
                } else {
                    let d = match obj.get("description").and_then(Value::as_str) {
                        Some(known) => format!("{d}\n\n{known}"),
                        None => d.clone(),
                    };
                    obj.insert("description".into(), json!(d));
                }
            }
            models::allow_null(&mut schema);
            out.insert(p.name.clone(), schema);
        }
        Ok(())
    }

    pub(super) fn schema_of(&mut self, ty: &str) -> Result<Value> {
        if let Some(inner) = ty.strip_prefix("Collection(").and_then(|t| t.strip_suffix(')')) {
            return Ok(json!({ "type": "array", "items": self.schema_of(inner)? }));
        }
        if let Some(edm) = ty.strip_prefix("Edm.") {
            return Ok(match edm {
                "String" | "Guid" | "Date" | "DateTime" | "DateTimeOffset" | "Time" | "TimeOfDay" | "Duration"
                | "Binary" | "Stream" => json!({ "type": "string" }),
                "Boolean" => json!({ "type": "boolean" }),
                "Byte" | "SByte" | "Int16" | "Int32" => json!({ "type": "integer", "format": "int32" }),
                "Int64" => json!({ "$ref": format!("#/definitions/{INT64}") }),
                "Decimal" | "Double" | "Single" => json!({ "$ref": format!("#/definitions/{NUMBER}") }),
                // Spatial, Untyped and anything newer: any JSON value.
                _ => json!({}),
            });
        }
        let def = self.types.get(ty).with_context(|| format!("unknown type {ty}"))?;
        Ok(match &def.kind {
            Kind::Structured { .. } => json!({ "$ref": format!("#/definitions/{}", self.reference(ty)?) }),
            Kind::Enum { members } => json!({
                "type": "string",
                "description": format!("Known values: {}.", members.join(", ")),
            }),
            Kind::Definition { underlying } => self.schema_of(underlying)?,
        })
    }
}
