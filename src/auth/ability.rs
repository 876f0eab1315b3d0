//! What a token may do. A login token may do everything (`*`); a token made for an automation
//! is given only the abilities it needs (`integration-service token create --ability …`), and
//! each operation names the one it requires next to its definition
//! (`crate::api::support::guard::BearerToken`).

use std::fmt;

/// One ability a token may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Ability {
    /// Every ability, those added later included (login tokens).
    All,
    /// The leasing routes.
    Leasing,
    /// Reading the field-report mirror.
    FieldreportRead,
    /// Creating, changing and deleting field-report records.
    FieldreportWrite,
    /// The field-report tools: sync, setup, post and the upstream's own records.
    FieldreportTools,
    /// The ERP routes (mirror, mail templates, setup), not the webhook the ERP calls.
    Erp,
    /// Background jobs.
    Jobs,
}

impl Ability {
    /// Every ability, in the order they are listed.
    pub const EVERY: [Ability; 7] = [
        Ability::All,
        Ability::Leasing,
        Ability::FieldreportRead,
        Ability::FieldreportWrite,
        Ability::FieldreportTools,
        Ability::Erp,
        Ability::Jobs,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Ability::All => "*",
            Ability::Leasing => "leasing",
            Ability::FieldreportRead => "fieldreport:read",
            Ability::FieldreportWrite => "fieldreport:write",
            Ability::FieldreportTools => "fieldreport:tools",
            Ability::Erp => "erp",
            Ability::Jobs => "jobs",
        }
    }

    /// The ability of this name; `None` for any other text.
    pub fn parse(name: &str) -> Option<Ability> {
        Ability::EVERY.into_iter().find(|ability| ability.as_str() == name)
    }

    /// The names of every ability, for messages: `*`, `leasing`, ….
    pub fn names() -> String {
        Ability::EVERY.iter().map(|a| format!("`{}`", a.as_str())).collect::<Vec<_>>().join(", ")
    }
}

impl fmt::Display for Ability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The abilities of one token: a set of [`Ability`], one bit each (checked on every request,
/// so without an allocation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Abilities(u8);

impl Abilities {
    const fn bit(ability: Ability) -> u8 {
        1 << ability as u8
    }

    /// Everything: what a login token holds.
    pub fn all() -> Abilities {
        Abilities(Self::bit(Ability::All))
    }

    /// These abilities.
    pub fn of(abilities: impl IntoIterator<Item = Ability>) -> Abilities {
        Abilities(abilities.into_iter().fold(0, |bits, ability| bits | Self::bit(ability)))
    }

    /// Whether a token with these abilities may do what needs `needed`.
    pub fn allow(&self, needed: Ability) -> bool {
        self.0 & (Self::bit(Ability::All) | Self::bit(needed)) != 0
    }

    /// The abilities held, in the order of [`Ability::EVERY`].
    pub fn iter(&self) -> impl Iterator<Item = Ability> + '_ {
        Ability::EVERY.into_iter().filter(|ability| self.0 & Self::bit(*ability) != 0)
    }

    /// As stored: the names, space-separated.
    pub fn stored(&self) -> String {
        self.iter().map(Ability::as_str).collect::<Vec<_>>().join(" ")
    }

    /// From what [`Abilities::stored`] wrote. A name this release does not know grants nothing
    /// (a token written by a later release keeps only what this one understands).
    pub fn from_stored(stored: &str) -> Abilities {
        Abilities::of(stored.split_whitespace().filter_map(Ability::parse))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back() {
        for ability in Ability::EVERY {
            assert_eq!(Ability::parse(ability.as_str()), Some(ability));
        }
        assert_eq!(Ability::parse("fieldreport"), None);
        assert_eq!(Ability::parse("Leasing"), None);
    }

    #[test]
    fn all_allows_everything_and_others_only_themselves() {
        for needed in Ability::EVERY {
            assert!(Abilities::all().allow(needed));
        }
        let read = Abilities::of([Ability::FieldreportRead]);
        assert!(read.allow(Ability::FieldreportRead));
        assert!(!read.allow(Ability::FieldreportWrite));
        assert!(!read.allow(Ability::All), "a narrow token does not pass for one that may do everything");
    }

    #[test]
    fn stored_form_reads_back_and_ignores_unknown_names() {
        let abilities = Abilities::of([Ability::Jobs, Ability::FieldreportRead, Ability::Jobs]);
        assert_eq!(abilities.stored(), "fieldreport:read jobs");
        assert_eq!(Abilities::from_stored(&abilities.stored()), abilities);
        assert_eq!(Abilities::from_stored("*"), Abilities::all());
        assert_eq!(Abilities::from_stored("telepathy fieldreport:read"), Abilities::of([Ability::FieldreportRead]));
        assert!(!Abilities::from_stored("").allow(Ability::Leasing));
    }
}
