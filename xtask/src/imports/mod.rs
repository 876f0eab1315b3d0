//! `cargo xtask check`'s import check: no circles between the files of `src/`.
//!
//! The check builds a graph of file → file imports and fails naming the files of each strongly
//! connected component: files that import each other, directly or around a loop.
//!
//! What counts as an import of a file:
//! - a path in a `use` item (`pub use` too: a re-export is an import of the file it names) or in
//!   code (`crate::a::b::C`, `super::X`, `self::x::Y`, `integration_service::…` from the binary's
//!   `main.rs`, `$crate::…` in macros; attributes' tokens count, string literals do not);
//! - a path that starts with a name a `use` bound (`use crate::store; store::lease::f()`) or with
//!   a child module of the current module (`child::f()`), resolved through that name;
//! - the file depends on the file that defines the longest module prefix of the path:
//!   `crate::a::b::C` → `src/a/b.rs` or `src/a/b/mod.rs` when `a::b` is a module, else
//!   `src/a.rs` or `src/a/mod.rs` (`b` is an item of `a`).
//!
//! What does not:
//! - `mod child;` (a parent's `mod.rs` declaring `pub mod child;` does not import the child);
//! - a path into the file itself (`use super::*` in its `mod tests`);
//! - paths to other crates.
//!
//! Re-exports are followed to the file that defines the item: `crate::store::Store`, re-exported
//! by `src/store/mod.rs` (`pub use self::x::Store;`) from `src/store/x.rs`, is an import of
//! `src/store/x.rs`, and the `pub use` is `src/store/mod.rs`'s own import of `src/store/x.rs`.
//! The same holds for a child's view of a name its parent imports (`super::X` where the parent
//! has `use a::X;`). So a child's `use super::X` is an import of its parent when the parent
//! defines `X`, and of the file that does otherwise; a parent that re-exports its children to
//! the rest of the crate does not make a circle with them. Glob re-exports (`pub use x::*`) are
//! not followed: a path through one is an import of the re-exporting file.
//!
//! The files are found from the crate roots (`src/lib.rs`, `src/main.rs`) through their `mod`
//! declarations, inline modules included; a file no root reaches is not checked.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result};

pub mod layers;
mod resolve;
mod scan;
#[cfg(test)]
mod tests;

use self::scan::build;

/// The library crate's name, as `main.rs` spells it.
const LIB_CRATE: &str = "integration_service";
/// A name for the binary crate's root module (not a valid identifier, so it cannot collide).
const BIN_CRATE: &str = "<main>";
/// How many of the paths that make one edge a report names.
const SHOWN_PATHS: usize = 3;

/// Files (relative to the workspace root, `/`-separated) and their imports of each other.
#[derive(Debug, Default)]
pub struct Graph {
    /// For each importing file, each imported file and the paths (as written) that import it.
    pub edges: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
    /// Every file reached from a crate root.
    pub files: BTreeSet<String>,
    /// For each importing file, the files its code imports, its tests' imports left out.
    pub code: BTreeMap<String, BTreeSet<String>>,
    /// For each file, the paths its code (not its tests) names in other crates, as written.
    pub external: BTreeMap<String, BTreeSet<String>>,
}

/// The graph of the files under `src/` of the crate at `root`.
pub fn graph(root: &Path) -> Result<Graph> {
    build(|file| {
        let path = root.join(file);
        if !path.exists() {
            return Ok(None);
        }
        std::fs::read_to_string(&path).map(Some).with_context(|| format!("reading {}", path.display()))
    })
}

/// The circles of a graph: each strongly connected component of more than one file, its files
/// sorted; the components sorted by their first file.
pub fn circles(graph: &Graph) -> Vec<Vec<String>> {
    let nodes: Vec<&String> = graph.files.iter().collect();
    let index: BTreeMap<&String, usize> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let succ: Vec<Vec<usize>> = nodes
        .iter()
        .map(|n| {
            graph.edges.get(*n).map(|to| to.keys().filter_map(|t| index.get(t).copied()).collect()).unwrap_or_default()
        })
        .collect();
    let mut circles: Vec<Vec<String>> = tarjan(&succ)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let mut files: Vec<String> = c.into_iter().map(|i| nodes[i].clone()).collect();
            files.sort();
            files
        })
        .collect();
    circles.sort();
    circles
}

/// The folder of the shared vocabulary: its files may import only each other.
pub const VOCABULARY: &str = "src/vocabulary/";

/// Imports of a file of the vocabulary (`VOCABULARY`) from a file outside it, one line each.
pub fn vocabulary_imports(graph: &Graph) -> Vec<String> {
    let mut lines = Vec::new();
    for (from, targets) in graph.edges.iter().filter(|(from, _)| from.starts_with(VOCABULARY)) {
        for (to, paths) in targets.iter().filter(|(to, _)| !to.starts_with(VOCABULARY)) {
            let shown: Vec<&str> = paths.iter().map(String::as_str).take(SHOWN_PATHS).collect();
            lines.push(format!("{from} -> {to}: {} (the vocabulary imports nothing of the areas)", shown.join(", ")));
        }
    }
    lines
}

/// The report of one circle: its files, then each import between them and what makes it.
pub fn describe(graph: &Graph, circle: &[String]) -> String {
    let mut text = format!("import circle ({} files): {}\n", circle.len(), circle.join(", "));
    for from in circle {
        let Some(targets) = graph.edges.get(from) else { continue };
        for (to, paths) in targets.iter().filter(|(to, _)| circle.contains(*to)) {
            let mut shown: Vec<&str> = paths.iter().map(String::as_str).take(SHOWN_PATHS).collect();
            if paths.len() > SHOWN_PATHS {
                shown.push("…");
            }
            text.push_str(&format!("  {from} -> {to}: {}\n", shown.join(", ")));
        }
    }
    text
}

/// Strongly connected components (Tarjan), each a list of node indices.
fn tarjan(succ: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        succ: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &s.succ[v] {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(component);
        }
    }
    let n = succ.len();
    let mut s = State {
        succ,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}
