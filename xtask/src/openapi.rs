//! `cargo xtask openapi`: the service's own OpenAPI document, as the service prints it.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

pub const DOCUMENT: &str = "spec/openapi.json";

/// The command that prints the document (the service's `openapi` CLI command).
pub const COMMAND: &[&str] = &["run", "--quiet", "--package", "integration-service", "--", "openapi"];

/// Run the service's `openapi` command and return what it printed.
pub fn document(root: &Path) -> Result<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = Command::new(&cargo)
        .args(COMMAND)
        .current_dir(root)
        .output()
        .with_context(|| format!("running {cargo} {}", COMMAND.join(" ")))?;
    if !output.status.success() {
        bail!("`cargo {}` failed ({}):\n{}", COMMAND.join(" "), output.status, String::from_utf8_lossy(&output.stderr));
    }
    String::from_utf8(output.stdout).context("the OpenAPI document is not UTF-8")
}
