//! The six comparisons both simulators' filters share (`eq`, `ne`, `gt`, `ge`, `lt`, `le`).

use std::cmp::Ordering;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

impl Comparison {
    /// `eq`, `ne`, `gt`, `ge`, `lt` or `le`.
    pub fn parse(word: &str) -> Option<Comparison> {
        Some(match word {
            "eq" => Comparison::Eq,
            "ne" => Comparison::Ne,
            "gt" => Comparison::Gt,
            "ge" => Comparison::Ge,
            "lt" => Comparison::Lt,
            "le" => Comparison::Le,
            _ => return None,
        })
    }

    /// Whether a value ordered `order` against the compared one passes.
    pub fn holds(self, order: Ordering) -> bool {
        match self {
            Comparison::Eq => order == Ordering::Equal,
            Comparison::Ne => order != Ordering::Equal,
            Comparison::Gt => order == Ordering::Greater,
            Comparison::Ge => order != Ordering::Less,
            Comparison::Lt => order == Ordering::Less,
            Comparison::Le => order != Ordering::Greater,
        }
    }
}
