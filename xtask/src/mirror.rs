//! `spec/upstream/fieldreport/mirror.toml`: which entity sets of the field-report system the
//! service mirrors, in the order setup and sync take them, and what each sync expands. The
//! upstream's `$metadata` says what exists; this file says what we keep. Both are read by
//! `cargo xtask codegen`, which refuses a mirrored set or an expand path the description lacks.

use anyhow::{Context, Result, bail};
use serde::Deserialize;

/// The mirror file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mirror {
    /// Fields the field-report system sets itself: stripped from a record before it is sent
    /// upstream.
    #[serde(default)]
    pub system_fields: Vec<String>,
    /// The steps of `fieldreport setup` and `post`, each the sets it takes in order; every
    /// mirrored set in exactly one.
    pub stages: Vec<Vec<String>>,
    #[serde(rename = "set")]
    pub sets: Vec<MirroredSet>,
}

/// One mirrored set.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MirroredSet {
    /// The entity set's name in the description, e.g. `Companies`.
    pub name: String,
    /// Navigation properties each sync asks for with `$expand`, nested with `/`
    /// (`Appointments/Contacts`); none when absent.
    #[serde(default)]
    pub expand: Vec<String>,
}

impl Mirror {
    pub fn parse(text: &str, file: &str) -> Result<Mirror> {
        let mirror: Mirror = toml::from_str(text).with_context(|| format!("{file}: not a mirror file"))?;
        if mirror.sets.is_empty() {
            bail!("{file}: no [[set]] is mirrored");
        }
        let mut seen = std::collections::BTreeSet::new();
        for set in &mirror.sets {
            if !seen.insert(set.name.as_str()) {
                bail!("{file}: the set {:?} is listed twice", set.name);
            }
        }
        let mut staged = std::collections::BTreeSet::new();
        for name in mirror.stages.iter().flatten() {
            if !seen.contains(name.as_str()) {
                bail!("{file}: stages name {name:?}, which is not a mirrored [[set]]");
            }
            if !staged.insert(name.as_str()) {
                bail!("{file}: {name:?} is in more than one stage");
            }
        }
        if let Some(unstaged) = mirror.sets.iter().find(|set| !staged.contains(set.name.as_str())) {
            bail!("{file}: the set {:?} is in no stage", unstaged.name);
        }
        Ok(mirror)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_and_expands_read_in_order() {
        let mirror = Mirror::parse(
            "system_fields = [\"DateModified\"]\nstages = [[\"Tags\"], [\"Companies\"]]\n\
             [[set]]\nname = \"Companies\"\nexpand = [\"Contacts\"]\n[[set]]\nname = \"Tags\"\n",
            "mirror.toml",
        )
        .unwrap();
        let names: Vec<&str> = mirror.sets.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["Companies", "Tags"]);
        assert_eq!(mirror.sets[0].expand, ["Contacts"]);
        assert!(mirror.sets[1].expand.is_empty());
        assert_eq!(mirror.stages, [vec!["Tags".to_string()], vec!["Companies".to_string()]]);
        assert_eq!(mirror.system_fields, ["DateModified"]);
    }

    #[test]
    fn mistakes_are_named() {
        let parse = |text: &str| format!("{:#}", Mirror::parse(text, "m.toml").unwrap_err());
        let twice = parse("stages = [[\"Tags\"]]\n[[set]]\nname = \"Tags\"\n[[set]]\nname = \"Tags\"\n");
        assert!(twice.contains("\"Tags\" is listed twice"), "{twice}");
        let unstaged = parse("stages = [[\"Tags\"]]\n[[set]]\nname = \"Tags\"\n[[set]]\nname = \"Users\"\n");
        assert!(unstaged.contains("\"Users\" is in no stage"), "{unstaged}");
        let unknown_set = parse("stages = [[\"Tags\", \"Tagz\"]]\n[[set]]\nname = \"Tags\"\n");
        assert!(unknown_set.contains("\"Tagz\", which is not a mirrored"), "{unknown_set}");
        let staged_twice = parse("stages = [[\"Tags\"], [\"Tags\"]]\n[[set]]\nname = \"Tags\"\n");
        assert!(staged_twice.contains("more than one stage"), "{staged_twice}");
        let unknown = parse("stages = [[\"Tags\"]]\n[[set]]\nname = \"Tags\"\nexpnad = []\n");
        assert!(unknown.contains("expnad"), "{unknown}");
        assert!(Mirror::parse("", "m.toml").is_err());
    }
}
