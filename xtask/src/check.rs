//! `cargo xtask check`: regenerate in memory and compare with the files in the tree; check that
//! no files of `src/` import each other and that they keep docs/architecture.md's layers
//! (`imports/`), that what `docs/` names exists (`docs.rs`), and that `spec/openapi.json`
//! breaks no client of the last release (`compat.rs`).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use similar::TextDiff;

use crate::{client, codegen, compat, docs, imports, openapi};

/// How many diff lines to show per stale file.
const DIFF_LINES: usize = 60;

pub fn run(root: &Path) -> Result<ExitCode> {
    let sources = codegen::Sources::committed(root);
    let generated = codegen::generate(&sources)?;
    let mut expected: Vec<(String, String, &str)> = generated
        .files
        .into_iter()
        .map(|(name, contents)| (format!("{}/{name}", codegen::GENERATED_SRC), contents, "cargo xtask codegen"))
        .collect();
    expected.push((codegen::GENERATED_MANIFEST.to_string(), codegen::workspace_manifest(), "cargo xtask codegen"));
    // The service's own client, from the committed document.
    expected
        .extend(client::generate(root)?.into_iter().map(|(name, contents)| (name, contents, "cargo xtask codegen")));
    // The generated files are compared even when the service does not build.
    let mut stale = 0;
    // Each vendored crate: the published one plus its committed patch, small, and used.
    for vendored in crate::vendored::entries(root)? {
        let (patch, changed) = crate::vendored::diff(root, &vendored)?;
        expected.push((vendored.patch_file(), patch, "cargo xtask vendor-patch"));
        if changed > crate::vendored::MOST_CHANGED_LINES {
            stale += 1;
            eprintln!(
                "{}: {changed} changed lines in files of {} {} (at most {})\n",
                vendored.dir,
                vendored.name,
                vendored.version,
                crate::vendored::MOST_CHANGED_LINES
            );
        }
        if !crate::vendored::is_used(root, &vendored)? {
            stale += 1;
            eprintln!(
                "unused: Cargo.lock no longer takes {} {} from {} ([patch.crates-io]); drop the patch or vendor the new version\n",
                vendored.name, vendored.version, vendored.dir
            );
        }
    }
    match openapi::document(root) {
        Ok(doc) => expected.push((openapi::DOCUMENT.to_string(), doc, "cargo xtask openapi")),
        Err(err) => {
            stale += 1;
            eprintln!("cannot check {}: {err:#}\n", openapi::DOCUMENT);
        }
    }

    for (name, want, fix) in &expected {
        let have = std::fs::read_to_string(root.join(name)).unwrap_or_default();
        if &have == want {
            continue;
        }
        stale += 1;
        eprintln!("stale: {name} (run `{fix}` to update it)");
        let diff = TextDiff::from_lines(have.as_str(), want.as_str());
        let text = diff
            .unified_diff()
            .context_radius(3)
            .header(&format!("a/{name} (in the tree)"), &format!("b/{name} (generated)"))
            .to_string();
        let total = text.lines().count();
        for line in text.lines().take(DIFF_LINES) {
            eprintln!("{line}");
        }
        if total > DIFF_LINES {
            eprintln!("... ({} more diff lines)", total - DIFF_LINES);
        }
        eprintln!();
    }
    // Files in generated/src or clients/rust/src that codegen no longer writes are stale too.
    for dir in [codegen::GENERATED_SRC, client::CLIENT_SRC] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else { continue };
        let mut extra: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| format!("{dir}/{}", e.file_name().to_string_lossy()))
            .filter(|name| !expected.iter().any(|(n, _, _)| n == name))
            .collect();
        extra.sort();
        for name in extra {
            stale += 1;
            eprintln!("stale: {name} is not written by codegen (delete it, then run `cargo xtask codegen`)");
        }
    }
    // The committed document keeps the compatibility promise (see compat.rs).
    stale += check_compatibility(root)?;
    // No import circles between the files of src/ (see imports/ for what counts as an import).
    let graph = imports::graph(root)?;
    let circles = imports::circles(&graph);
    for circle in &circles {
        stale += 1;
        eprintln!("{}", imports::describe(&graph, circle));
    }
    for line in imports::vocabulary_imports(&graph) {
        stale += 1;
        eprintln!("{line}");
    }
    // The layer table and import rules of docs/architecture.md (see imports/layers.rs).
    let broken = imports::layers::broken(&graph, imports::layers::RULES, imports::layers::CRATE_RULES);
    for line in &broken {
        stale += 1;
        eprintln!("{line}");
    }
    if broken.is_empty() {
        println!("the layers hold: {} rules", imports::layers::RULES.len() + imports::layers::CRATE_RULES.len());
    }
    // What the README and docs/ name exists (see docs.rs).
    let problems = docs::check(root)?;
    for line in &problems {
        stale += 1;
        eprintln!("{line}");
    }
    if problems.is_empty() {
        println!("the documents name what exists: {} and {}/*.md", docs::README, docs::DOCS);
    }
    if circles.is_empty() {
        println!("no import circles: {} files of src/", graph.files.len());
    } else {
        eprintln!(
            "{} import circle(s) between files of src/: break each (shared types into a module that imports none of them)\n",
            circles.len()
        );
    }
    if stale == 0 {
        println!("up to date: {} files", expected.len());
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("{stale} stale or unchecked file(s) or import circle(s)");
        Ok(ExitCode::FAILURE)
    }
}

/// The breaking changes of the committed document against the last release's
/// ([`compat::BASELINE`]), each printed; their number.
fn check_compatibility(root: &Path) -> Result<usize> {
    let read = |name: &str| -> Result<serde_json::Value> {
        let text = std::fs::read_to_string(root.join(name)).with_context(|| format!("reading {name}"))?;
        serde_json::from_str(&text).with_context(|| format!("{name}: not JSON"))
    };
    let (released, current) = (read(compat::BASELINE)?, read(openapi::DOCUMENT)?);
    let breaking = compat::breaking(&released, &current);
    for change in &breaking {
        eprintln!("breaking: {change}");
    }
    if breaking.is_empty() {
        println!("compatible with the last release: {} against {}", openapi::DOCUMENT, compat::BASELINE);
    } else {
        eprintln!(
            "{} breaking change(s) of {} against the last release ({}): keep the old shape beside the new one, or make the change at a release (docs/clients.md, \"Compatibility\")\n",
            breaking.len(),
            openapi::DOCUMENT,
            compat::BASELINE
        );
    }
    Ok(breaking.len())
}
