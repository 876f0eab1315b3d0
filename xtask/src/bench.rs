//! `cargo xtask bench`: builds the service and the bench (`bench/`, our load generator and
//! scenarios) in release, in one cargo invocation so they share their dependencies' builds,
//! and runs the bench against the service. A load generator built without optimisation would
//! measure itself, which is why it is not part of this (debug-built) xtask.
//!
//! `--quick` judges no numbers, only that every scenario runs without an error, so it builds
//! the debug profile: CI has built the dependencies that way for the tests already, where a
//! release build would start from scratch.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};

pub fn run(root: &Path, db: &str, quick: bool, scenario: Option<&str>, scale: Option<u64>) -> Result<ExitCode> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let profile = if quick { "debug" } else { "release" };
    let status = Command::new(&cargo)
        .args([
            "build",
            "--profile",
            if quick { "dev" } else { "release" },
            "--quiet",
            "--package",
            "integration-service",
            "--package",
            "integration-service-bench",
            // The service's hidden `bench-*` commands (its baselines).
            "--features",
            "integration-service/bench-support",
        ])
        .current_dir(root)
        .status()
        .with_context(|| format!("running cargo build ({profile})"))?;
    if !status.success() {
        bail!("cargo build ({profile}) failed");
    }
    let target = std::env::var("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|_| root.join("target"));
    let mut bench = Command::new(target.join(profile).join("integration-service-bench"));
    bench
        .arg("--service-binary")
        .arg(target.join(profile).join("integration-service"))
        .arg("--out")
        .arg(target.join("bench"))
        .args(["--db", db]);
    if quick {
        bench.arg("--quick");
    }
    if let Some(scenario) = scenario {
        bench.args(["--scenario", scenario]);
    }
    if let Some(scale) = scale {
        bench.args(["--scale", &scale.to_string()]);
    }
    let status = bench.current_dir(root).status().context("running the bench")?;
    Ok(if status.success() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
