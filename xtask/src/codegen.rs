//! `cargo xtask codegen`: the whole `generated/` crate, as a list of files in memory.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use quote::quote;
use serde_json::Value;

use crate::mirror::Mirror;
use crate::{erp, fieldreport, leasing, render};

pub const LEASING_SPEC: &str = "spec/upstream/leasing/openapi.json";
pub const FIELDREPORT_SPEC: &str = "spec/upstream/fieldreport/metadata.xml";
/// The project's choice of mirrored field-report sets, whichever description it is applied to.
pub const MIRROR: &str = "spec/upstream/fieldreport/mirror.toml";
pub const ERP_SPEC: &str = "spec/upstream/erp/openapi.json";
pub const GENERATED_SRC: &str = "generated/src";
pub const GENERATED_MANIFEST: &str = "generated/Cargo.toml";

/// Dependencies of the generated code (kept lean: no chrono, uuid or regress; the models are
/// lenient and never need them).
const DEPENDENCIES: &str = r#"[dependencies]
progenitor-client = "0.15"
reqwest = { version = "0.13", default-features = false, features = ["json", "rustls"] }
schemars = "0.8"
serde = { version = "1", features = ["derive"] }
serde_json = "1"
"#;

/// Where each description is read from, as given (relative to the workspace root) and named in
/// the files' headers.
pub struct Sources {
    root: PathBuf,
    fieldreport: PathBuf,
    /// The mirror file; the project's own ([`MIRROR`]) when `None`.
    mirror: Option<PathBuf>,
    erp: PathBuf,
}

impl Sources {
    pub fn new(root: &Path, fieldreport_spec: &Path, mirror: Option<&Path>, erp_spec: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            fieldreport: fieldreport_spec.to_path_buf(),
            mirror: mirror.map(Path::to_path_buf),
            erp: erp_spec.to_path_buf(),
        }
    }

    /// The committed descriptions.
    pub fn committed(root: &Path) -> Self {
        Self::new(root, Path::new(FIELDREPORT_SPEC), None, Path::new(ERP_SPEC))
    }

    /// The mirror file as given, or the project's own: a `$metadata` saved anywhere is
    /// generated with the sets the project mirrors.
    pub fn mirror(&self) -> PathBuf {
        self.mirror.clone().unwrap_or_else(|| PathBuf::from(MIRROR))
    }

    /// A path as given on the command line (relative paths are relative to the workspace root,
    /// which is also the directory cargo runs xtask from).
    fn resolve(&self, path: &Path) -> PathBuf {
        if path.is_absolute() { path.to_path_buf() } else { self.root.join(path) }
    }
}

/// The generated crate: `src/` files (relative name → contents) and counts for the report.
pub struct Crate {
    pub files: Vec<(String, String)>,
    /// Module, number of generated types, number of registry entries.
    pub type_counts: Vec<(&'static str, usize, usize)>,
}

fn read(path: &Path, name: &str) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("{name}: cannot read {}", path.display()))
}

fn read_json(path: &Path, name: &str) -> Result<Value> {
    let text = read(path, name)?;
    serde_json::from_str(&text).with_context(|| format!("{name}: not valid JSON"))
}

pub fn generate(sources: &Sources) -> Result<Crate> {
    let mut files = Vec::new();
    let mut type_counts = Vec::new();

    let leasing_doc = read_json(&sources.root.join(LEASING_SPEC), LEASING_SPEC)?;
    let (tokens, count, operations) = leasing::generate(&leasing_doc, LEASING_SPEC)?;
    files.push(("leasing.rs".to_string(), render::file(LEASING_SPEC, tokens)?));
    type_counts.push(("leasing", count, operations));

    let fieldreport_name = sources.fieldreport.to_string_lossy().into_owned();
    let csdl = read(&sources.resolve(&sources.fieldreport), &fieldreport_name)?;
    let mirror_path = sources.mirror();
    let mirror_name = mirror_path.to_string_lossy().into_owned();
    let mirror = Mirror::parse(&read(&sources.resolve(&mirror_path), &mirror_name)?, &mirror_name)?;
    let (tokens, count, entities) = fieldreport::generate(&csdl, &fieldreport_name, &mirror, &mirror_name)?;
    files.push(("fieldreport.rs".to_string(), render::file(&fieldreport_name, tokens)?));
    type_counts.push(("fieldreport", count, entities));
    // The per-entity field-report endpoints are typed through the generated registry
    // (`fieldreport::sets`, `MirroredEntity`, `visit_entities`); see `fieldreport/`.

    let erp_name = sources.erp.to_string_lossy().into_owned();
    let erp_doc = read_json(&sources.resolve(&sources.erp), &erp_name)?;
    let (tokens, count, models) = erp::generate(&erp_doc, &erp_name)?;
    files.push(("erp.rs".to_string(), render::file(&erp_name, tokens)?));
    type_counts.push(("erp", count, models));

    let lib = quote! {
        //! Typed upstream clients, models and registries, written only by `cargo xtask codegen`
        //! from the descriptions under `spec/upstream/`. Regenerate, never edit.

        // The modules are formatted by prettyplease, and `cargo xtask check` compares them
        // byte for byte: rustfmt must leave them alone.
        #[rustfmt::skip]
        #[allow(clippy::all, clippy::pedantic, unused_imports, dead_code, rustdoc::all)]
        pub mod erp;
        #[rustfmt::skip]
        #[allow(clippy::all, clippy::pedantic, unused_imports, dead_code, rustdoc::all)]
        pub mod fieldreport;
        #[rustfmt::skip]
        #[allow(clippy::all, clippy::pedantic, unused_imports, dead_code, rustdoc::all)]
        pub mod leasing;
    };
    let sources_named = format!("{LEASING_SPEC}, {fieldreport_name}, {erp_name}");
    files.insert(0, ("lib.rs".to_string(), render::file(&sources_named, lib)?));
    Ok(Crate { files, type_counts })
}

/// The in-workspace manifest of `generated/`.
pub fn workspace_manifest() -> String {
    format!(
        r#"# @generated by cargo xtask codegen. DO NOT EDIT.
[package]
name = "integration-service-generated"
version = "0.1.0"
edition.workspace = true
rust-version.workspace = true
license.workspace = true
publish = false
description = "Code written only by `cargo xtask codegen`: typed upstream clients, models and registries. Never edit by hand."

[lib]
path = "src/lib.rs"

{DEPENDENCIES}"#
    )
}

/// The manifest of a standalone copy (`--out DIR`), outside any workspace.
fn standalone_manifest() -> String {
    format!(
        r#"# @generated by cargo xtask codegen. DO NOT EDIT.
[package]
name = "integration-service-generated"
version = "0.1.0"
edition = "2024"
publish = false

[lib]
path = "src/lib.rs"

# Not part of any enclosing workspace.
[workspace]

{DEPENDENCIES}"#
    )
}

/// Write the `src/` files into `dir`; returns how many were written.
pub fn write_src(crate_: &Crate, dir: &Path) -> Result<usize> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, contents) in &crate_.files {
        let path = dir.join(name);
        std::fs::write(&path, contents).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(crate_.files.len())
}

/// Write the in-workspace manifest (`generated/Cargo.toml`).
pub fn write_manifest(root: &Path) -> Result<()> {
    let path = root.join(GENERATED_MANIFEST);
    std::fs::write(&path, workspace_manifest()).with_context(|| format!("writing {}", path.display()))
}

/// Write a complete crate (Cargo.toml + src/) into `dir`.
pub fn write_standalone(crate_: &Crate, dir: &Path) -> Result<()> {
    write_src(crate_, &dir.join("src"))?;
    let path = dir.join("Cargo.toml");
    std::fs::write(&path, standalone_manifest()).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{ERP_SPEC, FIELDREPORT_SPEC, Sources, generate};

    /// A `$metadata` saved where no `mirror.toml` lies beside it is generated with the
    /// project's own mirror: the same sets as the committed description gives.
    #[test]
    fn a_description_saved_elsewhere_is_generated_with_the_project_s_mirror() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let dir = std::env::temp_dir().join(format!("xtask-codegen-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let saved = dir.join("downloaded-metadata.xml");
        std::fs::copy(root.join(FIELDREPORT_SPEC), &saved).unwrap();
        let elsewhere = generate(&Sources::new(root, &saved, None, Path::new(ERP_SPEC)));
        std::fs::remove_dir_all(&dir).unwrap();
        let elsewhere = elsewhere.expect("generated without a mirror.toml beside the description");
        let committed = generate(&Sources::committed(root)).unwrap();
        assert_eq!(elsewhere.type_counts, committed.type_counts);
        let names = |c: &super::Crate| c.files.iter().map(|(name, _)| name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&elsewhere), names(&committed));
    }
}
