use super::*;

pub(super) fn graph_of(files: &[(&str, &str)]) -> Graph {
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
