//! Reading the files: the modules each declares, the names its `use` items bind, and the
//! paths it mentions; then the graph of the files those paths lead to.

use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;

use super::resolve::{defining_file, resolve};
use super::{BIN_CRATE, Graph, LIB_CRATE};
use anyhow::Result;
use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// A module: where it is defined and the names it binds.
#[derive(Default)]
pub(super) struct Module {
    pub(super) file: String,
    /// Child modules (declared with `mod`).
    pub(super) children: BTreeSet<String>,
    /// Names bound by `use` items: name → the path as written, resolved later.
    pub(super) uses: BTreeMap<String, Vec<String>>,
    /// Declared `#[cfg(test)]` (its children are tests too).
    pub(super) test: bool,
}

/// A path found in a file: the module whose scope it is in, its segments, as written.
struct Mention {
    scope: Vec<String>,
    segments: Vec<String>,
}

#[derive(Default)]
pub(super) struct Crate {
    pub(super) modules: BTreeMap<Vec<String>, Module>,
    mentions: Vec<Mention>,
}

/// Builds the graph, reading files (workspace-relative) with `read`; `Ok(None)`: no such file.
pub(super) fn build(read: impl Fn(&str) -> Result<Option<String>>) -> Result<Graph> {
    let mut krate = Crate::default();
    for (root, name) in [("src/lib.rs", LIB_CRATE), ("src/main.rs", BIN_CRATE)] {
        if let Some(text) = read(root)? {
            load(&mut krate, &read, root, "src", vec![name.to_string()], &text, false)?;
        }
    }
    let mut graph = Graph::default();
    for module in krate.modules.values() {
        graph.files.insert(module.file.clone());
    }
    for mention in &krate.mentions {
        let from = &krate.modules[&mention.scope].file;
        // A test's imports count for circles, not for the layer rules.
        let in_test = (1..=mention.scope.len()).any(|n| krate.modules.get(&mention.scope[..n]).is_some_and(|m| m.test));
        let Some(path) = resolve(&krate, &mention.scope, &mention.segments, 0) else {
            if !in_test && !["crate", "self", "super", "Self"].contains(&mention.segments[0].as_str()) {
                graph.external.entry(from.clone()).or_default().insert(mention.segments.join("::"));
            }
            continue;
        };
        let to = defining_file(&krate, &path, 0);
        if !to.is_empty() && to != *from {
            if !in_test {
                graph.code.entry(from.clone()).or_default().insert(to.clone());
            }
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
    test: bool,
) -> Result<()> {
    let tokens = TokenStream::from_str(text).map_err(|e| anyhow::anyhow!("{file}: cannot tokenize: {e}"))?;
    krate.modules.insert(module.clone(), Module { file: file.to_string(), test, ..Module::default() });
    let mut children = Vec::new();
    scan(krate, file, dir, &module, tokens, &mut children);
    for (child, child_dir, test) in children {
        let name = child.last().cloned().unwrap_or_default();
        let flat = format!("{child_dir}/{name}.rs");
        let nested = format!("{child_dir}/{name}/mod.rs");
        if let Some(text) = read(&flat)? {
            load(krate, read, &flat, &format!("{child_dir}/{name}"), child, &text, test)?;
        } else if let Some(text) = read(&nested)? {
            load(krate, read, &nested, &format!("{child_dir}/{name}"), child, &text, test)?;
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
    children: &mut Vec<(Vec<String>, String, bool)>,
) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        // `mod name;` or `mod name { … }`
        if is_ident(tokens.get(i), "mod")
            && let Some(name) = ident_name(tokens.get(i + 1))
        {
            let child: Vec<String> = module.iter().cloned().chain([name.clone()]).collect();
            let test = cfg_test_before(&tokens, i);
            if let Some(m) = krate.modules.get_mut(module) {
                m.children.insert(name.clone());
            }
            match tokens.get(i + 2) {
                Some(TokenTree::Punct(p)) if p.as_char() == ';' => {
                    children.push((child, dir.to_string(), test));
                    i += 3;
                    continue;
                }
                Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
                    krate.modules.insert(child.clone(), Module { file: file.to_string(), test, ..Module::default() });
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

/// Whether the `mod` at `tokens[i]` is declared `#[cfg(test)]` (before a visibility, if any).
fn cfg_test_before(tokens: &[TokenTree], mut i: usize) -> bool {
    if i >= 2 && matches!(tokens.get(i - 1), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis) {
        i -= 1; // `pub(…)`
    }
    if i >= 1 && is_ident(tokens.get(i - 1), "pub") {
        i -= 1;
    }
    i >= 2
        && is_punct(tokens.get(i - 2), '#')
        && matches!(tokens.get(i - 1), Some(TokenTree::Group(g))
            if g.delimiter() == Delimiter::Bracket && g.stream().to_string().replace(' ', "") == "cfg(test)")
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
