//! Field-report models: the OData `$metadata` document as the system serves it (v3 EDMX 1.0
//! or v4 CSDL) → JSON Schema (here, in Rust) → typify, plus the entity registry (route name ↔
//! entity set ↔ model type ↔ expand set).
//!
//! What the registry holds comes from two files:
//! - the description says what exists: entity and complex types, their properties, and their
//!   navigation properties (v4 `Type=`, v3 `Relationship=` through an `Association`'s ends);
//! - `mirror.toml` ([`crate::mirror`]) says which sets the service mirrors, in its order (the
//!   seed order), and what each sync expands; a set or an expand path the description lacks is
//!   an error naming it.
//!
//! Elements this generator does not know are ignored with a warning; a document it cannot use
//! (no entity container, a key that is not a property, a navigation property whose association
//! is missing) is refused with a message naming the element.
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

use crate::mirror::Mirror;
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
}

/// The schema elements read, and those known to carry nothing the models need.
const READ_ELEMENTS: &[&str] =
    &["EntityType", "ComplexType", "EnumType", "TypeDefinition", "EntityContainer", "Association"];
const UNUSED_ELEMENTS: &[&str] =
    &["Term", "Annotations", "Annotation", "Function", "Action", "Documentation", "Using", "ValueTerm"];

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

pub fn generate(xml: &str, file: &str, mirror: &Mirror, mirror_file: &str) -> Result<(TokenStream, usize, usize)> {
    let registry = registry(xml, file, mirror, mirror_file)?;
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
    let route_of = |set: &str| set.to_lower_camel_case();
    let stages = mirror.stages.iter().map(|stage| {
        let routes = stage.iter().map(|set| route_of(set));
        quote! { &[#(#routes),*] }
    });
    let system_fields = &mirror.system_fields;
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

        /// The steps of `fieldreport setup` and `post`, each the route names of the sets it takes,
        /// in order (from the mirror file).
        pub const STAGES: &[&[&str]] = &[#(#stages),*];

        /// Fields the field-report system sets itself: never sent upstream (from the mirror file).
        pub const SYSTEM_FIELDS: &[&str] = &[#(#system_fields),*];

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

/// Parse the description and build the registry (of the sets `mirror` names) and the JSON
/// Schema definitions.
pub fn registry(xml: &str, file: &str, mirror: &Mirror, mirror_file: &str) -> Result<Registry> {
    let doc = Document::parse(xml).with_context(|| format!("{file}: not well-formed XML"))?;
    let pos = |node: Node| {
        let p = doc.text_pos_at(node.range().start);
        format!("{file}:{}:{}", p.row, p.col)
    };

    let mut aliases: BTreeMap<String, String> = BTreeMap::new();
    let mut types: BTreeMap<String, TypeDef> = BTreeMap::new();
    let mut sets: Vec<Set> = Vec::new();
    let mut containers = 0;
    let schemas: Vec<Node> = doc.descendants().filter(|n| n.is_element() && n.tag_name().name() == "Schema").collect();
    if schemas.is_empty() {
        bail!("{file}: no <Schema> element: not an OData $metadata document");
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

    // OData v3: an association's ends (role → type and multiplicity), by qualified name.
    let mut associations: BTreeMap<String, Vec<(String, String, String)>> = BTreeMap::new();
    for schema in &schemas {
        let ns = attr(*schema, "Namespace", &pos)?;
        for association in schema.children().filter(|n| n.is_element() && n.tag_name().name() == "Association") {
            let ends = association
                .children()
                .filter(|e| e.is_element() && e.tag_name().name() == "End")
                .map(|e| {
                    let multiplicity = e.attribute("Multiplicity").unwrap_or("1").to_string();
                    Ok((attr(e, "Role", &pos)?.to_string(), qualify(attr(e, "Type", &pos)?), multiplicity))
                })
                .collect::<Result<Vec<_>>>()?;
            associations.insert(format!("{ns}.{}", attr(association, "Name", &pos)?), ends);
        }
    }
    // The type a navigation property leads to, in either form.
    let navigation_type = |p: Node| -> Result<String> {
        if let Some(ty) = p.attribute("Type") {
            return Ok(qualify_type(ty));
        }
        let name = attr(p, "Name", &pos)?;
        let Some(relationship) = p.attribute("Relationship") else {
            bail!("{}: <NavigationProperty Name={name:?}> has neither Type nor Relationship", pos(p));
        };
        let to_role = attr(p, "ToRole", &pos)?;
        let ends = associations.get(&qualify(relationship)).with_context(|| {
            format!("{}: <NavigationProperty Name={name:?}>: no <Association> {relationship:?}", pos(p))
        })?;
        let (_, ty, multiplicity) = ends.iter().find(|(role, _, _)| role == to_role).with_context(|| {
            format!(
                "{}: <NavigationProperty Name={name:?}>: the association {relationship:?} has no end {to_role:?}",
                pos(p)
            )
        })?;
        Ok(if multiplicity == "*" { format!("Collection({ty})") } else { ty.clone() })
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
                        let ty = match p.tag_name().name() {
                            "Property" => qualify_type(attr(p, "Type", &pos)?),
                            "NavigationProperty" => navigation_type(p)?,
                            _ => continue,
                        };
                        props.push(Prop { name: attr(p, "Name", &pos)?.to_string(), ty, description: description(p) });
                    }
                    let keys = el
                        .children()
                        .filter(|k| k.is_element() && k.tag_name().name() == "Key")
                        .flat_map(|k| k.children().filter(|r| r.is_element() && r.tag_name().name() == "PropertyRef"));
                    for key in keys {
                        let key_name = attr(key, "Name", &pos)?;
                        // A key of a derived type may be its base's property: checked there.
                        if el.attribute("BaseType").is_none() && !props.iter().any(|p| p.name == key_name) {
                            bail!(
                                "{}: <PropertyRef Name={key_name:?}> of {tag} {name:?} is not one of its properties",
                                pos(key)
                            );
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
                    containers += 1;
                    for s in el.children().filter(|s| s.is_element() && s.tag_name().name() == "EntitySet") {
                        sets.push(Set {
                            name: attr(s, "Name", &pos)?.to_string(),
                            entity_type: qualify(attr(s, "EntityType", &pos)?),
                        });
                    }
                }
                _ if READ_ELEMENTS.contains(&tag) || UNUSED_ELEMENTS.contains(&tag) => {}
                _ => eprintln!("warning: {}: <{tag}> is not used by the generator; ignored", pos(el)),
            }
        }
    }
    if containers == 0 {
        bail!("{file}: no <EntityContainer>: the document names no entity set");
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
    for mirrored in &mirror.sets {
        let set = sets.iter().find(|s| s.name == mirrored.name).with_context(|| {
            format!("{mirror_file}: the mirrored set {:?} is not an entity set of {file}", mirrored.name)
        })?;
        let key =
            builder.reference(&set.entity_type).with_context(|| format!("{file}: <EntitySet Name={:?}>", set.name))?;
        for path in &mirrored.expand {
            expand_target(&types, &set.entity_type, path).with_context(|| {
                format!("{mirror_file}: the set {:?} expands {path:?}, which {file} does not describe", set.name)
            })?;
        }
        entities.push(Entity {
            route: set.name.to_lower_camel_case(),
            set: set.name.clone(),
            type_key: key,
            expand: mirrored.expand.clone(),
        });
    }
    let mut routes = BTreeSet::new();
    for e in &entities {
        if !routes.insert(e.route.clone()) {
            bail!("{file}: two mirrored entity sets have the route name {:?}", e.route);
        }
    }
    Ok(Registry { entities, defs: builder.defs })
}

/// The type an expand path (`Appointments/Contacts`) leads to from `entity_type`, each segment a
/// navigation property (or a property of a structured type) of the type before it.
fn expand_target(types: &BTreeMap<String, TypeDef>, entity_type: &str, path: &str) -> Result<String> {
    let mut current = entity_type.to_string();
    for segment in path.split('/') {
        let prop = properties_of(types, &current)?
            .into_iter()
            .find(|p| p.name == segment)
            .with_context(|| format!("{current} has no property {segment:?}"))?;
        let ty = prop.ty.strip_prefix("Collection(").and_then(|t| t.strip_suffix(')')).unwrap_or(&prop.ty);
        if !types.get(ty).is_some_and(|t| matches!(t.kind, Kind::Structured { .. })) {
            bail!("{current}.{segment} is not a navigation property (it is {})", prop.ty);
        }
        current = ty.to_string();
    }
    Ok(current)
}

/// A structured type's properties, its base types' first.
fn properties_of<'a>(types: &'a BTreeMap<String, TypeDef>, qualified: &str) -> Result<Vec<&'a Prop>> {
    let mut out = Vec::new();
    let mut current = Some(qualified.to_string());
    let mut seen = BTreeSet::new();
    while let Some(name) = current {
        if !seen.insert(name.clone()) {
            bail!("{qualified} derives from itself");
        }
        let def = types.get(&name).with_context(|| format!("unknown type {name}"))?;
        let Kind::Structured { base, props } = &def.kind else { bail!("{name} is not an entity or complex type") };
        out.splice(0..0, props.iter());
        current = base.clone();
    }
    Ok(out)
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

/// The text of a `Core.Description` annotation (v4, attribute or element form) or of a
/// `<Documentation>` element (v3: its `Summary`, then its `LongDescription`).
fn description(node: Node) -> Option<String> {
    if let Some(documentation) = node.children().find(|c| c.is_element() && c.tag_name().name() == "Documentation") {
        let text = |tag: &str| {
            documentation
                .children()
                .find(|c| c.is_element() && c.tag_name().name() == tag)
                .and_then(|c| c.text())
                .map(str::trim)
                .filter(|t| !t.is_empty())
        };
        let parts: Vec<&str> = [text("Summary"), text("LongDescription")].into_iter().flatten().collect();
        if !parts.is_empty() {
            return Some(parts.join("\n\n"));
        }
    }
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

#[cfg(test)]
mod tests {
    use super::registry;
    use crate::mirror::Mirror;

    const V3: &str = include_str!("../../testdata/fieldreport-v3.xml");

    fn mirror(text: &str) -> Mirror {
        Mirror::parse(text, "mirror.toml").unwrap()
    }

    const MIRROR: &str = "stages = [[\"Companies\", \"Contacts\"]]\n\
                          [[set]]\nname = \"Companies\"\nexpand = [\"Contacts/Appointments\", \"MainContact\"]\n\
                          [[set]]\nname = \"Contacts\"\n";

    #[test]
    fn a_v3_document_gives_models_with_every_property_and_room_for_unknown_ones() {
        let registry = registry(V3, "v3.xml", &mirror(MIRROR), "mirror.toml").unwrap();
        let sets: Vec<&str> = registry.entities.iter().map(|e| e.set.as_str()).collect();
        assert_eq!(sets, ["Companies", "Contacts"], "the mirror file's sets, in its order");
        assert_eq!(registry.entities[0].expand, ["Contacts/Appointments", "MainContact"]);
        let company = &registry.defs[&registry.entities[0].type_key];
        let properties = company["properties"].as_object().unwrap();
        for name in ["Id", "Name", "DateModified", "OpeningTime", "Aliases", "LoyaltyLevel", "Contacts", "MainContact"]
        {
            assert!(properties.contains_key(name), "Company lacks {name}: {company}");
        }
        assert_eq!(company["additionalProperties"], serde_json::json!({}), "unknown fields are kept");
        let text = company.to_string();
        assert!(text.contains("Added by the upstream"), "v3 Documentation becomes the description");
        assert!(
            properties["Contacts"].to_string().contains("array"),
            "a `*` end is a collection: {}",
            properties["Contacts"]
        );
        assert!(!properties["MainContact"].to_string().contains("array"), "a `0..1` end is one record");
        assert!(properties["Aliases"].to_string().contains("array"));
    }

    #[test]
    fn what_the_description_lacks_is_named() {
        let error = |xml: &str, mirror_text: &str| match registry(xml, "v3.xml", &mirror(mirror_text), "mirror.toml") {
            Ok(_) => panic!("accepted"),
            Err(error) => format!("{error:#}"),
        };
        let missing = error(V3, "stages = [[\"ServiceRequests\"]]\n[[set]]\nname = \"ServiceRequests\"\n");
        assert!(
            missing.contains("mirror.toml: the mirrored set \"ServiceRequests\" is not an entity set of v3.xml"),
            "{missing}"
        );
        let path =
            error(V3, "stages = [[\"Companies\"]]\n[[set]]\nname = \"Companies\"\nexpand = [\"Contacts/Invoices\"]\n");
        assert!(path.contains("expands \"Contacts/Invoices\"") && path.contains("no property \"Invoices\""), "{path}");
        let scalar = error(V3, "stages = [[\"Companies\"]]\n[[set]]\nname = \"Companies\"\nexpand = [\"Name\"]\n");
        assert!(scalar.contains("not a navigation property"), "{scalar}");
        let no_container = V3.replace("<EntityContainer", "<Ignored").replace("</EntityContainer>", "</Ignored>");
        assert!(error(&no_container, MIRROR).contains("no <EntityContainer>"));
        let bad_key = V3.replacen(r#"<PropertyRef Name="Id"/>"#, r#"<PropertyRef Name="Key"/>"#, 1);
        let bad_key = error(&bad_key, MIRROR);
        assert!(
            bad_key.contains("<PropertyRef Name=\"Key\"> of EntityType \"Company\" is not one of its properties"),
            "{bad_key}"
        );
        let no_association = V3.replace(r#"<Association Name="Company_MainContact">"#, r#"<Association Name="Other">"#);
        let no_association = error(&no_association, MIRROR);
        assert!(
            no_association.contains("MainContact") && no_association.contains("no <Association>"),
            "{no_association}"
        );
    }
}

#[cfg(test)]
mod properties {
    use super::registry;
    use crate::mirror::{Mirror, MirroredSet};
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

    /// The document in OData v4 CSDL or v3 EDMX form (the same types and sets), and the mirror
    /// file naming the mirrored sets.
    fn document(types: &[EntityType], alias: bool, v3: bool) -> (String, Mirror) {
        let prefix = if alias { "Self" } else { "Test.Model" };
        let mut xml = if v3 {
            String::from(
                r#"<?xml version="1.0" encoding="utf-8"?><edmx:Edmx Version="1.0" xmlns:edmx="http://schemas.microsoft.com/ado/2007/06/edmx"><edmx:DataServices>"#,
            )
        } else {
            String::from(
                r#"<?xml version="1.0" encoding="utf-8"?><edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx"><edmx:DataServices>"#,
            )
        };
        let edm =
            if v3 { "http://schemas.microsoft.com/ado/2009/11/edm" } else { "http://docs.oasis-open.org/odata/ns/edm" };
        xml.push_str(&format!(
            r#"<Schema Namespace="Test.Model" {} xmlns="{edm}">"#,
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
        for (name, _, _) in types {
            xml.push_str(&format!(r#"<EntitySet Name="{name}Set" EntityType="{prefix}.{name}"/>"#));
        }
        xml.push_str("</EntityContainer></Schema></edmx:DataServices></edmx:Edmx>");
        let sets: Vec<MirroredSet> = types
            .iter()
            .filter(|(_, _, mirrored)| *mirrored)
            .map(|(name, _, _)| MirroredSet { name: format!("{name}Set"), expand: Vec::new() })
            .collect();
        let stages = vec![sets.iter().map(|set| set.name.clone()).collect()];
        (xml, Mirror { system_fields: Vec::new(), stages, sets })
    }

    proptest! {
        /// Every mirrored set of any such document, v3 or v4, is in the registry, with its
        /// type's every property (keys and all), and only the mirrored ones; aliases resolve
        /// like full names.
        #[test]
        fn the_registry_holds_every_mirrored_set_and_property(types in model(), alias in any::<bool>(), v3 in any::<bool>()) {
            let (xml, mirror) = document(&types, alias, v3);
            let mirrored: Vec<_> = types.iter().filter(|(_, _, m)| *m).collect();
            let registry = registry(&xml, "generated.xml", &mirror, "mirror.toml").unwrap();
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
            let sets = vec![MirroredSet { name: "Tags".into(), expand: Vec::new() }];
            let mirror = Mirror { system_fields: Vec::new(), stages: vec![vec!["Tags".into()]], sets };
            prop_assert!(registry(&text, "noise.xml", &mirror, "mirror.toml").is_err());
        }
    }
}
