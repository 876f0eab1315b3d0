//! ERP models: every entity the description serves, found from its URL layout, as typify models,
//! plus a registry (model name ↔ path ↔ type).
//!
//! An entity is a path `/<name>/id/{<param>}` whose GET answers JSON; its model is that answer's
//! schema. Nothing here knows a particular ERP's entity names: another API version or a tenant's
//! description goes through the same code.

use anyhow::{Context, Result};
use proc_macro2::TokenStream;
use quote::quote;
use serde_json::Value;

use crate::models::{self, Lenient};
use crate::normalize::{self, esc};

/// One ERP entity resource.
struct Entity {
    /// `customer`
    name: String,
    /// `/customer`
    path: String,
    /// Definition key of its model.
    key: String,
}

/// JSON Schema definitions by key.
pub type Definitions = std::collections::BTreeMap<String, Value>;

/// Every entity model of an ERP description: name and definition key, and the JSON Schema
/// definitions they reach (what [`generate`] types, and what `upstream-diff` compares).
pub fn models(doc: &Value, file: &str) -> Result<(Vec<(String, String)>, Definitions)> {
    let (entities, lenient) = entities(doc, file)?;
    Ok((entities.into_iter().map(|e| (e.name, e.key)).collect(), lenient))
}

fn entities(doc: &Value, file: &str) -> Result<(Vec<Entity>, Definitions)> {
    let mut doc = doc.clone();
    normalize::normalize(&mut doc, file)?;
    let paths = doc
        .get("paths")
        .and_then(Value::as_object)
        .with_context(|| format!("{file}: /paths: missing or not an object"))?;

    let mut lenient = Lenient::new(&doc, file);
    let mut entities = Vec::new();
    for (path, item) in paths {
        let Some(name) = entity_name(path) else {
            continue;
        };
        let ptr = format!("/paths/{}/get", esc(path));
        let Some(get) = item.get("get") else {
            continue;
        };
        match response_schema(&doc, get, &ptr, file)? {
            Some(reference) => {
                let key = lenient.root(&reference, &ptr, Some(name))?;
                entities.push(Entity { name: name.to_string(), path: format!("/{name}"), key });
            }
            None => eprintln!("warning: {file}: {ptr}: no JSON success response; {name} is not generated"),
        }
    }
    anyhow::ensure!(
        !entities.is_empty(),
        "{file}: no entity found (expected paths like /<entity>/id/{{id}} with a JSON GET)"
    );
    lenient.finish()?;
    entities.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((entities, lenient.defs))
}

pub fn generate(doc: &Value, file: &str) -> Result<(TokenStream, usize, usize)> {
    let (entities, defs) = entities(doc, file)?;
    let roots: Vec<String> = entities.iter().map(|e| e.key.clone()).collect();
    let models = models::typify(&defs, &roots, &[], file)?;

    let rows = entities.iter().map(|e| {
        let name = &e.name;
        let path = &e.path;
        let type_name = &models.names[&e.key];
        quote! { ModelInfo { name: #name, path: #path, type_name: #type_name } }
    });
    // A type that serves one entity only gets the typed-access trait; shared ones would be
    // ambiguous.
    let mut uses: std::collections::BTreeMap<&str, usize> = Default::default();
    for e in &entities {
        *uses.entry(models.names[&e.key].as_str()).or_default() += 1;
    }
    let typed = entities.iter().enumerate().filter(|(_, e)| uses[models.names[&e.key].as_str()] == 1).map(|(i, e)| {
        let ident = proc_macro2::Ident::new(&models.names[&e.key], proc_macro2::Span::call_site());
        quote! { impl ErpModel for types::#ident { const INFO: &'static ModelInfo = &MODELS[#i]; } }
    });
    let types = models.tokens;
    let tokens = quote! {
        //! ERP models, one per entity resource of the ERP description, and their registry.
        //!
        //! Models are lenient: every property is optional, enumerations are strings (their known
        //! values are in the docs), and unknown fields are kept in `extra`, so a record read and
        //! written back is the same JSON (except that explicit `null`s are dropped).

        /// One entity resource of the ERP.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct ModelInfo {
            /// The ERP's own name of the entity, e.g. `customer`.
            pub name: &'static str,
            /// Path of the resource under the API root, e.g. `/customer`.
            pub path: &'static str,
            /// Name of the model type in [`types`], e.g. `Customer`.
            pub type_name: &'static str,
        }

        /// Every entity resource, sorted by name.
        pub const MODELS: &[ModelInfo] = &[#(#rows),*];

        /// The entity called `name` (the ERP's spelling, e.g. `salesOrder`).
        pub fn model(name: &str) -> Option<&'static ModelInfo> {
            MODELS
                .binary_search_by(|m| m.name.cmp(name))
                .ok()
                .map(|i| &MODELS[i])
        }

        /// The names of every entity, sorted.
        pub fn model_names() -> impl Iterator<Item = &'static str> {
            MODELS.iter().map(|m| m.name)
        }

        /// Typed access to a mirrored record: the model type of one entity and its registry row,
        /// e.g. `<types::Customer as ErpModel>::INFO.name == "customer"`.
        pub trait ErpModel: ::serde::Serialize + ::serde::de::DeserializeOwned {
            const INFO: &'static ModelInfo;
        }

        #(#typed)*

        /// The model types.
        pub mod types {
            #types
        }
    };
    Ok((tokens, models.type_count, entities.len()))
}

/// `/customer/id/{id}` → `customer`.
fn entity_name(path: &str) -> Option<&str> {
    let rest = path.strip_prefix('/')?;
    let mut parts = rest.split('/');
    let (name, id, param) = (parts.next()?, parts.next()?, parts.next()?);
    let is_param = param.starts_with('{') && param.ends_with('}');
    (parts.next().is_none() && id == "id" && is_param && !name.is_empty() && !name.contains('{')).then_some(name)
}

/// The `$ref` (or JSON pointer of the inline schema) of an operation's JSON success answer.
fn response_schema(doc: &Value, op: &Value, ptr: &str, file: &str) -> Result<Option<String>> {
    let Some(responses) = op.get("responses").and_then(Value::as_object) else {
        return Ok(None);
    };
    let Some((code, response)) = responses
        .iter()
        .find(|(code, _)| code.as_str() == "200")
        .or_else(|| responses.iter().find(|(code, _)| code.starts_with('2')))
    else {
        return Ok(None);
    };
    let mut response_ptr = format!("{ptr}/responses/{}", esc(code));
    let mut response = response;
    if let Some(reference) = response.get("$ref").and_then(Value::as_str) {
        let pointer = reference.strip_prefix('#').with_context(|| {
            format!("{file}: {response_ptr}/$ref: external reference {reference:?} is not supported")
        })?;
        response = doc
            .pointer(pointer)
            .with_context(|| format!("{file}: {response_ptr}/$ref: {reference:?} does not resolve"))?;
        response_ptr = pointer.to_string();
    }
    let Some(content) = response.get("content").and_then(Value::as_object) else {
        return Ok(None);
    };
    let Some((media, media_type)) = content
        .iter()
        .find(|(m, _)| m.as_str() == "application/json")
        .or_else(|| content.iter().find(|(m, _)| m.contains("json")))
    else {
        return Ok(None);
    };
    let Some(schema) = media_type.get("schema") else {
        return Ok(None);
    };
    Ok(Some(match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => reference.to_string(),
        None => format!("#{response_ptr}/content/{}/schema", esc(media)),
    }))
}
