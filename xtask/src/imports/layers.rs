//! The layer rules of docs/architecture.md ("Layers"), each stated over the import graph: which
//! files may not import which, and which crates only some layers may name. The imports of
//! tests (`#[cfg(test)]` modules) are left out: a test may set up what its layer does not use.

use super::Graph;

/// One rule: files under `files` (but `except`) import no file under `forbidden`.
pub struct Rule {
    /// Prefixes of the files the rule is about (`src/store/`, or a file `src/error.rs`).
    pub files: &'static [&'static str],
    /// Prefixes of files the rule exempts.
    pub except: &'static [&'static str],
    /// Prefixes of the files they may not import.
    pub forbidden: &'static [&'static str],
    /// What docs/architecture.md says, for the report.
    pub because: &'static str,
}

/// One rule about other crates: files under `files` (but `except`) name none of `crates`
/// (outside their tests).
pub struct CrateRule {
    pub files: &'static [&'static str],
    pub except: &'static [&'static str],
    pub crates: &'static [&'static str],
    pub because: &'static str,
}

/// The areas: the domain of each, free of HTTP types.
const AREAS: &[&str] = &["src/auth/", "src/leasing/", "src/fieldreport/", "src/erp/"];

/// docs/architecture.md's layer table and the rules under it.
pub const RULES: &[Rule] = &[
    Rule {
        files: AREAS,
        except: &[],
        forbidden: &["src/api/", "src/front/", "src/error.rs", "src/server.rs", "src/cli/", "src/assembly.rs"],
        because: "domain code never sees HTTP types; the areas name `FieldErrors` from `vocabulary`, not `error`",
    },
    Rule {
        files: &["src/store/"],
        except: &[],
        forbidden: &[
            "src/api/",
            "src/front/",
            "src/auth/",
            "src/leasing/",
            "src/fieldreport/",
            "src/erp/",
            "src/upstream/",
            "src/jobs/",
            "src/server.rs",
            "src/cli/",
            "src/assembly.rs",
            "src/error.rs",
        ],
        because: "the store calls nothing outside the database",
    },
    Rule {
        files: &["src/store/engine/"],
        except: &[],
        forbidden: &[
            "src/store/auth/",
            "src/store/leasing/",
            "src/store/fieldreport/",
            "src/store/erp",
            "src/store/jobs",
            "src/store/idempotency.rs",
            "src/store/key_pages",
            "src/store/lease.rs",
            "src/store/rates.rs",
            "src/store/bench.rs",
        ],
        because: "the tables use the engine, never the other way round",
    },
    Rule {
        files: &["src/upstream/"],
        except: &[],
        forbidden: &[
            "src/api/",
            "src/front/",
            "src/store/",
            "src/auth/",
            "src/leasing/",
            "src/fieldreport/",
            "src/erp/",
        ],
        because: "the upstream clients call the upstream systems and decide nothing for the areas",
    },
    Rule {
        files: &["src/"],
        except: &["src/config.rs", "src/assembly.rs", "src/server.rs", "src/cli/", "src/main.rs"],
        forbidden: &["src/config.rs"],
        because: "only what assembles the service (`assembly.rs`, `server.rs`, the CLI) imports `config.rs`",
    },
];

/// docs/architecture.md's rules about other crates.
pub const CRATE_RULES: &[CrateRule] = &[
    CrateRule {
        files: AREAS,
        except: &[],
        crates: &["dropshot", "hyper"],
        because: "domain code never sees HTTP types",
    },
    CrateRule {
        files: &["src/"],
        except: &["src/store/"],
        crates: &["sqlx", "rusqlite"],
        because: "SQL lives in `src/store`",
    },
];

fn under(file: &str, prefixes: &[&str]) -> bool {
    prefixes.iter().any(|p| file.starts_with(p))
}

/// The imports that break a rule, one line each.
pub fn broken(graph: &Graph, rules: &[Rule], crate_rules: &[CrateRule]) -> Vec<String> {
    let mut lines = Vec::new();
    for rule in rules {
        for (from, targets) in &graph.code {
            if !under(from, rule.files) || under(from, rule.except) {
                continue;
            }
            for to in targets.iter().filter(|to| under(to, rule.forbidden) && *to != from) {
                lines.push(format!("{from} -> {to}: against the layers ({})", rule.because));
            }
        }
    }
    for rule in crate_rules {
        for (from, paths) in &graph.external {
            if !under(from, rule.files) || under(from, rule.except) {
                continue;
            }
            let crates: std::collections::BTreeSet<&str> = paths
                .iter()
                .filter_map(|path| path.split("::").next())
                .filter(|name| rule.crates.contains(name))
                .collect();
            for name in crates {
                lines.push(format!("{from} names the crate `{name}`: against the layers ({})", rule.because));
            }
        }
    }
    lines.extend(routes(graph));
    lines
}

/// The folder of what the routes share: no route of its own.
const SUPPORT: &str = "src/api/support/";

/// docs/architecture.md: "the API's top level holds only modules with routes" and
/// `api/support/` "no route of its own". A route is a `#[dropshot::endpoint]` function, or the
/// per-entity endpoints registered with `dropshot::ApiEndpoint`.
pub fn routes(graph: &Graph) -> Vec<String> {
    let has_route = |file: &str| {
        graph.external.get(file).is_some_and(|paths| {
            paths.iter().any(|p| p == "dropshot::endpoint" || p == "dropshot::ApiEndpoint" || p == "ApiEndpoint::new")
        })
    };
    let mut lines = Vec::new();
    for file in graph.files.iter().filter(|f| f.starts_with(SUPPORT)) {
        if graph.external.get(file).is_some_and(|paths| paths.contains("dropshot::endpoint")) {
            lines.push(format!("{file} has a route: against the layers (api/support/ holds no route of its own)"));
        }
    }
    // The top level of src/api/: each module, a file or a folder, holds a route.
    let mut modules: std::collections::BTreeMap<String, bool> = std::collections::BTreeMap::new();
    for file in graph.files.iter().filter(|f| f.starts_with("src/api/") && !f.starts_with(SUPPORT)) {
        let rest = &file["src/api/".len()..];
        if rest == "mod.rs" {
            continue;
        }
        let module = rest.split('/').next().unwrap_or(rest).trim_end_matches(".rs").to_string();
        *modules.entry(module).or_default() |= has_route(file);
    }
    for (module, routed) in modules {
        if !routed {
            lines.push(format!(
                "src/api/{module} has no route: against the layers (the API's top level holds only modules with routes; what routes share goes into api/support/)"
            ));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::super::tests::graph_of;
    use super::*;

    #[test]
    fn the_layers_of_the_tree_hold_and_a_break_is_named() {
        let files = [
            ("src/lib.rs", "pub mod api; pub mod error; pub mod leasing; pub mod store; pub mod config; pub mod cli;"),
            ("src/api/mod.rs", "pub mod support; pub mod leasing;"),
            ("src/api/support/mod.rs", "pub struct Context;"),
            (
                "src/api/leasing.rs",
                "#[dropshot::endpoint { method = GET }] pub async fn f(c: crate::api::support::Context) {}",
            ),
            ("src/error.rs", "use crate::leasing::LeasingError;"),
            ("src/leasing/mod.rs", "pub struct LeasingError; #[cfg(test)] mod tests { use crate::config::Config; }"),
            ("src/store/mod.rs", "use sqlx::Row;"),
            ("src/config.rs", "pub struct Config;"),
            ("src/cli/mod.rs", "use crate::config::Config;"),
        ];
        let graph = graph_of(&files);
        // A test may import what its layer does not.
        assert!(broken(&graph, RULES, CRATE_RULES).is_empty(), "{:?}", broken(&graph, RULES, CRATE_RULES));

        let mut bad = files;
        bad[5] =
            ("src/leasing/mod.rs", "use crate::error::ApiError; use dropshot::HttpError; pub struct LeasingError;");
        bad[6] = ("src/store/mod.rs", "use sqlx::Row; fn f() { crate::leasing::LeasingError; }");
        bad[2] = ("src/api/support/mod.rs", "#[dropshot::endpoint { method = GET }] pub async fn g() {}");
        bad[4] = ("src/error.rs", "use crate::leasing::LeasingError; use sqlx::Error; use crate::config::Config;");
        let found = broken(&graph_of(&bad), RULES, CRATE_RULES);
        for expected in [
            "src/leasing/mod.rs -> src/error.rs",
            "src/leasing/mod.rs names the crate `dropshot`",
            "src/store/mod.rs -> src/leasing/mod.rs",
            "src/api/support/mod.rs has a route",
            "src/error.rs names the crate `sqlx`",
            "src/error.rs -> src/config.rs",
        ] {
            assert!(found.iter().any(|line| line.starts_with(expected)), "{expected} not in {found:#?}");
        }
        assert_eq!(found.len(), 6, "{found:#?}");
        // A top-level API module without a route.
        let mut bare = files;
        bare[3] = ("src/api/leasing.rs", "pub async fn f() {}");
        let found = broken(&graph_of(&bare), RULES, CRATE_RULES);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].starts_with("src/api/leasing has no route"), "{found:#?}");
    }
}
