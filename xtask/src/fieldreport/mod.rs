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

use std::collections::BTreeMap;

use anyhow::Result;
use heck::ToLowerCamelCase;
use proc_macro2::TokenStream;
use quote::quote;
use serde_json::Value;

use crate::mirror::Mirror;
use crate::models::{self};

mod csdl;
#[cfg(test)]
mod properties;
mod schema;
#[cfg(test)]
mod tests;

pub use self::csdl::registry;

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
    /// How a `$filter` writes a `DateModified` value: the prefix of its typed literal
    /// (`datetime`), or none for a bare one (see `csdl::stamp_literal`).
    pub stamp_literal: Option<String>,
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
    let stamp_literal = match &registry.stamp_literal {
        Some(prefix) => quote! { Some(#prefix) },
        None => quote! { None },
    };
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

        /// How a `$filter` writes a `DateModified` value, as the description declares the
        /// property: the prefix of a typed literal (OData v3: `datetime'2024-03-28T17:31:17'` for
        /// an `Edm.DateTime`, `datetimeoffset'…'` for an `Edm.DateTimeOffset`), or `None` for a
        /// bare one (OData v4: `2024-03-28T17:31:17Z`).
        pub const STAMP_LITERAL: Option<&str> = #stamp_literal;

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
