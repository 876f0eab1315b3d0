//! `cargo xtask check`'s check of the documents in `docs/`: what they name exists.
//!
//! - Every file a document names in backticks (`` `src/api/mod.rs` ``, `` `src/store/` ``) is in
//!   the tree. A name with a pattern in it (`{a,b}`, `<name>`, `…`, `*`) is not a file name and
//!   is not checked.
//! - Every name a Rust snippet (a ```` ```rust ```` block) uses is in the code: each type, each
//!   segment of a path and each function it calls is defined in the workspace's sources (an
//!   item, a field, a variant, a method) or imported by one of them (`use serde_json::Value`),
//!   or defined by the snippets of the same document themselves (what a recipe adds); each
//!   method or field after a `.` appears in the sources. The snippets that can be compiled
//!   are doc tests too (`src/lib.rs` includes their documents); this check covers the recipes,
//!   whose code lives inside the crate's private modules and cannot be a doc test.

use std::collections::BTreeSet;
use std::path::Path;
use std::str::FromStr;

use anyhow::{Context, Result};
use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// The folders whose documents are checked, relative to the workspace root.
pub const DOCS: &str = "docs";
/// The front door, checked as the documents under [`DOCS`] are.
pub const README: &str = "README.md";
/// The folders whose Rust sources say which names exist.
const SOURCES: &[&str] = &["src", "generated/src", "clients/rust/src", "xtask/src", "tests", "bench/src"];
/// What a file named in a document starts with to be checked as a path of the tree.
const TREE_ROOTS: &[&str] = &[
    "src/",
    "xtask/",
    "tests/",
    "spec/",
    "migrations/",
    "generated/",
    "clients/",
    "bench/",
    "vendor/",
    "assets/",
    "docs/",
    ".ci/",
];
/// Names that are Rust's own: keywords, the prelude, primitive types.
const RUST_NAMES: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "false", "fn", "for", "if",
    "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "Self", "static",
    "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while", "Ok", "Err", "Some", "None",
    "Result", "Option", "Vec", "String", "Box", "bool", "u8", "u16", "u32", "u64", "i32", "i64", "usize", "f64", "str",
    "char",
];

/// The problems of the README and the documents under `root/docs`, one line each.
pub fn check(root: &Path) -> Result<Vec<String>> {
    let known = Known::from_sources(root)?;
    let mut problems = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(root.join(DOCS))
        .with_context(|| format!("reading {DOCS}/"))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    entries.sort();
    // The README is the front door: what it names must exist as much as what docs/ names.
    entries.insert(0, root.join(README));
    for path in entries {
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let name = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().into_owned();
        problems.extend(missing_files(&name, &text, |file| root.join(file).exists()));
        problems.extend(unknown_names(&name, &text, &known));
    }
    Ok(problems)
}

/// The files `text` (the document `doc`) names in backticks that `exists` does not find.
pub fn missing_files(doc: &str, text: &str, exists: impl Fn(&str) -> bool) -> Vec<String> {
    let mut problems = Vec::new();
    for (line_no, line) in prose_lines(text) {
        for span in line.split('`').skip(1).step_by(2) {
            let candidate = span.trim_end_matches([',', '.', ':', ';']);
            let is_path = TREE_ROOTS.iter().any(|r| candidate.starts_with(r))
                && !candidate.contains(|c: char| c.is_whitespace() || "{}<>…*|$".contains(c));
            if is_path && !exists(candidate) {
                problems.push(format!("{doc}:{line_no}: `{candidate}` is not in the tree"));
            }
        }
    }
    problems
}

/// The lines of `text` outside fenced blocks, numbered from 1.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            lines.push((i + 1, line));
        }
    }
    lines
}

/// The Rust snippets of a document: each block's first line number and its text.
pub fn rust_snippets(text: &str) -> Vec<(usize, String)> {
    let mut snippets = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start();
        if let Some(info) = fence.strip_prefix("```") {
            match current.take() {
                Some(snippet) => snippets.push(snippet),
                None if info.split(',').next() == Some("rust") => current = Some((i + 2, String::new())),
                None => {
                    // Another language's block: skip to its end.
                    current = None;
                }
            }
            continue;
        }
        if let Some((_, body)) = current.as_mut() {
            // A doc test's hidden line (`# use …;`) is code too.
            let code = fence.strip_prefix("# ").unwrap_or(line);
            body.push_str(code);
            body.push('\n');
        }
    }
    snippets
}

/// The names the workspace defines or imports, and every identifier its sources use.
#[derive(Default)]
pub struct Known {
    /// Items, fields, variants and methods defined, and names bound by `use` items.
    pub defined: BTreeSet<String>,
    /// Every identifier of the sources.
    pub used: BTreeSet<String>,
}

impl Known {
    fn from_sources(root: &Path) -> Result<Known> {
        let mut known = Known::default();
        for dir in SOURCES {
            for file in rust_files(&root.join(dir))? {
                let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
                known.add_source(&text);
            }
        }
        Ok(known)
    }

    /// Adds the names of one source file. A file that does not tokenize adds nothing.
    pub fn add_source(&mut self, text: &str) {
        let Ok(tokens) = TokenStream::from_str(text) else { return };
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        self.add_tokens(&tokens);
    }

    fn add_tokens(&mut self, tokens: &[TokenTree]) {
        for (i, token) in tokens.iter().enumerate() {
            match token {
                TokenTree::Ident(ident) => {
                    let name = ident.to_string();
                    let next = tokens.get(i + 1);
                    let is_item = ["fn", "struct", "enum", "trait", "type", "const", "static", "mod", "union"]
                        .contains(&name.as_str());
                    if is_item && let Some(TokenTree::Ident(defined)) = next {
                        self.defined.insert(defined.to_string());
                    }
                    // A field (`name: Type`) or a variant (`Name(…)`, `Name {…}`, `Name,`) of a
                    // definition, or a binding of a `use` (`use a::{b, c as d};`): every
                    // identifier of a braced group after `struct`/`enum`/`use` counts.
                    self.used.insert(name.strip_prefix("r#").unwrap_or(&name).to_string());
                }
                TokenTree::Group(group) => {
                    let inner: Vec<TokenTree> = group.stream().into_iter().collect();
                    let before = i.checked_sub(2).and_then(|j| tokens.get(j));
                    let defines_members = group.delimiter() == Delimiter::Brace
                        && matches!(before, Some(TokenTree::Ident(k)) if k == "struct" || k == "enum");
                    if defines_members {
                        self.defined.extend(inner.iter().filter_map(ident_text));
                    }
                    self.add_tokens(&inner);
                }
                _ => {}
            }
        }
        // `use` items: every name in them is imported (or a module on the way to one).
        let mut i = 0;
        while i < tokens.len() {
            if matches!(&tokens[i], TokenTree::Ident(k) if k == "use") {
                let end = (i..tokens.len())
                    .find(|&j| matches!(&tokens[j], TokenTree::Punct(p) if p.as_char() == ';'))
                    .unwrap_or(tokens.len());
                let mut names = BTreeSet::new();
                collect_idents(&tokens[i + 1..end], &mut names);
                self.defined.extend(names);
                i = end;
            }
            i += 1;
        }
    }
}

fn ident_text(token: &TokenTree) -> Option<String> {
    match token {
        TokenTree::Ident(ident) => Some(ident.to_string()),
        _ => None,
    }
}

fn collect_idents(tokens: &[TokenTree], out: &mut BTreeSet<String>) {
    for token in tokens {
        match token {
            TokenTree::Ident(ident) => {
                out.insert(ident.to_string());
            }
            TokenTree::Group(group) => {
                let inner: Vec<TokenTree> = group.stream().into_iter().collect();
                collect_idents(&inner, out);
            }
            _ => {}
        }
    }
}

/// The `.rs` files under `dir` (none when it does not exist), sorted.
fn rust_files(dir: &Path) -> Result<Vec<std::path::PathBuf>> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(files) };
    for entry in entries {
        let path = entry?.path();
        if path.is_dir() {
            files.extend(rust_files(&path)?);
        } else if path.extension().is_some_and(|x| x == "rs") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// The names the Rust snippets of `text` (the document `doc`) use that `known` lacks.
pub fn unknown_names(doc: &str, text: &str, known: &Known) -> Vec<String> {
    let snippets = rust_snippets(text);
    // What the document's own snippets define: the functions and types a recipe adds.
    let mut own = Known::default();
    for (_, body) in &snippets {
        own.add_source(body);
    }
    let mut problems = Vec::new();
    for (line_no, body) in &snippets {
        let Ok(tokens) = TokenStream::from_str(body) else {
            problems.push(format!("{doc}:{line_no}: the Rust snippet does not tokenize"));
            continue;
        };
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut unknown = BTreeSet::new();
        names_used(&tokens, &mut |name, loose| {
            let defined = known.defined.contains(name) || own.defined.contains(name) || RUST_NAMES.contains(&name);
            let seen = loose && known.used.contains(name);
            if !defined && !seen {
                unknown.insert(name.to_string());
            }
        });
        for name in unknown {
            problems.push(format!("{doc}:{line_no}: the Rust snippet names `{name}`, which the code does not have"));
        }
    }
    problems
}

/// Calls `visit` with each name `tokens` use as a type, a path segment, a called function, or
/// (`loose` true) a method, a field or a later segment of a path: those need only appear in
/// the sources, since they may be another crate's.
fn names_used(tokens: &[TokenTree], visit: &mut impl FnMut(&str, bool)) {
    for (i, token) in tokens.iter().enumerate() {
        match token {
            TokenTree::Ident(ident) => {
                let name = ident.to_string();
                let prev = i.checked_sub(1).and_then(|j| tokens.get(j));
                let next = tokens.get(i + 1);
                let after_dot = matches!(prev, Some(TokenTree::Punct(p)) if p.as_char() == '.');
                let after_path = i >= 2
                    && matches!(prev, Some(TokenTree::Punct(p)) if p.as_char() == ':')
                    && matches!(tokens.get(i - 2), Some(TokenTree::Punct(p)) if p.as_char() == ':');
                let before_path = matches!(next, Some(TokenTree::Punct(p)) if p.as_char() == ':')
                    && matches!(tokens.get(i + 2), Some(TokenTree::Punct(p)) if p.as_char() == ':');
                let called = matches!(next, Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis);
                let is_type = name.starts_with(|c: char| c.is_ascii_uppercase());
                // A binding (`let x`, a parameter `x: T`) is the snippet's own.
                let defines = i
                    .checked_sub(1)
                    .and_then(|j| tokens.get(j))
                    .is_some_and(|t| matches!(t, TokenTree::Ident(k) if ["fn", "let", "mut", "struct", "enum", "mod", "type", "const"].contains(&k.to_string().as_str())));
                if defines {
                    continue;
                }
                if after_dot || after_path || before_path || called || is_type {
                    // A method, a field or a later segment of a path may be another crate's.
                    visit(&name, after_dot || after_path);
                }
            }
            // An attribute (`#[dropshot::endpoint { … }]`) names the macros of other crates.
            TokenTree::Group(group)
                if group.delimiter() == Delimiter::Bracket
                    && matches!(i.checked_sub(1).and_then(|j| tokens.get(j)), Some(TokenTree::Punct(p)) if p.as_char() == '#') =>
                {}
            TokenTree::Group(group) => {
                let inner: Vec<TokenTree> = group.stream().into_iter().collect();
                names_used(&inner, visit);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(sources: &[&str]) -> Known {
        let mut known = Known::default();
        for source in sources {
            known.add_source(source);
        }
        known
    }

    #[test]
    fn a_named_file_must_exist() {
        let text = "See `src/api/mod.rs` and `src/gone.rs`, not `src/{a,b}.rs`.\n\n```\n`src/fenced.rs`\n```\n";
        let found = missing_files("docs/x.md", text, |file| file == "src/api/mod.rs");
        assert_eq!(found, ["docs/x.md:1: `src/gone.rs` is not in the tree"]);
    }

    #[test]
    fn a_snippet_must_name_what_the_code_has() {
        let code = known(&[
            "use serde_json::Value; pub struct LeasingClient { api: Client } \
             impl LeasingClient { async fn call(&self) {} }",
            "pub enum UpstreamError { Timeout } pub async fn retry_read() {}",
        ]);
        let doc = "Add:\n\n```rust\npub async fn legal_forms(&self) -> Result<Value, UpstreamError> {\n    \
                   retry_read(|| async { self.call(self.api.get_legal_forms()).await }).await\n}\n```\n";
        assert_eq!(
            unknown_names("docs/x.md", doc, &code),
            ["docs/x.md:4: the Rust snippet names `get_legal_forms`, which the code does not have"]
        );
        // Once the generated client has the builder, the snippet is fine; a name the
        // document's snippets define themselves is too.
        let code = known(&[
            "use serde_json::Value; pub struct LeasingClient { api: Client } \
             impl LeasingClient { async fn call(&self) {} }",
            "pub enum UpstreamError { Timeout } pub async fn retry_read() {}",
            "impl Client { pub fn get_legal_forms(&self) {} }",
        ]);
        let doc = format!("{doc}\n```rust\nfn f() {{ legal_forms(); }}\n```\n");
        assert!(unknown_names("docs/x.md", &doc, &code).is_empty(), "{:?}", unknown_names("docs/x.md", &doc, &code));
        // A type renamed in the code is a problem of the document.
        let doc = "```rust\nfn f(token: BearerToken) {}\n```\n";
        assert_eq!(
            unknown_names("docs/x.md", doc, &code),
            ["docs/x.md:2: the Rust snippet names `BearerToken`, which the code does not have"]
        );
    }

    #[test]
    fn hidden_lines_and_other_languages() {
        let text = "```sh\nls\n```\n```rust,no_run\n# use a::B;\nlet x = 1;\n```\n";
        assert_eq!(rust_snippets(text), [(5, "use a::B;\nlet x = 1;\n".to_string())]);
    }
}
