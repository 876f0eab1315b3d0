//! `cargo xtask upstream-diff`: what changed between the committed description of an upstream
//! and a new one (freshly downloaded), per mirrored field-report set or ERP model: properties
//! added, removed, and changed in type or nullability. A removed or changed property that the
//! service's code names is shown with the file and line that name it: that code must change.
//! Additive changes exit 0; anything else exits 1, so CI or a developer can run it against a
//! new description before regenerating.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::codegen::{ERP_SPEC, FIELDREPORT_SPEC, MIRROR};
use crate::erp;
use crate::fieldreport;
use crate::mirror::Mirror;

/// The changes of one set or model.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Property, old schema, new schema (compact JSON, descriptions left out).
    pub changed: Vec<(String, String, String)>,
}

impl Changes {
    fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
    fn breaking(&self) -> bool {
        !self.removed.is_empty() || !self.changed.is_empty()
    }
}

/// A whole comparison: per set or model, and the sets or models that appeared or went.
#[derive(Debug, Default)]
pub struct Report {
    pub per_model: BTreeMap<String, Changes>,
    pub new_models: Vec<String>,
    pub gone_models: Vec<String>,
}

impl Report {
    pub fn breaking(&self) -> bool {
        !self.gone_models.is_empty() || self.per_model.values().any(Changes::breaking)
    }
}

/// Compares the field-report description at `new` with the committed one, for the sets of the
/// committed mirror file.
pub fn fieldreport(root: &Path, new: &Path) -> Result<Report> {
    let mirror_name = MIRROR.to_string();
    let mirror_text = std::fs::read_to_string(root.join(&mirror_name)).with_context(|| mirror_name.clone())?;
    let mirror = Mirror::parse(&mirror_text, &mirror_name)?;
    let old_text = std::fs::read_to_string(root.join(FIELDREPORT_SPEC)).context(FIELDREPORT_SPEC)?;
    let new_name = new.display().to_string();
    let new_text = std::fs::read_to_string(new).with_context(|| new_name.clone())?;
    let old = fieldreport::registry(&old_text, FIELDREPORT_SPEC, &mirror, &mirror_name)?;
    let mut report = Report::default();
    // A mirrored set the new description lacks is reported, not an error: it is the news.
    let kept = Mirror {
        system_fields: mirror.system_fields,
        stages: mirror.stages,
        sets: mirror
            .sets
            .into_iter()
            .filter(|set| {
                let present = new_text.contains(&format!("EntitySet Name=\"{}\"", set.name));
                if !present {
                    report.gone_models.push(set.name.clone());
                }
                present
            })
            .collect(),
    };
    let new = fieldreport::registry(&new_text, &new_name, &kept, &mirror_name)?;
    for entity in &old.entities {
        let Some(now) = new.entities.iter().find(|e| e.set == entity.set) else { continue };
        let before = properties(&old.defs, &old.defs[&entity.type_key]);
        let after = properties(&new.defs, &new.defs[&now.type_key]);
        report.per_model.insert(entity.set.clone(), compare(&before, &after));
    }
    Ok(report)
}

/// Compares the ERP description at `new` with the committed one, model by model.
pub fn erp(root: &Path, new: &Path) -> Result<Report> {
    let read = |path: &Path, name: &str| -> Result<Value> {
        let text = std::fs::read_to_string(path).with_context(|| name.to_string())?;
        serde_json::from_str(&text).with_context(|| format!("{name}: not valid JSON"))
    };
    let new_name = new.display().to_string();
    let (old_models, old_defs) = erp::models(&read(&root.join(ERP_SPEC), ERP_SPEC)?, ERP_SPEC)?;
    let (new_models, new_defs) = erp::models(&read(new, &new_name)?, &new_name)?;
    let mut report = Report::default();
    for (name, key) in &old_models {
        match new_models.iter().find(|(n, _)| n == name) {
            Some((_, new_key)) => {
                let before = properties(&old_defs, &old_defs[key]);
                let after = properties(&new_defs, &new_defs[new_key]);
                report.per_model.insert(name.clone(), compare(&before, &after));
            }
            None => report.gone_models.push(name.clone()),
        }
    }
    report.new_models =
        new_models.iter().filter(|(n, _)| !old_models.iter().any(|(o, _)| o == n)).map(|(n, _)| n.clone()).collect();
    Ok(report)
}

/// A schema's properties (through `$ref`s and `allOf`), each with its schema as compared:
/// references resolved one level to their target's name, descriptions and examples left out.
fn properties(defs: &BTreeMap<String, Value>, schema: &Value) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    let mut pending = vec![schema];
    let mut seen = 0;
    while let Some(schema) = pending.pop() {
        seen += 1;
        if seen > 64 {
            break;
        }
        if let Some(def) =
            schema.get("$ref").and_then(Value::as_str).and_then(|r| r.rsplit('/').next()).and_then(|t| defs.get(t))
        {
            pending.push(def);
        }
        for part in schema.get("allOf").and_then(Value::as_array).into_iter().flatten() {
            pending.push(part);
        }
        for (name, property) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
            out.insert(name.clone(), comparable(property));
        }
    }
    out
}

/// A property's schema without what does not change its shape.
fn comparable(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "description" | "title" | "example" | "examples" | "default"))
                .map(|(k, v)| (k.clone(), comparable(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(comparable).collect()),
        other => other.clone(),
    }
}

fn compare(before: &BTreeMap<String, Value>, after: &BTreeMap<String, Value>) -> Changes {
    let mut changes = Changes::default();
    for (name, old) in before {
        match after.get(name) {
            None => changes.removed.push(name.clone()),
            Some(new) if new != old => changes.changed.push((name.clone(), old.to_string(), new.to_string())),
            Some(_) => {}
        }
    }
    changes.added = after.keys().filter(|name| !before.contains_key(*name)).cloned().collect();
    changes
}

/// Where the service's code names a property (`"Name"` in a Rust file of `src/`, unit tests
/// aside): file and line, for a property that went or changed.
pub fn uses(root: &Path, property: &str) -> Vec<String> {
    let needle = format!("\"{property}\"");
    let mut files = crate::vendored::files_under(&root.join("src")).unwrap_or_default();
    files.retain(|file| file.ends_with(".rs") && !file.ends_with("tests.rs"));
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(root.join("src").join(&file)).unwrap_or_default();
        for (number, line) in text.lines().enumerate() {
            if line.contains(&needle) {
                found.push(format!("src/{file}:{}", number + 1));
            }
        }
    }
    found
}

/// Prints the report; returns whether the service must change or the change is not additive.
pub fn print(root: &Path, what: &str, report: &Report) -> bool {
    let mut must_change = false;
    for name in &report.gone_models {
        println!("{what} {name}: GONE from the new description");
    }
    for name in &report.new_models {
        println!("{what} {name}: new (added)");
    }
    for (name, changes) in &report.per_model {
        if changes.is_empty() {
            continue;
        }
        println!("{what} {name}:");
        for property in &changes.added {
            println!("  + {property}");
        }
        for property in &changes.removed {
            println!("  - {property} (removed)");
            for place in uses(root, property) {
                must_change = true;
                println!("      used at {place}: the service must change");
            }
        }
        for (property, old, new) in &changes.changed {
            println!("  ~ {property}: {old} -> {new}");
            for place in uses(root, property) {
                println!("      used at {place}");
            }
        }
    }
    let breaking = report.breaking();
    match (breaking, must_change) {
        (false, _) => println!("{what}s: additive changes only"),
        (true, false) => println!("{what}s: removed or changed properties (no use of them found in src/)"),
        (true, true) => println!("{what}s: removed or changed properties that src/ uses: the service must change"),
    }
    breaking
}

#[cfg(test)]
mod tests {
    use super::*;

    const V3: &str = include_str!("../testdata/fieldreport-v3.xml");

    fn mirror() -> Mirror {
        Mirror::parse(
            "stages = [[\"Companies\"]]\n[[set]]\nname = \"Companies\"\nexpand = [\"Contacts\"]\n",
            "mirror.toml",
        )
        .unwrap()
    }

    fn company(xml: &str) -> BTreeMap<String, Value> {
        let registry = fieldreport::registry(xml, "x.xml", &mirror(), "mirror.toml").unwrap();
        properties(&registry.defs, &registry.defs[&registry.entities[0].type_key])
    }

    #[test]
    fn an_added_property_is_additive() {
        let newer = V3.replace(
            r#"<Property Name="Name" Type="Edm.String"/>"#,
            r#"<Property Name="Name" Type="Edm.String"/><Property Name="Rating" Type="Edm.Int32"/>"#,
        );
        let changes = compare(&company(V3), &company(&newer));
        assert_eq!(changes.added, ["Rating"]);
        assert!(!changes.breaking());
    }

    #[test]
    fn a_removed_or_retyped_property_is_breaking() {
        let newer = V3.replace(r#"<Property Name="Name" Type="Edm.String"/>"#, "").replace(
            r#"<Property Name="OpeningTime" Type="Edm.Time"/>"#,
            r#"<Property Name="OpeningTime" Type="Edm.Int32"/>"#,
        );
        let changes = compare(&company(V3), &company(&newer));
        assert_eq!(changes.removed, ["Name"]);
        assert_eq!(changes.changed.len(), 1);
        assert_eq!(changes.changed[0].0, "OpeningTime");
        assert!(changes.breaking());
        let report = Report { per_model: [("Companies".to_string(), changes)].into(), ..Default::default() };
        assert!(report.breaking());
    }

    #[test]
    fn a_description_alone_is_no_change() {
        let newer = V3.replace("Added by the upstream after our description was written.", "Reworded.");
        assert_eq!(compare(&company(V3), &company(&newer)), Changes::default());
    }

    #[test]
    fn uses_are_found_with_file_and_line() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let places = uses(root, "ExternalId");
        assert!(places.iter().any(|p| p.starts_with("src/") && p.contains(".rs:")), "{places:?}");
        assert!(uses(root, "NoPropertyIsNamedLikeThis").is_empty());
    }
}
