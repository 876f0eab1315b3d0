//! Field-report models: OData v4 CSDL → JSON Schema (here, in Rust) → typify, plus the entity
//! registry (route name ↔ entity set ↔ model type ↔ expand set).
//!
//! What the registry holds comes from the CSDL alone:
//! - the mirrored sets are the entity sets annotated with the `Mirrored` term (true), in the
//!   container's order (the seed order);
//! - the expand set of a mirrored set is its navigation-property bindings; a binding whose target
//!   is a navigation-only set (not mirrored) is expanded one level further through that set's own
//!   bindings (`Appointments/Contacts`), since those records exist only inline. Cycles stop.
//!
//! OData JSON writes Edm.Int64 and Edm.Decimal as strings (v3, and v4 with IEEE754Compatible) or
//! as numbers (v4): the models use `EdmInt64` / `EdmNumber`, untagged enums that accept both and
//! write back the form they read. So keys (`Id`) keep their JSON spelling exactly.
//! Timestamps are strings: the system writes them with and without a zone.
//!
//! The per-entity HTTP endpoints (docs/architecture.md, "Routing") are typed through this registry:
//! one marker type per set (`sets::Companies`) implementing `MirroredEntity` (its `EntityInfo`
//! and its model type) and `visit_entities`, which calls a visitor once per set. The service
//! registers list / create / show / update (PUT, PATCH) / delete for each set with dropshot's
//! `ApiEndpoint`, typed with the set's model.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result, bail};
use heck::ToLowerCamelCase;
use proc_macro2::TokenStream;
use quote::quote;
use roxmltree::{Document, Node};
use serde_json::{Map, Value, json};

use crate::models::{self, type_key};

/// Shared definition keys of the tolerant OData number types.
const INT64: &str = "EdmInt64";
const NUMBER: &str = "EdmNumber";

struct Prop {
    name: String,
    ty: String,
    description: Option<String>,
}

enum Kind {
    Structured { base: Option<String>, props: Vec<Prop> },
    Enum { members: Vec<String> },
    Definition { underlying: String },
}

struct TypeDef {
    name: String,
    description: Option<String>,
    kind: Kind,
    pos: String,
}

struct Set {
    name: String,
    entity_type: String,
    bindings: Vec<(String, String)>,
    mirrored: bool,
    pos: String,
}

/// One mirrored entity set, as the registry (and a future endpoint generator) sees it.
pub struct Entity {
    pub route: String,
    pub set: String,
    pub type_key: String,
    pub expand: Vec<String>,
}

/// What the CSDL yields: the mirrored entities and the JSON Schema definitions of their models.
pub struct Registry {
    pub entities: Vec<Entity>,
    pub defs: BTreeMap<String, Value>,
}

pub fn generate(xml: &str, file: &str) -> Result<(TokenStream, usize, usize)> {
    let registry = registry(xml, file)?;
    let roots: Vec<String> = registry.entities.iter().map(|e| e.type_key.clone()).collect();
    let models = models::typify(&registry.defs, &roots, &["::schemars::JsonSchema"], file)?;
    let entity_count = registry.entities.len();
    let rows = registry.entities.iter().map(|e| {
        let route = &e.route;
        let set = &e.set;
        let type_name = &models.names[&e.type_key];
        let expand = &e.expand;
        quote! { EntityInfo { route: #route, set: #set, type_name: #type_name, expand: &[#(#expand),*] } }
    });
    let markers = registry.entities.iter().enumerate().map(|(index, e)| {
        let marker = quote::format_ident!("{}", e.set);
        let model = quote::format_ident!("{}", models.names[&e.type_key]);
        let doc = format!("The entity set `{}` (route `{}`).", e.set, e.route);
        quote! {
            #[doc = #doc]
            pub struct #marker;
            impl super::MirroredEntity for #marker {
                const INFO: super::EntityInfo = super::ENTITIES[#index];
                type Model = super::types::#model;
            }
        }
    });
    let visits = registry.entities.iter().map(|e| {
        let marker = quote::format_ident!("{}", e.set);
        quote! { visitor.visit::<sets::#marker>(); }
    });
    let types = models.tokens;
    let tokens = quote! {
        //! Field-report models (from the OData CSDL) and the registry of mirrored entity sets.
        //!
        //! Every property is optional and unknown fields are kept in `extra`, so a record read
        //! and written back is the same JSON (except that explicit `null`s are dropped).
        //! Int64 and Decimal values accept both the string and the number spelling of OData JSON
        //! and write back the spelling they read (`types::EdmInt64`, `types::EdmNumber`).

        /// One mirrored entity set.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct EntityInfo {
            /// Route name, camelCase, e.g. `costCenters`.
            pub route: &'static str,
            /// OData entity set, e.g. `CostCenters`.
            pub set: &'static str,
            /// Name of the model type in [`types`], e.g. `CostCenter`.
            pub type_name: &'static str,
            /// Navigation properties to `$expand` when reading the set (nested with `/`).
            pub expand: &'static [&'static str],
        }

        /// The mirrored entity sets, in seed order.
        pub const ENTITIES: &[EntityInfo] = &[#(#rows),*];

        /// The entity set named by its route name (`costCenters`) or its set name (`CostCenters`).
        pub fn entity(name: &str) -> Option<&'static EntityInfo> {
            ENTITIES.iter().find(|e| e.route == name || e.set == name)
        }

        /// The entity set with this route name (`costCenters`).
        pub fn by_route(route: &str) -> Option<&'static EntityInfo> {
            ENTITIES.iter().find(|e| e.route == route)
        }

        /// The entity set with this OData set name (`CostCenters`).
        pub fn by_set(set: &str) -> Option<&'static EntityInfo> {
            ENTITIES.iter().find(|e| e.set == set)
        }

        /// Route names of every mirrored set, in seed order.
        pub fn entity_names() -> impl Iterator<Item = &'static str> {
            ENTITIES.iter().map(|e| e.route)
        }

        /// A mirrored entity set as a type, for code that is generic over the sets (the
        /// per-entity HTTP endpoints are registered once per set, each typed with its model).
        pub trait MirroredEntity: Send + Sync + 'static {
            /// The set's row in [`ENTITIES`].
            const INFO: EntityInfo;
            /// The set's model.
            type Model: ::serde::Serialize + ::serde::de::DeserializeOwned + ::schemars::JsonSchema + Clone + Send + Sync + 'static;
        }

        /// Something done once per mirrored entity set.
        pub trait EntityVisitor {
            fn visit<E: MirroredEntity>(&mut self);
        }

        /// Calls the visitor once per mirrored entity set, in seed order.
        pub fn visit_entities<V: EntityVisitor>(visitor: &mut V) {
            #(#visits)*
        }

        /// One type per mirrored entity set, named as the set.
        pub mod sets {
            #(#markers)*
        }

        /// The model types.
        pub mod types {
            #types

            impl EdmInt64 {
                /// The value as a number, whichever spelling it came in.
                pub fn as_i64(&self) -> Option<i64> {
                    match self {
                        Self::String(s) => s.parse().ok(),
                        Self::Int64(n) => Some(*n),
                    }
                }
            }
        }
    };
    Ok((tokens, models.type_count, entity_count))
}

/// Parse the CSDL and build the registry and the JSON Schema definitions.
pub fn registry(xml: &str, file: &str) -> Result<Registry> {
    let doc = Document::parse(xml).with_context(|| format!("{file}: not well-formed XML"))?;
    let pos = |node: Node| {
        let p = doc.text_pos_at(node.range().start);
        format!("{file}:{}:{}", p.row, p.col)
    };

    let mut aliases: BTreeMap<String, String> = BTreeMap::new();
    let mut types: BTreeMap<String, TypeDef> = BTreeMap::new();
    let mut sets: Vec<Set> = Vec::new();
    let schemas: Vec<Node> = doc.descendants().filter(|n| n.is_element() && n.tag_name().name() == "Schema").collect();
    if schemas.is_empty() {
        bail!("{file}: no <Schema> element: not an OData CSDL document");
    }
    for schema in &schemas {
        let ns = attr(*schema, "Namespace", &pos)?;
        if let Some(alias) = schema.attribute("Alias") {
            aliases.insert(alias.to_string(), ns.to_string());
        }
    }
    let qualify = |name: &str| -> String {
        match name.rsplit_once('.') {
            Some((prefix, local)) => match aliases.get(prefix) {
                Some(ns) => format!("{ns}.{local}"),
                None => name.to_string(),
            },
            None => name.to_string(),
        }
    };
    let qualify_type = |ty: &str| -> String {
        match ty.strip_prefix("Collection(").and_then(|t| t.strip_suffix(')')) {
            Some(inner) => format!("Collection({})", qualify(inner)),
            None => qualify(ty),
        }
    };

    for schema in &schemas {
        let ns = attr(*schema, "Namespace", &pos)?;
        for el in schema.children().filter(Node::is_element) {
            let tag = el.tag_name().name();
            match tag {
                "EntityType" | "ComplexType" => {
                    let name = attr(el, "Name", &pos)?;
                    let mut props = Vec::new();
                    for p in el.children().filter(Node::is_element) {
                        match p.tag_name().name() {
                            "Property" | "NavigationProperty" => {
                                let ty = match p.attribute("Type") {
                                    Some(ty) => ty,
                                    None if p.attribute("Relationship").is_some() => bail!(
                                        "{}: <NavigationProperty Name={:?}> uses the OData v3 Relationship form; only OData v4 CSDL (Type=...) is supported",
                                        pos(p),
                                        p.attribute("Name").unwrap_or_default()
                                    ),
                                    None => bail!("{}: <{}> has no Type attribute", pos(p), p.tag_name().name()),
                                };
                                props.push(Prop {
                                    name: attr(p, "Name", &pos)?.to_string(),
                                    ty: qualify_type(ty),
                                    description: description(p),
                                });
                            }
                            _ => {}
                        }
                    }
                    let def = TypeDef {
                        name: name.to_string(),
                        description: description(el),
                        kind: Kind::Structured { base: el.attribute("BaseType").map(&qualify), props },
                        pos: pos(el),
                    };
                    types.insert(format!("{ns}.{name}"), def);
                }
                "EnumType" => {
                    let name = attr(el, "Name", &pos)?;
                    let members = el
                        .children()
                        .filter(|m| m.is_element() && m.tag_name().name() == "Member")
                        .filter_map(|m| m.attribute("Name").map(str::to_string))
                        .collect();
                    types.insert(
                        format!("{ns}.{name}"),
                        TypeDef {
                            name: name.to_string(),
                            description: description(el),
                            kind: Kind::Enum { members },
                            pos: pos(el),
                        },
                    );
                }
                "TypeDefinition" => {
                    let name = attr(el, "Name", &pos)?;
                    types.insert(
                        format!("{ns}.{name}"),
                        TypeDef {
                            name: name.to_string(),
                            description: description(el),
                            kind: Kind::Definition { underlying: qualify_type(attr(el, "UnderlyingType", &pos)?) },
                            pos: pos(el),
                        },
                    );
                }
                "EntityContainer" => {
                    for s in el.children().filter(|s| s.is_element() && s.tag_name().name() == "EntitySet") {
                        let bindings = s
                            .children()
                            .filter(|b| b.is_element() && b.tag_name().name() == "NavigationPropertyBinding")
                            .map(|b| Ok((attr(b, "Path", &pos)?.to_string(), attr(b, "Target", &pos)?.to_string())))
                            .collect::<Result<Vec<_>>>()?;
                        let mirrored = s.children().any(|a| {
                            a.is_element()
                                && a.tag_name().name() == "Annotation"
                                && a.attribute("Term").is_some_and(|t| t.rsplit('.').next() == Some("Mirrored"))
                                && annotation_bool(a)
                        });
                        sets.push(Set {
                            name: attr(s, "Name", &pos)?.to_string(),
                            entity_type: qualify(attr(s, "EntityType", &pos)?),
                            bindings,
                            mirrored,
                            pos: pos(s),
                        });
                    }
                }
                _ => {}
            }
        }
    }

    let mut builder = Builder {
        types: &types,
        keys: BTreeMap::new(),
        used: BTreeSet::from([INT64.to_string(), NUMBER.to_string()]),
        defs: BTreeMap::new(),
    };
    builder.defs.insert(
        INT64.to_string(),
        json!({
            "description": "An Edm.Int64 value. OData JSON writes it as a string (v3, and v4 with IEEE754Compatible) or as a number (v4); both are accepted and written back as read.",
            "oneOf": [{ "type": "string" }, { "type": "integer", "format": "int64" }]
        }),
    );
    builder.defs.insert(
        NUMBER.to_string(),
        json!({
            "description": "An Edm.Decimal, Edm.Double or Edm.Single value. OData JSON writes decimals as strings (v3, and v4 with IEEE754Compatible) or as numbers; every spelling is accepted and written back as read.",
            "oneOf": [{ "type": "string" }, { "type": "integer", "format": "int64" }, { "type": "number" }]
        }),
    );

    let mut entities = Vec::new();
    for set in sets.iter().filter(|s| s.mirrored) {
        let key = builder
            .reference(&set.entity_type)
            .with_context(|| format!("{}: <EntitySet Name={:?}>", set.pos, set.name))?;
        entities.push(Entity {
            route: set.name.to_lower_camel_case(),
            set: set.name.clone(),
            type_key: key,
            expand: expand(set, &sets, &mut Vec::new()),
        });
    }
    if entities.is_empty() {
        bail!(
            "{file}: no entity set is annotated as mirrored (<Annotation Term=\"<Namespace>.Mirrored\" Bool=\"true\"/> inside <EntitySet>)"
        );
    }
    let mut routes = BTreeSet::new();
    for e in &entities {
        if !routes.insert(e.route.clone()) {
            bail!("{file}: two mirrored entity sets have the route name {:?}", e.route);
        }
    }
    Ok(Registry { entities, defs: builder.defs })
}

/// The expand list of a set: its bindings, nested through navigation-only targets.
fn expand(set: &Set, sets: &[Set], stack: &mut Vec<String>) -> Vec<String> {
    stack.push(set.name.clone());
    let mut out = Vec::new();
    for (path, target) in &set.bindings {
        let nested = sets
            .iter()
            .find(|s| &s.name == target)
            .filter(|t| !t.mirrored && !t.bindings.is_empty() && !stack.contains(&t.name));
        match nested {
            Some(t) => {
                for inner in expand(t, sets, stack) {
                    out.push(format!("{path}/{inner}"));
                }
            }
            None => out.push(path.clone()),
        }
    }
    stack.pop();
    out
}

struct Builder<'a> {
    types: &'a BTreeMap<String, TypeDef>,
    /// Qualified type name → definition key.
    keys: BTreeMap<String, String>,
    used: BTreeSet<String>,
    defs: BTreeMap<String, Value>,
}

impl Builder<'_> {
    /// The definition key of a structured type, converting it (and what it reaches) once.
    fn reference(&mut self, qualified: &str) -> Result<String> {
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
    fn properties(&mut self, qualified: &str, out: &mut Map<String, Value>, stack: &mut Vec<String>) -> Result<()> {
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

    fn schema_of(&mut self, ty: &str) -> Result<Value> {
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

fn attr<'a>(node: Node<'a, '_>, name: &str, pos: &dyn Fn(Node) -> String) -> Result<&'a str> {
    node.attribute(name).with_context(|| format!("{}: <{}> has no {name} attribute", pos(node), node.tag_name().name()))
}

/// The text of a `Core.Description` annotation (attribute or element form).
fn description(node: Node) -> Option<String> {
    node.children()
        .find(|a| {
            a.is_element()
                && a.tag_name().name() == "Annotation"
                && a.attribute("Term").is_some_and(|t| t.ends_with(".Description"))
        })
        .and_then(|a| {
            a.attribute("String").map(str::to_string).or_else(|| {
                a.children()
                    .find(|c| c.is_element() && c.tag_name().name() == "String")
                    .and_then(|c| c.text().map(str::to_string))
            })
        })
}

/// The boolean value of an annotation: `Bool="true"`, `<Bool>true</Bool>`, or no value (true).
fn annotation_bool(a: Node) -> bool {
    if let Some(b) = a.attribute("Bool") {
        return b == "true";
    }
    match a.children().find(|c| c.is_element() && c.tag_name().name() == "Bool") {
        Some(c) => c.text().map(str::trim) == Some("true"),
        None => true,
    }
}

#[cfg(test)]
mod properties {
    use super::registry;
    use proptest::prelude::*;

    /// An identifier as CSDL names are written: a capital, then letters and digits.
    fn name() -> impl Strategy<Value = String> {
        let rest: Vec<char> = "abcdefghijklmnopqrstuvwxyz0123456789".chars().collect();
        (
            prop::sample::select(('A'..='Z').collect::<Vec<_>>()),
            prop::collection::vec(prop::sample::select(rest), 1..10),
        )
            .prop_map(|(first, rest)| std::iter::once(first).chain(rest).collect())
    }

    const EDM: &[&str] =
        &["Edm.String", "Edm.Int32", "Edm.Int64", "Edm.Boolean", "Edm.DateTimeOffset", "Edm.Decimal", "Edm.Double"];

    /// An entity type: its name, its properties (name and Edm type), whether its set is mirrored.
    type EntityType = (String, Vec<(String, &'static str)>, bool);

    /// Entity types, each with distinct property names and an Edm type per property.
    fn model() -> impl Strategy<Value = Vec<EntityType>> {
        prop::collection::btree_map(
            name(),
            (prop::collection::btree_map(name(), prop::sample::select(EDM), 1..8), any::<bool>()),
            1..6,
        )
        .prop_map(|types| {
            types.into_iter().map(|(name, (props, mirrored))| (name, props.into_iter().collect(), mirrored)).collect()
        })
    }

    fn csdl(types: &[EntityType], alias: bool) -> String {
        let prefix = if alias { "Self" } else { "Test.Model" };
        let mut xml = String::from(
            r#"<?xml version="1.0" encoding="utf-8"?><edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx"><edmx:DataServices>"#,
        );
        xml.push_str(&format!(
            r#"<Schema Namespace="Test.Model" {} xmlns="http://docs.oasis-open.org/odata/ns/edm">"#,
            if alias { r#"Alias="Self""# } else { "" }
        ));
        for (name, props, _) in types {
            xml.push_str(&format!(r#"<EntityType Name="{name}"><Key><PropertyRef Name="Id"/></Key><Property Name="Id" Type="Edm.Int64" Nullable="false"/>"#));
            for (prop, ty) in props {
                if prop != "Id" {
                    xml.push_str(&format!(r#"<Property Name="{prop}" Type="{ty}"/>"#));
                }
            }
            xml.push_str("</EntityType>");
        }
        xml.push_str(r#"<EntityContainer Name="Container">"#);
        for (name, _, mirrored) in types {
            xml.push_str(&format!(
                r#"<EntitySet Name="{name}Set" EntityType="{prefix}.{name}"><Annotation Term="Test.Model.Mirrored" Bool="{mirrored}"/></EntitySet>"#
            ));
        }
        xml.push_str("</EntityContainer></Schema></edmx:DataServices></edmx:Edmx>");
        xml
    }

    proptest! {
        /// Every mirrored set of any such document is in the registry, with its type's every
        /// property (keys and all), and only the mirrored ones; aliases resolve like full names.
        #[test]
        fn the_registry_holds_every_mirrored_set_and_property(types in model(), alias in any::<bool>()) {
            let xml = csdl(&types, alias);
            let result = registry(&xml, "generated.xml");
            let mirrored: Vec<_> = types.iter().filter(|(_, _, m)| *m).collect();
            if mirrored.is_empty() {
                prop_assert!(result.is_err(), "a document without a mirrored set is refused");
                return Ok(());
            }
            let registry = result.unwrap();
            let sets: Vec<&str> = registry.entities.iter().map(|e| e.set.as_str()).collect();
            let expected: Vec<String> = mirrored.iter().map(|(name, _, _)| format!("{name}Set")).collect();
            prop_assert_eq!(sets, expected.iter().map(String::as_str).collect::<Vec<_>>());
            for ((_, props, _), entity) in mirrored.iter().zip(&registry.entities) {
                let schema = &registry.defs[&entity.type_key];
                let properties = schema["properties"].as_object().unwrap();
                prop_assert!(properties.contains_key("Id"));
                for (prop, _) in props {
                    prop_assert!(properties.contains_key(prop), "{} lacks {}", entity.type_key, prop);
                }
            }
        }

        /// Text that is not CSDL is refused with an error, never a panic.
        #[test]
        fn anything_else_is_refused_not_a_panic(chars in prop::collection::vec(any::<char>(), 0..200)) {
            let text: String = chars.into_iter().collect();
            prop_assert!(registry(&text, "noise.xml").is_err());
        }
    }
}
