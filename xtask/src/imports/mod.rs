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
use std::str::FromStr;

use anyhow::{Context, Result};
use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

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

/// A module: where it is defined and the names it binds.
#[derive(Default)]
struct Module {
    file: String,
    /// Child modules (declared with `mod`).
    children: BTreeSet<String>,
    /// Names bound by `use` items: name → the path as written, resolved later.
    uses: BTreeMap<String, Vec<String>>,
}

/// A path found in a file: the module whose scope it is in, its segments, as written.
struct Mention {
    scope: Vec<String>,
    segments: Vec<String>,
}

#[derive(Default)]
struct Crate {
    modules: BTreeMap<Vec<String>, Module>,
    mentions: Vec<Mention>,
}

/// Builds the graph, reading files (workspace-relative) with `read`; `Ok(None)`: no such file.
fn build(read: impl Fn(&str) -> Result<Option<String>>) -> Result<Graph> {
    let mut krate = Crate::default();
    for (root, name) in [("src/lib.rs", LIB_CRATE), ("src/main.rs", BIN_CRATE)] {
        if let Some(text) = read(root)? {
            load(&mut krate, &read, root, "src", vec![name.to_string()], &text)?;
        }
    }
    let mut graph = Graph::default();
    for module in krate.modules.values() {
        graph.files.insert(module.file.clone());
    }
    for mention in &krate.mentions {
        let Some(path) = resolve(&krate, &mention.scope, &mention.segments, 0) else { continue };
        let from = &krate.modules[&mention.scope].file;
        let to = defining_file(&krate, &path, 0);
        if !to.is_empty() && to != *from {
            graph.edges.entry(from.clone()).or_default().entry(to).or_default().insert(mention.segments.join("::"));
        }
    }
    Ok(graph)
}

/// Loads the file `file` as module `module`; its non-inline children live in `dir`.
fn load(
    krate: &mut Crate,
    read: &impl Fn(&str) -> Result<Option<String>>,
    file: &str,
    dir: &str,
    module: Vec<String>,
    text: &str,
) -> Result<()> {
    let tokens = TokenStream::from_str(text).map_err(|e| anyhow::anyhow!("{file}: cannot tokenize: {e}"))?;
    krate.modules.insert(module.clone(), Module { file: file.to_string(), ..Module::default() });
    let mut children = Vec::new();
    scan(krate, file, dir, &module, tokens, &mut children);
    for (child, child_dir) in children {
        let name = child.last().cloned().unwrap_or_default();
        let flat = format!("{child_dir}/{name}.rs");
        let nested = format!("{child_dir}/{name}/mod.rs");
        if let Some(text) = read(&flat)? {
            load(krate, read, &flat, &format!("{child_dir}/{name}"), child, &text)?;
        } else if let Some(text) = read(&nested)? {
            load(krate, read, &nested, &format!("{child_dir}/{name}"), child, &text)?;
        }
    }
    Ok(())
}

fn is_ident(token: Option<&TokenTree>, name: &str) -> bool {
    matches!(token, Some(TokenTree::Ident(i)) if i == name)
}

fn is_punct(token: Option<&TokenTree>, ch: char) -> bool {
    matches!(token, Some(TokenTree::Punct(p)) if p.as_char() == ch)
}

/// `::` at `tokens[i..]`.
fn is_path_sep(tokens: &[TokenTree], i: usize) -> bool {
    matches!(tokens.get(i), Some(TokenTree::Punct(p)) if p.as_char() == ':' && p.spacing() == Spacing::Joint)
        && is_punct(tokens.get(i + 1), ':')
}

fn ident_name(token: Option<&TokenTree>) -> Option<String> {
    match token {
        Some(TokenTree::Ident(i)) => {
            let s = i.to_string();
            Some(s.strip_prefix("r#").map(str::to_string).unwrap_or(s))
        }
        _ => None,
    }
}

/// Records the modules, `use` items and paths of `tokens`, which are in module `module` of
/// `file`; child modules declared with `mod x;` are pushed to `children` with their directory.
fn scan(
    krate: &mut Crate,
    file: &str,
    dir: &str,
    module: &[String],
    tokens: TokenStream,
    children: &mut Vec<(Vec<String>, String)>,
) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        // `mod name;` or `mod name { … }`
        if is_ident(tokens.get(i), "mod")
            && let Some(name) = ident_name(tokens.get(i + 1))
        {
            let child: Vec<String> = module.iter().cloned().chain([name.clone()]).collect();
            if let Some(m) = krate.modules.get_mut(module) {
                m.children.insert(name.clone());
            }
            match tokens.get(i + 2) {
                Some(TokenTree::Punct(p)) if p.as_char() == ';' => {
                    children.push((child, dir.to_string()));
                    i += 3;
                    continue;
                }
                Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
                    krate.modules.insert(child.clone(), Module { file: file.to_string(), ..Module::default() });
                    scan(krate, file, &format!("{dir}/{name}"), &child, g.stream(), children);
                    i += 3;
                    continue;
                }
                _ => {}
            }
        }
        // `use tree;`
        if is_ident(tokens.get(i), "use") {
            let end = (i + 1..tokens.len()).find(|&j| is_punct(tokens.get(j), ';')).unwrap_or(tokens.len());
            let mut found = Vec::new();
            use_tree(&tokens[i + 1..end], Vec::new(), &mut found);
            for (segments, binding) in found {
                if let (Some(name), Some(m)) = (binding, krate.modules.get_mut(module)) {
                    m.uses.insert(name, segments.clone());
                }
                krate.mentions.push(Mention { scope: module.to_vec(), segments });
            }
            i = end + 1;
            continue;
        }
        // A visibility (`pub(in crate::a)`) names where an item is seen, not what it uses.
        if is_ident(tokens.get(i), "pub")
            && matches!(tokens.get(i + 1), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis)
        {
            i += 2;
            continue;
        }
        // A path in code: `a::b…`, not the middle of one.
        let after_sep = i >= 2 && is_path_sep(&tokens, i - 2);
        let dollar_crate = is_punct(tokens.get(i), '$') && is_ident(tokens.get(i + 1), "crate");
        if !after_sep && (dollar_crate || ident_name(tokens.get(i)).is_some()) {
            let mut j = if dollar_crate { i + 1 } else { i };
            let mut segments = vec![ident_name(tokens.get(j)).unwrap_or_default()];
            while is_path_sep(&tokens, j + 1)
                && let Some(next) = ident_name(tokens.get(j + 3))
            {
                segments.push(next);
                j += 3;
            }
            if segments.len() > 1 {
                krate.mentions.push(Mention { scope: module.to_vec(), segments });
                i = j + 1;
                continue;
            }
        }
        if let Some(TokenTree::Group(g)) = tokens.get(i) {
            scan(krate, file, dir, module, g.stream(), children);
        }
        i += 1;
    }
}

/// The paths of a use tree, each with the name it binds (`None` for a glob or `_`).
fn use_tree(tokens: &[TokenTree], prefix: Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
    let mut segments = prefix;
    let mut i = 0;
    if is_path_sep(tokens, 0) {
        return; // `::name`: another crate
    }
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Ident(_) if is_ident(tokens.get(i), "as") => {
                let alias = ident_name(tokens.get(i + 1)).filter(|a| a != "_");
                if segments.last().is_some_and(|s| s == "self") {
                    segments.pop();
                }
                if !segments.is_empty() {
                    out.push((segments, alias));
                }
                return;
            }
            TokenTree::Ident(_) => {
                segments.push(ident_name(tokens.get(i)).unwrap_or_default());
                i += 1;
            }
            TokenTree::Punct(p) if p.as_char() == ':' => i += 1,
            TokenTree::Punct(p) if p.as_char() == '*' => {
                out.push((segments, None));
                return;
            }
            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => {
                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                for part in inner.split(|t| is_punct(Some(t), ',')) {
                    if !part.is_empty() {
                        use_tree(part, segments.clone(), out);
                    }
                }
                return;
            }
            _ => i += 1,
        }
    }
    // `a::b::self` binds `b`.
    if segments.last().is_some_and(|s| s == "self") {
        segments.pop();
    }
    if let Some(last) = segments.last().cloned() {
        out.push((segments, Some(last)));
    }
}

/// The absolute module path (first segment a crate root) of `segments` as written in `scope`,
/// or `None` when it leads out of the crates.
fn resolve(krate: &Crate, scope: &[String], segments: &[String], depth: usize) -> Option<Vec<String>> {
    let first = segments.first()?;
    let rest = &segments[1..];
    let base: Vec<String> = match first.as_str() {
        "crate" => vec![scope.first()?.clone()],
        LIB_CRATE => vec![LIB_CRATE.to_string()],
        "self" => scope.to_vec(),
        "super" => {
            let mut base = scope.to_vec();
            let mut rest = segments;
            while rest.first().is_some_and(|s| s == "super") {
                if base.len() <= 1 {
                    return None;
                }
                base.pop();
                rest = &rest[1..];
            }
            return Some(base.into_iter().chain(rest.iter().cloned()).collect());
        }
        name => {
            if depth > 8 {
                return None;
            }
            // A child module, or a name a `use` bound here or in an enclosing inline module of
            // the same file.
            let file = &krate.modules.get(scope)?.file;
            let mut at = scope.to_vec();
            loop {
                let module = krate.modules.get(&at)?;
                if module.file != *file {
                    return None;
                }
                if module.children.contains(name) {
                    break at.into_iter().chain([name.to_string()]).collect();
                }
                if let Some(bound) = module.uses.get(name) {
                    if bound.len() == 1 && bound[0] == name {
                        return None; // `use name;`: an external crate
                    }
                    break resolve(krate, &at, bound, depth + 1)?;
                }
                if at.len() <= 1 {
                    return None;
                }
                at.pop();
            }
        }
    };
    Some(base.into_iter().chain(rest.iter().cloned()).collect())
}

/// The file that defines what an absolute path names: the file of its longest module prefix,
/// or, when the next segment is a name a `use` there binds (a re-export, or a child's view of
/// its parent's imports), the file that defines what that `use` names.
fn defining_file(krate: &Crate, path: &[String], depth: usize) -> String {
    let Some(n) = (1..=path.len()).rev().find(|&n| krate.modules.contains_key(&path[..n])) else {
        return String::new();
    };
    let module = &krate.modules[&path[..n]];
    if let Some(bound) = path.get(n).and_then(|name| module.uses.get(name))
        && depth < 8
        && let Some(target) = resolve(krate, &path[..n], bound, 0)
    {
        let through: Vec<String> = target.into_iter().chain(path[n + 1..].iter().cloned()).collect();
        return defining_file(krate, &through, depth + 1);
    }
    module.file.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph_of(files: &[(&str, &str)]) -> Graph {
        let files: BTreeMap<String, String> = files.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect();
        build(|path| Ok(files.get(path).cloned())).unwrap()
    }

    fn edges(graph: &Graph) -> Vec<(String, String)> {
        graph.edges.iter().flat_map(|(from, to)| to.keys().map(|t| (from.clone(), t.clone()))).collect()
    }

    #[test]
    fn a_tree_has_no_circle() {
        let graph = graph_of(&[
            ("src/lib.rs", "pub mod error; pub mod leasing; pub mod paging;"),
            ("src/paging.rs", "pub struct Page;"),
            ("src/error.rs", "use crate::leasing::LeasingError; use crate::paging::Page;"),
            ("src/leasing/mod.rs", "pub mod service; pub use self::service::LeasingError;"),
            ("src/leasing/service.rs", "pub struct LeasingError; fn f() -> crate::paging::Page { todo!() }"),
        ]);
        assert!(circles(&graph).is_empty(), "{:?}", circles(&graph));
        assert_eq!(
            edges(&graph),
            [
                // Through the re-export in `src/leasing/mod.rs`.
                ("src/error.rs", "src/leasing/service.rs"),
                ("src/error.rs", "src/paging.rs"),
                ("src/leasing/mod.rs", "src/leasing/service.rs"),
                ("src/leasing/service.rs", "src/paging.rs"),
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
    }

    #[test]
    fn a_direct_circle_is_found() {
        let graph = graph_of(&[
            ("src/lib.rs", "pub mod error; pub mod auth;"),
            ("src/error.rs", "use crate::auth::AuthError; pub type FieldErrors = ();"),
            ("src/auth.rs", "pub struct AuthError(crate::error::FieldErrors);"),
        ]);
        let found = circles(&graph);
        assert_eq!(found, [["src/auth.rs".to_string(), "src/error.rs".to_string()]]);
        let text = describe(&graph, &found[0]);
        assert!(text.contains("src/auth.rs -> src/error.rs: crate::error::FieldErrors"), "{text}");
        assert!(text.contains("src/error.rs -> src/auth.rs: crate::auth::AuthError"), "{text}");
    }

    #[test]
    fn a_circle_around_a_loop_through_super_and_aliases_is_found() {
        let graph = graph_of(&[
            ("src/lib.rs", "mod config; mod store; mod unrelated;"),
            ("src/config.rs", "use crate::store; fn f() { store::cache::DEFAULT; }"),
            ("src/store/mod.rs", "pub mod cache; pub mod rows; pub struct Settings;"),
            ("src/store/cache.rs", "use super::rows::Row; pub const DEFAULT: u8 = 1;"),
            ("src/store/rows.rs", "pub struct Row; fn g() -> crate::config::Config { todo!() }"),
            ("src/unrelated.rs", "use std::fmt; mod tests { use super::*; }"),
        ]);
        assert_eq!(
            circles(&graph),
            [["src/config.rs", "src/store/cache.rs", "src/store/rows.rs"].map(String::from).to_vec()]
        );
        // `use crate::store;` names the module, which `src/store/mod.rs` defines.
        assert!(graph.edges["src/config.rs"].contains_key("src/store/mod.rs"));
    }

    #[test]
    fn mod_declarations_are_not_imports_but_a_childs_super_is() {
        let graph = graph_of(&[
            ("src/lib.rs", "pub mod area;"),
            ("src/area/mod.rs", "pub mod child; pub struct Shared;"),
            ("src/area/child.rs", "use super::Shared; #[cfg(test)] mod tests { use super::*; }"),
        ]);
        assert!(circles(&graph).is_empty());
        assert_eq!(edges(&graph), [("src/area/child.rs".to_string(), "src/area/mod.rs".to_string())]);
        // A re-export in the parent is an import of the child, and a path through it an import
        // of the defining file: the child's own `super::Thing` is no import of the parent.
        let graph = graph_of(&[
            ("src/lib.rs", "pub mod area; pub mod user;"),
            ("src/area/mod.rs", "pub mod child; pub mod other; pub use child::Thing; pub struct Shared;"),
            ("src/area/child.rs", "pub struct Thing;"),
            ("src/area/other.rs", "use super::Thing;"),
            ("src/user.rs", "fn f() -> crate::area::Thing { todo!() }"),
        ]);
        assert!(circles(&graph).is_empty());
        assert_eq!(
            edges(&graph),
            [
                ("src/area/mod.rs", "src/area/child.rs"),
                ("src/area/other.rs", "src/area/child.rs"),
                ("src/user.rs", "src/area/child.rs"),
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
        // But a child that uses what its parent defines, while the parent uses the child: a circle.
        let graph = graph_of(&[
            ("src/lib.rs", "pub mod area;"),
            ("src/area/mod.rs", "pub mod child; pub struct Shared; fn f() { child::g(); }"),
            ("src/area/child.rs", "use super::Shared; pub fn g() {}"),
        ]);
        assert_eq!(circles(&graph), [["src/area/child.rs", "src/area/mod.rs"].map(String::from).to_vec()]);
    }

    #[test]
    fn a_visibility_is_not_an_import() {
        let graph = graph_of(&[
            ("src/lib.rs", "pub mod store;"),
            ("src/store/mod.rs", "pub mod engine; fn f() { engine::open(); }"),
            ("src/store/engine.rs", "pub(in crate::store) fn open() {}"),
        ]);
        assert!(circles(&graph).is_empty(), "{:?}", edges(&graph));
    }

    #[test]
    fn the_vocabulary_imports_only_itself() {
        let graph = graph_of(&[
            ("src/lib.rs", "pub mod vocabulary; pub mod leasing;"),
            ("src/vocabulary/mod.rs", "pub mod codes; pub mod errors;"),
            ("src/vocabulary/codes.rs", "use super::errors::E; use crate::leasing::Thing;"),
            ("src/vocabulary/errors.rs", "pub struct E;"),
            ("src/leasing.rs", "use crate::vocabulary::codes; pub struct Thing;"),
        ]);
        assert_eq!(
            vocabulary_imports(&graph),
            [
                "src/vocabulary/codes.rs -> src/leasing.rs: crate::leasing::Thing (the vocabulary imports nothing of the areas)"
            ]
        );
    }

    #[test]
    fn the_binary_imports_the_library_by_name_and_strings_are_not_paths() {
        let graph = graph_of(&[
            ("src/lib.rs", "pub mod server;"),
            ("src/server.rs", r#"const S: &str = "crate::main_thing";"#),
            ("src/main.rs", "use integration_service::{server as srv}; fn main() { srv::run(); }"),
        ]);
        assert_eq!(edges(&graph), [("src/main.rs".to_string(), "src/server.rs".to_string())]);
    }
}
