//! `spec/upstream/fieldreport/mirror.toml`: which entity sets of the field-report system the
//! service mirrors, in the order setup and sync take them, and what each sync expands. The
//! upstream's `$metadata` says what exists; this file says what we keep. Both are read by
//! `cargo xtask codegen`, which refuses a mirrored set or an expand path the description lacks.

use anyhow::{Context, Result, bail};
use serde::Deserialize;

/// Beside the description, unless `--mirror` names another.
pub const MIRROR_FILE: &str = "mirror.toml";

/// The mirror file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mirror {
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
        Ok(mirror)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_and_expands_read_in_order() {
        let mirror = Mirror::parse(
            "[[set]]\nname = \"Companies\"\nexpand = [\"Contacts\"]\n[[set]]\nname = \"Tags\"\n",
            "mirror.toml",
        )
        .unwrap();
        let names: Vec<&str> = mirror.sets.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["Companies", "Tags"]);
        assert_eq!(mirror.sets[0].expand, ["Contacts"]);
        assert!(mirror.sets[1].expand.is_empty());
    }

    #[test]
    fn mistakes_are_named() {
        let twice = Mirror::parse("[[set]]\nname = \"Tags\"\n[[set]]\nname = \"Tags\"\n", "m.toml").unwrap_err();
        assert!(format!("{twice:#}").contains("\"Tags\" is listed twice"));
        let unknown = Mirror::parse("[[set]]\nname = \"Tags\"\nexpnad = []\n", "m.toml").unwrap_err();
        assert!(format!("{unknown:#}").contains("expnad"), "{unknown:#}");
        assert!(Mirror::parse("", "m.toml").is_err());
    }
}
