//! Where a path leads: the absolute module path of what it names, and the file that defines it.

use super::LIB_CRATE;
use super::scan::Crate;

/// The absolute module path (first segment a crate root) of `segments` as written in `scope`,
/// or `None` when it leads out of the crates.
pub(super) fn resolve(krate: &Crate, scope: &[String], segments: &[String], depth: usize) -> Option<Vec<String>> {
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
pub(super) fn defining_file(krate: &Crate, path: &[String], depth: usize) -> String {
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
