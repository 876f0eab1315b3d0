//! Reading the description (v3 EDMX or v4 CSDL) into the registry: its types, their
//! properties and navigation properties, and the sets `mirror.toml` names.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result, bail};
use heck::ToLowerCamelCase;
use roxmltree::{Document, Node};
use serde_json::json;

use super::schema::{Builder, INT64, NUMBER};
use super::{Entity, Registry};
use crate::mirror::Mirror;

pub(super) struct Prop {
    pub(super) name: String,
    pub(super) ty: String,
    pub(super) description: Option<String>,
}

pub(super) enum Kind {
    Structured { base: Option<String>, props: Vec<Prop> },
    Enum { members: Vec<String> },
    Definition { underlying: String },
}

pub(super) struct TypeDef {
    pub(super) name: String,
    pub(super) description: Option<String>,
    pub(super) kind: Kind,
    pub(super) pos: String,
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
    let stamp_literal = stamp_literal(&doc, &types, &sets, &entities, file)?;
    Ok(Registry { entities, defs: builder.defs, stamp_literal })
}

/// How a `$filter` writes a `DateModified` value for this description. OData v4 writes an
/// `Edm.DateTimeOffset` bare; v1 to v3 write a typed literal, `datetime'…'` for an
/// `Edm.DateTime` (the field-report system's) and `datetimeoffset'…'` for an
/// `Edm.DateTimeOffset`, and refuse a bare one. The type is the mirrored sets' `DateModified`
/// (every one that has it must agree); a description without one gets its version's form.
fn stamp_literal(
    doc: &Document,
    types: &BTreeMap<String, TypeDef>,
    sets: &[Set],
    entities: &[Entity],
    file: &str,
) -> Result<Option<String>> {
    let v4 = doc.root_element().attribute("Version").is_some_and(|version| version.starts_with('4'));
    let mut declared: Option<&str> = None;
    for entity in entities {
        let Some(set) = sets.iter().find(|s| s.name == entity.set) else { continue };
        let props = properties_of(types, &set.entity_type)?;
        let Some(prop) = props.iter().find(|p| p.name == "DateModified") else { continue };
        match declared {
            Some(ty) if ty != prop.ty => {
                bail!("{file}: DateModified is {ty} in one mirrored set and {} in {}", prop.ty, entity.set)
            }
            _ => declared = Some(&prop.ty),
        }
    }
    Ok(match (v4, declared) {
        (true, _) => None,
        (false, Some("Edm.DateTimeOffset")) => Some("datetimeoffset".to_string()),
        (false, _) => Some("datetime".to_string()),
    })
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
pub(super) fn properties_of<'a>(types: &'a BTreeMap<String, TypeDef>, qualified: &str) -> Result<Vec<&'a Prop>> {
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
