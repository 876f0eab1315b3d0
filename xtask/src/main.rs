//! Developer tasks for the integration service (`cargo xtask ...`).
//!
//! - `codegen`: turn the upstream descriptions under `spec/upstream/` into the `generated/` crate,
//!   and the service's own `spec/openapi.json` into the `clients/rust/` crate.
//! - `openapi`: write the service's own OpenAPI document to `spec/openapi.json`.
//! - `check`: regenerate everything in memory and fail with a diff when a committed file is stale;
//!   fail naming the files of each import circle in `src/` and each break of the layers
//!   (`imports/`), and each file or Rust name `docs/` names that the tree lacks (`docs.rs`).
//! - `bench`: measure the release build against baselines taken in the same run.
//! - `swagger-ui`: check (or `--update`) the vendored Swagger UI against the npm registry's package.
//! - `test`: set up what the test suite needs (Python tools, Chromium, PostgreSQL) and run it.
//! - `vendor-patch`: write `vendor/<name>.patch`, each vendored crate against its published one.

mod bench;
mod check;
mod client;
mod codegen;
mod compat;
mod docs;
mod erp;
mod fieldreport;
mod imports;
mod leasing;
mod mirror;
mod models;
mod normalize;
mod openapi;
mod render;
mod swagger_ui;
mod test;
mod upstream_diff;
mod vendored;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "Developer tasks for integration-service")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate the `generated/` crate from the upstream descriptions in `spec/upstream/`, and the
    /// `clients/rust/` crate (the service's Rust client) from `spec/openapi.json`.
    Codegen {
        /// The field-report system's `$metadata` document, as it serves it (OData v3 EDMX or v4
        /// CSDL).
        #[arg(long, value_name = "FILE", default_value = codegen::FIELDREPORT_SPEC)]
        fieldreport_spec: PathBuf,
        /// Which field-report sets are mirrored and what each sync expands (default: the
        /// project's own, `spec/upstream/fieldreport/mirror.toml`).
        #[arg(long, value_name = "FILE")]
        mirror: Option<PathBuf>,
        /// ERP description to generate the ERP models from (OpenAPI 3.0.x or 3.1.x, JSON).
        #[arg(long, value_name = "FILE", default_value = codegen::ERP_SPEC)]
        erp_spec: PathBuf,
        /// Write a complete standalone crate (Cargo.toml + src/) to DIR instead of `generated/src`.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Print what changed between the committed upstream descriptions and new ones, per
    /// mirrored field-report set or ERP model; exit 1 unless every change is additive.
    UpstreamDiff {
        /// A new `$metadata` document of the field-report system.
        #[arg(long, value_name = "FILE")]
        fieldreport_spec: Option<PathBuf>,
        /// A new ERP description (OpenAPI JSON).
        #[arg(long, value_name = "FILE")]
        erp_spec: Option<PathBuf>,
    },
    /// Write the service's OpenAPI document to `spec/openapi.json`.
    Openapi,
    /// Regenerate `generated/`, `clients/rust/` and `spec/openapi.json` in memory; fail with a diff
    /// when stale, and name the files of each import circle in `src/`.
    Check,
    /// Build the release binary, run it against its simulators (`sandbox`), measure each scenario against a
    /// baseline of the same run; print a table and write it to `target/bench/`.
    Bench {
        /// The database the service uses: sqlite or postgres (`BENCH_POSTGRES_URL`, else
        /// `TEST_POSTGRES_URL`, else the local server; a database is created for the run).
        #[arg(long, default_value = "sqlite")]
        db: String,
        /// Every scenario briefly; fails when a scenario saw an error (for CI).
        #[arg(long)]
        quick: bool,
        /// Only these scenarios, comma-separated, run in the bench's order (the baseline is always
        /// measured).
        #[arg(long)]
        scenario: Option<String>,
        /// Records of the `scale` scenario's field-report set (its ERP model gets a quarter);
        /// default 1,000,000, or 20,000 with `--quick`.
        #[arg(long)]
        scale: Option<u64>,
    },
    /// Check that `assets/swagger-ui/` holds the npm registry's `swagger-ui-dist` files
    /// (fetched with `npm pack`, verified against the pinned integrity); `--update VERSION`
    /// vendors that version instead.
    SwaggerUi {
        #[arg(long, value_name = "VERSION")]
        update: Option<String>,
    },
    /// Write `vendor/<name>.patch` for each vendored crate: its changes against the registry's
    /// published crate of the same version (`cargo xtask check` compares them).
    VendorPatch,
    /// The one test command: set up the Python test tools (in `target/test-tools/venv`),
    /// Chromium and PostgreSQL as needed, say what was set up, and run `cargo test --workspace`
    /// on SQLite and Postgres (`TEST_POSTGRES_URL`, else the local server).
    Test {
        /// Then fuzz the service against its own document (`.ci/fuzz`, schemathesis).
        #[arg(long)]
        fuzz: bool,
        /// Passed on to `cargo test` (after `--workspace`), e.g. `-- --test-threads 1`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "CARGO_TEST_ARGS")]
        cargo_args: Vec<String>,
    },
}

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<ExitCode> {
    let cli = Cli::parse();
    let here = std::env::current_dir().context("reading the current directory")?;
    let root = workspace_root(&here)?;
    match cli.command {
        Command::Codegen { fieldreport_spec, mirror, erp_spec, out } => {
            let sources = codegen::Sources::new(&root, &fieldreport_spec, mirror.as_deref(), &erp_spec);
            let crate_ = codegen::generate(&sources)?;
            match out {
                None => {
                    let dir = root.join(codegen::GENERATED_SRC);
                    let written = codegen::write_src(&crate_, &dir)?;
                    codegen::write_manifest(&root)?;
                    println!("wrote {written} files to {} and {}", codegen::GENERATED_SRC, codegen::GENERATED_MANIFEST);
                    let client = client::generate(&root)?;
                    client::write(&root, &client)?;
                    println!("wrote {} and {} from {}", client::CLIENT_SRC, client::CLIENT_MANIFEST, openapi::DOCUMENT);
                }
                Some(dir) => {
                    codegen::write_standalone(&crate_, &dir)?;
                    println!("wrote a standalone crate to {}", dir.display());
                }
            }
            for (module, types, entries) in &crate_.type_counts {
                let what = match *module {
                    "leasing" => "operations",
                    "fieldreport" => "mirrored entities",
                    _ => "entity models",
                };
                println!("{module}: {types} types, {entries} {what}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::UpstreamDiff { fieldreport_spec, erp_spec } => {
            anyhow::ensure!(
                fieldreport_spec.is_some() || erp_spec.is_some(),
                "name a new description: --fieldreport-spec FILE and/or --erp-spec FILE"
            );
            let mut breaking = false;
            if let Some(new) = fieldreport_spec {
                let report = upstream_diff::fieldreport(&root, &new)?;
                breaking |= upstream_diff::print(&root, "field-report set", &report);
            }
            if let Some(new) = erp_spec {
                let report = upstream_diff::erp(&root, &new)?;
                breaking |= upstream_diff::print(&root, "ERP model", &report);
            }
            Ok(if breaking { ExitCode::FAILURE } else { ExitCode::SUCCESS })
        }
        Command::Openapi => {
            let doc = openapi::document(&root)?;
            let path = root.join(openapi::DOCUMENT);
            std::fs::write(&path, doc).with_context(|| format!("writing {}", path.display()))?;
            println!("wrote {}", openapi::DOCUMENT);
            Ok(ExitCode::SUCCESS)
        }
        Command::Check => check::run(&root),
        Command::Bench { db, quick, scenario, scale } => bench::run(&root, &db, quick, scenario.as_deref(), scale),
        Command::SwaggerUi { update: None } => swagger_ui::check(&root),
        Command::SwaggerUi { update: Some(version) } => swagger_ui::update(&root, &version),
        Command::Test { fuzz, cargo_args } => test::run(&root, fuzz, &cargo_args),
        Command::VendorPatch => {
            for vendored in vendored::entries(&root)? {
                let (patch, changed) = vendored::diff(&root, &vendored)?;
                std::fs::write(root.join(vendored.patch_file()), &patch)?;
                println!("wrote {} ({changed} changed lines in published files)", vendored.patch_file());
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The workspace root: the nearest directory from `here` upward whose `Cargo.toml` declares a
/// `[workspace]`. Found from where xtask runs, not from where it was built: a binary built in
/// another clone that shares the target folder works on this one.
fn workspace_root(here: &Path) -> Result<PathBuf> {
    here.ancestors()
        .find(|dir| {
            std::fs::read_to_string(dir.join("Cargo.toml"))
                .is_ok_and(|manifest| manifest.lines().any(|line| line.trim() == "[workspace]"))
        })
        .map(Path::to_path_buf)
        .with_context(|| format!("no Cargo.toml with a [workspace] in {} or above it", here.display()))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// From the root and from a folder inside it, the workspace is this one, whatever
    /// directory xtask was built in; outside any workspace, it is an error.
    #[test]
    fn the_workspace_is_found_from_where_xtask_runs() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        assert_eq!(super::workspace_root(root).unwrap(), root);
        assert_eq!(super::workspace_root(&root.join("src/api")).unwrap(), root);
        // xtask's own manifest is a member's, not the workspace's.
        assert_eq!(super::workspace_root(&root.join("xtask/src")).unwrap(), root);
        assert!(super::workspace_root(Path::new("/")).is_err());
    }
}
