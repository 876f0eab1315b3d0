//! `cargo xtask swagger-ui`: the Swagger UI files under `assets/swagger-ui/` are the npm
//! registry's `swagger-ui-dist` package, byte for byte.
//!
//! `assets/swagger-ui/vendored.json` pins the package version, the registry's integrity hash
//! of its tarball (`sha512-…`, as `npm view swagger-ui-dist@VERSION dist.integrity` prints it)
//! and the SHA-256 of every vendored file. The check fetches that tarball with `npm pack`,
//! verifies the tarball against the pinned integrity, unpacks it and compares each vendored
//! file with the package's. `--update VERSION` vendors another version the same way. The
//! service's own tests check the files against the manifest offline.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail, ensure};
use base64::Engine;
use serde_json::{Value, json};
use sha2::{Digest, Sha256, Sha512};

pub const DIR: &str = "assets/swagger-ui";
pub const MANIFEST: &str = "assets/swagger-ui/vendored.json";
const PACKAGE: &str = "swagger-ui-dist";
/// The files the service serves or must carry (the licence), as named in the package.
const FILES: &[&str] = &[
    "swagger-ui-bundle.js",
    "swagger-ui.css",
    "favicon-32x32.png",
    "LICENSE",
    "NOTICE",
    "swagger-ui-bundle.js.LICENSE.txt",
];

pub fn check(root: &Path) -> Result<ExitCode> {
    let manifest = read_manifest(root)?;
    let version = manifest["version"].as_str().context("vendored.json: version")?;
    let integrity = manifest["integrity"].as_str().context("vendored.json: integrity")?;
    let unpacked = fetch(version, integrity)?;
    let mut differ = 0;
    for name in FILES {
        let theirs =
            std::fs::read(unpacked.join(name)).with_context(|| format!("{PACKAGE}@{version} has no {name}"))?;
        let ours_path = root.join(DIR).join(name);
        let ours = std::fs::read(&ours_path).with_context(|| format!("reading {}", ours_path.display()))?;
        let pinned = manifest["files"][*name].as_str().unwrap_or_default();
        if ours != theirs {
            differ += 1;
            eprintln!("differs from {PACKAGE}@{version}: {DIR}/{name}");
        } else if pinned != sha256_hex(&ours) {
            differ += 1;
            eprintln!("{MANIFEST}: the SHA-256 of {name} is not the file's");
        }
    }
    let _ = std::fs::remove_dir_all(unpacked.parent().expect("the package folder has a parent"));
    if differ > 0 {
        eprintln!("run `cargo xtask swagger-ui --update {version}` to restore the registry's files");
        return Ok(ExitCode::FAILURE);
    }
    println!("{DIR}: {} files equal {PACKAGE}@{version} ({integrity})", FILES.len());
    Ok(ExitCode::SUCCESS)
}

pub fn update(root: &Path, version: &str) -> Result<ExitCode> {
    let integrity = registry_integrity(version)?;
    let unpacked = fetch(version, &integrity)?;
    let dir = root.join(DIR);
    std::fs::create_dir_all(&dir)?;
    let mut files = serde_json::Map::new();
    for name in FILES {
        let bytes = std::fs::read(unpacked.join(name)).with_context(|| format!("{PACKAGE}@{version} has no {name}"))?;
        std::fs::write(dir.join(name), &bytes)?;
        files.insert(name.to_string(), json!(sha256_hex(&bytes)));
    }
    let _ = std::fs::remove_dir_all(unpacked.parent().expect("the package folder has a parent"));
    let manifest = json!({
        "package": PACKAGE,
        "version": version,
        "integrity": integrity,
        "files": files,
    });
    let mut text = serde_json::to_string_pretty(&manifest)?;
    text.push('\n');
    std::fs::write(root.join(MANIFEST), text)?;
    println!("vendored {PACKAGE}@{version} ({integrity}) into {DIR}");
    Ok(ExitCode::SUCCESS)
}

fn read_manifest(root: &Path) -> Result<Value> {
    let path = root.join(MANIFEST);
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let manifest: Value = serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    ensure!(manifest["package"] == PACKAGE, "{MANIFEST}: package must be {PACKAGE}");
    Ok(manifest)
}

/// The integrity the registry publishes for this version.
fn registry_integrity(version: &str) -> Result<String> {
    let output = Command::new("npm")
        .args(["view", "--json", &format!("{PACKAGE}@{version}"), "dist.integrity"])
        .output()
        .context("running npm (install Node.js and npm)")?;
    ensure!(output.status.success(), "npm view failed: {}", String::from_utf8_lossy(&output.stderr));
    let integrity: String = serde_json::from_slice(&output.stdout).context("npm view printed no integrity")?;
    Ok(integrity)
}

/// Fetches the package tarball with `npm pack`, verifies it against `integrity` and unpacks it;
/// returns the unpacked `package/` folder (inside a fresh temporary folder).
fn fetch(version: &str, integrity: &str) -> Result<PathBuf> {
    let work = std::env::temp_dir().join(format!("xtask-swagger-ui-{}-{version}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let output = Command::new("npm")
        .args(["pack", "--silent", "--pack-destination"])
        .arg(&work)
        .arg(format!("{PACKAGE}@{version}"))
        .output()
        .context("running npm pack (install Node.js and npm)")?;
    ensure!(output.status.success(), "npm pack failed: {}", String::from_utf8_lossy(&output.stderr));
    let tarball = work.join(format!("{PACKAGE}-{version}.tgz"));
    let bytes = std::fs::read(&tarball).with_context(|| format!("npm pack wrote no {}", tarball.display()))?;
    let actual = format!("sha512-{}", base64::engine::general_purpose::STANDARD.encode(Sha512::digest(&bytes)));
    if actual != integrity {
        let _ = std::fs::remove_dir_all(&work);
        bail!("{PACKAGE}@{version}: the tarball's integrity is {actual}, the pinned one {integrity}");
    }
    let status = Command::new("tar").arg("-xzf").arg(&tarball).arg("-C").arg(&work).status().context("running tar")?;
    ensure!(status.success(), "tar could not unpack {}", tarball.display());
    Ok(work.join("package"))
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}
