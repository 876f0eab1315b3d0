//! Vendored crates (`vendor/<name>`, patched in by the root `Cargo.toml`'s
//! `[patch.crates-io]`): each must be the registry's published crate of the same version plus
//! exactly the changes in its committed `vendor/<name>.patch`, small, and actually used.
//!
//! The published crate is cargo's own download (a throw-away package depending on it, then
//! `cargo fetch`), unpacked from cargo's cache. `cargo xtask vendor-patch` writes the `.patch`
//! files; `cargo xtask check` compares them and fails on an unused `[patch]` entry (a `cargo
//! update` past the vendored version would otherwise drop it silently).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use similar::TextDiff;

/// The most changed lines a vendored crate may carry in files the published crate has (files
/// it lacks, such as licence texts its package links to, are not counted).
pub const MOST_CHANGED_LINES: usize = 200;

/// One `[patch.crates-io]` entry.
pub struct Vendored {
    pub name: String,
    pub version: String,
    /// `vendor/<name>`, relative to the workspace root.
    pub dir: String,
}

impl Vendored {
    /// `vendor/<name>.patch`.
    pub fn patch_file(&self) -> String {
        format!("{}.patch", self.dir)
    }
}

/// The `[patch.crates-io]` entries of the root manifest with a `path`.
pub fn entries(root: &Path) -> Result<Vec<Vendored>> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).context("reading Cargo.toml")?;
    let mut entries = Vec::new();
    let mut in_patch = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_patch = line == "[patch.crates-io]";
            continue;
        }
        if !in_patch || line.starts_with('#') || line.is_empty() {
            continue;
        }
        let (name, rest) = line.split_once('=').context("a [patch.crates-io] line")?;
        let dir = rest.split("path = \"").nth(1).and_then(|p| p.split('"').next());
        let Some(dir) = dir else { bail!("[patch.crates-io] {}: only path patches are checked", name.trim()) };
        let version = package_version(&root.join(dir))?;
        entries.push(Vendored { name: name.trim().to_string(), version, dir: dir.to_string() });
    }
    Ok(entries)
}

fn package_version(dir: &Path) -> Result<String> {
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).with_context(|| format!("{}", dir.display()))?;
    let package = manifest.split("[package]").nth(1).context("a [package] section")?;
    package
        .lines()
        .find_map(|line| line.trim().strip_prefix("version = \"").and_then(|v| v.strip_suffix('"')))
        .map(str::to_string)
        .with_context(|| format!("the version of {}", dir.display()))
}

/// Whether `Cargo.lock` resolves the crate to the vendored path (a registry source there means
/// the `[patch]` entry is no longer used).
pub fn is_used(root: &Path, vendored: &Vendored) -> Result<bool> {
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).context("reading Cargo.lock")?;
    Ok(lock.split("[[package]]").any(|package| {
        package.contains(&format!("name = \"{}\"\n", vendored.name))
            && package.contains(&format!("version = \"{}\"\n", vendored.version))
            && !package.contains("source = ")
    }))
}

/// The unified diff from the published crate to the vendored one, file by file in path order,
/// and the number of changed lines in files the published crate has.
pub fn diff(root: &Path, vendored: &Vendored) -> Result<(String, usize)> {
    let published = published(root, vendored)?;
    let ours = root.join(&vendored.dir);
    let files: BTreeSet<String> = files_under(&published)?.into_iter().chain(files_under(&ours)?).collect();
    let mut text = String::new();
    let mut changed = 0;
    for file in files {
        let before = std::fs::read_to_string(published.join(&file)).ok();
        let after = std::fs::read_to_string(ours.join(&file)).ok();
        if before == after {
            continue;
        }
        let diff = TextDiff::from_lines(before.as_deref().unwrap_or(""), after.as_deref().unwrap_or(""));
        // Licence texts the package links to (the published crate has the links only) are the
        // vendoring's due, not a change of the code.
        if before.is_some() && !file.starts_with("LICENSE") {
            changed += diff.iter_all_changes().filter(|change| change.tag() != similar::ChangeTag::Equal).count();
        }
        let old = if before.is_some() { format!("a/{file}") } else { "/dev/null".to_string() };
        let new = if after.is_some() { format!("b/{file}") } else { "/dev/null".to_string() };
        text.push_str(&diff.unified_diff().context_radius(3).header(&old, &new).to_string());
    }
    let _ = std::fs::remove_dir_all(published.parent().unwrap_or(&published));
    Ok((text, changed))
}

/// The published crate, fetched by cargo and unpacked into a temporary folder.
fn published(root: &Path, vendored: &Vendored) -> Result<PathBuf> {
    let work = std::env::temp_dir().join(format!("xtask-vendored-{}-{}", vendored.name, std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let package = work.join("fetch");
    std::fs::create_dir_all(package.join("src"))?;
    std::fs::write(package.join("src/lib.rs"), "")?;
    std::fs::write(
        package.join("Cargo.toml"),
        format!(
            "[package]\nname = \"vendored-check\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[workspace]\n\n\
             [dependencies]\n{} = {{ version = \"={}\", default-features = false }}\n",
            vendored.name, vendored.version
        ),
    )?;
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["fetch", "--quiet", "--manifest-path"])
        .arg(package.join("Cargo.toml"))
        .current_dir(root)
        .status()
        .context("running cargo fetch")?;
    if !status.success() {
        bail!("cargo fetch of {} {} failed", vendored.name, vendored.version);
    }
    let crate_file = cached_crate(&vendored.name, &vendored.version)?;
    let unpacked = work.join("published");
    std::fs::create_dir_all(&unpacked)?;
    let status =
        Command::new("tar").args(["-xzf"]).arg(&crate_file).arg("-C").arg(&unpacked).status().context("running tar")?;
    if !status.success() {
        bail!("unpacking {} failed", crate_file.display());
    }
    Ok(unpacked.join(format!("{}-{}", vendored.name, vendored.version)))
}

/// `<name>-<version>.crate` in cargo's download cache.
fn cached_crate(name: &str, version: &str) -> Result<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))
        .context("neither CARGO_HOME nor HOME is set")?;
    let cache = home.join("registry/cache");
    for index in std::fs::read_dir(&cache).with_context(|| format!("{}", cache.display()))? {
        let candidate = index?.path().join(format!("{name}-{version}.crate"));
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    bail!("{name}-{version}.crate is not in {}", cache.display())
}

/// Every file under `dir`, relative to it, with `/` between folders; in no particular order.
pub fn files_under(dir: &Path) -> Result<Vec<String>> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).with_context(|| format!("{}", current.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path.strip_prefix(dir)?.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_is_used_only_while_the_lock_takes_the_crate_from_its_path() {
        let root = std::env::temp_dir().join(format!("xtask-vendored-test-{}", std::process::id()));
        std::fs::create_dir_all(root.join("vendor/demo")).unwrap();
        std::fs::write(
            root.join("Cargo.toml"),
            "[workspace]\n\n[patch.crates-io]\n# why\ndemo = { path = \"vendor/demo\" }\n",
        )
        .unwrap();
        std::fs::write(root.join("vendor/demo/Cargo.toml"), "[package]\nname = \"demo\"\nversion = \"1.2.3\"\n")
            .unwrap();
        let entries = entries(&root).unwrap();
        assert_eq!((entries[0].name.as_str(), entries[0].version.as_str()), ("demo", "1.2.3"));
        assert_eq!(entries[0].patch_file(), "vendor/demo.patch");
        let lock =
            |source: &str| format!("[[package]]\nname = \"demo\"\nversion = \"1.2.3\"\n{source}dependencies = []\n");
        std::fs::write(root.join("Cargo.lock"), lock("")).unwrap();
        assert!(is_used(&root, &entries[0]).unwrap());
        let registry = "source = \"registry+https://github.com/rust-lang/crates.io-index\"\n";
        std::fs::write(root.join("Cargo.lock"), lock(registry)).unwrap();
        assert!(!is_used(&root, &entries[0]).unwrap(), "taken from the registry: the patch is unused");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
