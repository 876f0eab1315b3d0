//! The `$filter` expressions the field-report simulator understands: comparisons
//! (`eq`, `ne`, `gt`, `ge`, `lt`, `le`) of a field (`Id`, `DateModified`, `Company/Id`, …) with
//! a literal (`'text'`, `12L`, `12`, `null`, a timestamp typed as OData v3 writes it,
//! `datetime'2026-01-01T00:00:00'`, or bare as v4 does), joined by `and` and `or`, grouped in
//! parentheses. `DateModified` compares by instant, a number with a number, text with text.
//!
//! A sync's key filters (`DateModified ge T`, `DateModified gt T or (DateModified eq T and
//! Id gt K)`) are also read as where they start in key order ([`Filter::key_start`]), so that a
//! page of a large set is found without a scan.

use serde_json::{Map, Value};

use crate::sandbox::comparison::Comparison;
use crate::vocabulary::stamp::Stamp;

#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    Or(Vec<Filter>),
    And(Vec<Filter>),
    Compare { field: String, op: Comparison, value: String, written: Written },
}

/// How a literal is written: bare (`12L`, `2026-01-01T00:00:00Z`), quoted (`'text'`) or typed
/// with a prefix (`datetime'2026-01-01T00:00:00'`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    Bare,
    Quoted,
    Typed(String),
}

impl Written {
    /// How a literal of this form looks, for an error message.
    pub fn form(&self) -> String {
        match self {
            Written::Bare => "bare (2026-01-01T00:00:00Z)".to_string(),
            Written::Quoted => "quoted ('…')".to_string(),
            Written::Typed(prefix) => format!("{prefix}'…'"),
        }
    }
}

/// The fields compared as stamps.
const STAMP_FIELDS: [&str; 2] = ["DateModified", "DateOfCreation"];

/// Where a key filter starts: records after `(stamp, id)`, or at or after `stamp` when `id` is
/// `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyStart {
    pub stamp: Stamp,
    pub after_id: Option<i64>,
    pub strict: bool,
}

impl KeyStart {
    /// Whether a record with this key lies at or after the start.
    pub fn admits(&self, stamp: &Stamp, id: i64) -> bool {
        match (self.after_id, self.strict) {
            (Some(after), _) => (stamp, id) > (&self.stamp, after),
            (None, true) => *stamp > self.stamp,
            (None, false) => *stamp >= self.stamp,
        }
    }
}

fn tokens(text: &str) -> Option<Vec<(String, Written)>> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    // The text of a quoted literal, its opening quote read; `''` is a quote.
    let quoted = |chars: &mut std::iter::Peekable<std::str::Chars>| {
        let mut literal = String::new();
        loop {
            match chars.next()? {
                '\'' if chars.peek() == Some(&'\'') => {
                    chars.next();
                    literal.push('\'');
                }
                '\'' => return Some(literal),
                other => literal.push(other),
            }
        }
    };
    while let Some(&c) = chars.peek() {
        match c {
            ' ' | '\t' => {
                chars.next();
            }
            '(' | ')' => {
                chars.next();
                out.push((c.to_string(), Written::Bare));
            }
            '\'' => {
                chars.next();
                out.push((quoted(&mut chars)?, Written::Quoted));
            }
            _ => {
                let mut word = String::new();
                while let Some(&c) = chars.peek() {
                    if matches!(c, ' ' | '\t' | '(' | ')' | '\'') {
                        break;
                    }
                    word.push(c);
                    chars.next();
                }
                // A word right before a quote is a typed literal's prefix (`datetime'…'`).
                if chars.peek() == Some(&'\'') {
                    chars.next();
                    out.push((quoted(&mut chars)?, Written::Typed(word)));
                } else {
                    out.push((word, Written::Bare));
                }
            }
        }
    }
    Some(out)
}

struct Parser {
    tokens: Vec<(String, Written)>,
    at: usize,
}

impl Parser {
    fn peek_word(&self) -> Option<&str> {
        self.tokens.get(self.at).filter(|(_, written)| *written == Written::Bare).map(|(word, _)| word.as_str())
    }

    fn next(&mut self) -> Option<(String, Written)> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn or(&mut self) -> Option<Filter> {
        self.joined("or", Self::and, Filter::Or)
    }

    fn and(&mut self) -> Option<Filter> {
        self.joined("and", Self::atom, Filter::And)
    }

    /// Terms read by `term` between the words `word`: one alone is itself, more are `join`ed.
    fn joined(
        &mut self,
        word: &str,
        term: fn(&mut Self) -> Option<Filter>,
        join: fn(Vec<Filter>) -> Filter,
    ) -> Option<Filter> {
        let mut terms = vec![term(self)?];
        while self.peek_word() == Some(word) {
            self.at += 1;
            terms.push(term(self)?);
        }
        Some(if terms.len() == 1 { terms.remove(0) } else { join(terms) })
    }

    fn atom(&mut self) -> Option<Filter> {
        if self.peek_word() == Some("(") {
            self.at += 1;
            let inner = self.or()?;
            return (self.next()?.0 == ")").then_some(inner);
        }
        let (field, written) = self.next()?;
        if written != Written::Bare || field == ")" {
            return None;
        }
        let op = Comparison::parse(&self.next()?.0)?;
        let (value, written) = self.next()?;
        Some(Filter::Compare { field, op, value, written })
    }
}

/// A record's value of a field, following `/` into related records.
fn field_of<'a>(record: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    let mut parts = path.split('/');
    let mut value = record.get(parts.next()?)?;
    for part in parts {
        value = value.get(part)?;
    }
    Some(value)
}

fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Whether a literal is `null`, which every version writes alike.
fn is_null(value: &str, written: &Written) -> bool {
    *written == Written::Bare && value == "null"
}

impl Filter {
    /// The filter of a `$filter` text; `None` for one the simulator does not understand.
    pub fn parse(text: &str) -> Option<Filter> {
        let mut parser = Parser { tokens: tokens(text)?, at: 0 };
        let filter = parser.or()?;
        (parser.at == parser.tokens.len()).then_some(filter)
    }

    pub fn matches(&self, record: &Map<String, Value>) -> bool {
        match self {
            Filter::Or(terms) => terms.iter().any(|term| term.matches(record)),
            Filter::And(terms) => terms.iter().all(|term| term.matches(record)),
            // `eq null` holds for a field absent or null, `ne null` for any other; no other
            // comparison with null holds.
            Filter::Compare { field, op, value, written } if is_null(value, written) => {
                let null = field_of(record, field).is_none_or(Value::is_null);
                match op {
                    Comparison::Eq => null,
                    Comparison::Ne => !null,
                    _ => false,
                }
            }
            Filter::Compare { field, op, value, written } => {
                let Some(actual) = field_of(record, field).and_then(text_of) else { return false };
                let order = if STAMP_FIELDS.contains(&field.as_str()) {
                    Stamp::parse(&actual).cmp(&Stamp::parse(value))
                } else {
                    let number = value.strip_suffix('L').unwrap_or(value);
                    match (written, actual.parse::<i64>(), number.parse::<i64>()) {
                        (Written::Bare, Ok(actual), Ok(expected)) => actual.cmp(&expected),
                        _ => actual.as_str().cmp(value.as_str()),
                    }
                };
                op.holds(order)
            }
        }
    }

    /// Whether every stamp compared is written as `accepted`: a server of one OData version
    /// refuses the other's form (v3 a bare timestamp, v4 a typed one).
    pub fn writes_stamps_as(&self, accepted: &Written) -> bool {
        match self {
            Filter::Or(terms) | Filter::And(terms) => terms.iter().all(|term| term.writes_stamps_as(accepted)),
            Filter::Compare { field, value, written, .. } => {
                !STAMP_FIELDS.contains(&field.as_str()) || written == accepted || is_null(value, written)
            }
        }
    }

    fn compares(&self, name: &str, wanted: Comparison) -> Option<&str> {
        match self {
            Filter::Compare { field, op, value, .. } if field == name && *op == wanted => Some(value),
            _ => None,
        }
    }

    /// Where this filter starts in (`DateModified`, `Id`) order, when it is one of a sync's key
    /// filters.
    pub fn key_start(&self) -> Option<KeyStart> {
        if let Some(stamp) = self.compares("DateModified", Comparison::Ge) {
            return Some(KeyStart { stamp: Stamp::parse(stamp), after_id: None, strict: false });
        }
        if let Some(stamp) = self.compares("DateModified", Comparison::Gt) {
            return Some(KeyStart { stamp: Stamp::parse(stamp), after_id: None, strict: true });
        }
        let Filter::Or(terms) = self else { return None };
        let [later, Filter::And(same)] = terms.as_slice() else { return None };
        let [at, above] = same.as_slice() else { return None };
        let stamp = later.compares("DateModified", Comparison::Gt)?;
        let id = above.compares("Id", Comparison::Gt)?;
        if Stamp::parse(at.compares("DateModified", Comparison::Eq)?) != Stamp::parse(stamp) {
            return None;
        }
        let id = id.strip_suffix('L').unwrap_or(id).parse().ok()?;
        Some(KeyStart { stamp: Stamp::parse(stamp), after_id: Some(id), strict: true })
    }

    /// The Ids this filter can hold, as its `Id` comparisons joined by `and` bound them (every
    /// Id without one): a set kept by Id looks at these alone, not at every record (a sync's
    /// check lists and counts its window in ranges of Ids). When they hold none, a single Id
    /// that the filter does not hold (a range never runs backwards).
    pub fn id_bounds(&self) -> std::ops::RangeInclusive<i64> {
        let (mut lo, mut hi) = (i128::from(i64::MIN), i128::from(i64::MAX));
        self.narrow_ids(&mut lo, &mut hi);
        let within = |n: i128| n.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        let hi = within(hi);
        within(lo).min(hi)..=hi
    }

    fn narrow_ids(&self, lo: &mut i128, hi: &mut i128) {
        match self {
            Filter::And(terms) => terms.iter().for_each(|term| term.narrow_ids(lo, hi)),
            Filter::Compare { field, op, value, .. } if field == "Id" => {
                let Ok(n) = value.strip_suffix('L').unwrap_or(value).parse::<i64>().map(i128::from) else { return };
                match op {
                    Comparison::Gt => *lo = (*lo).max(n + 1),
                    Comparison::Ge => *lo = (*lo).max(n),
                    Comparison::Lt => *hi = (*hi).min(n - 1),
                    Comparison::Le => *hi = (*hi).min(n),
                    Comparison::Eq => (*lo, *hi) = ((*lo).max(n), (*hi).min(n)),
                    Comparison::Ne => {}
                }
            }
            _ => {}
        }
    }

    /// The id a filter `Id gt <n>L` starts above, if it is one.
    pub fn id_above(&self) -> Option<i64> {
        let value = self.compares("Id", Comparison::Gt)?;
        value.strip_suffix('L').unwrap_or(value).parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn ids_are_bounded_by_the_comparisons_joined_by_and() {
        let bounds = |text: &str| Filter::parse(text).unwrap().id_bounds();
        assert_eq!(bounds("(Name eq 'a' or Id lt 3L) and Id gt 5L and Id le 9L"), 6..=9);
        assert_eq!(bounds("Id ge 5 and (Id lt 7L and Id ne 6L)"), 5..=6);
        assert_eq!(bounds("Id lt 5L or Id gt 9L"), i64::MIN..=i64::MAX);
        assert_eq!(bounds("Id eq 4L"), 4..=4);
        assert_eq!(bounds(&format!("Id gt {}L", i64::MAX)), i64::MAX..=i64::MAX);
        assert_eq!(bounds("Id gt 9L and Id lt 5L"), 4..=4);
    }

    #[test]
    fn comparisons_join_with_and_or_and_parentheses() {
        let r =
            record(json!({"Id": "12", "Name": "it's", "DateModified": "2026-01-01T00:00:00Z", "Company": {"Id": "3"}}));
        for (text, expected) in [
            ("Id eq 12L", true),
            ("Id gt 9L", true),
            ("Id gt 12L", false),
            ("Name eq 'it''s'", true),
            ("Company/Id eq 3L", true),
            ("DateModified ge 2026-01-01T00:00:00.000Z", true),
            ("DateModified gt 2026-01-01T00:00:00Z or (DateModified eq 2026-01-01T00:00:00Z and Id gt 11L)", true),
            ("DateModified gt 2026-01-01T00:00:00Z or (DateModified eq 2026-01-01T00:00:00Z and Id gt 12L)", false),
            ("Id lt 13L and Name ne 'x'", true),
            ("DateModified ne null", true),
            ("DateModified eq null", false),
            ("DateOfCreation eq null and Id gt 9L", true),
            ("Name eq 'null'", false),
        ] {
            assert_eq!(Filter::parse(text).unwrap().matches(&r), expected, "{text}");
        }
        for text in ["Id", "Id eq", "(Id eq 1L", "Id is 1L", "Id eq 1L or"] {
            assert!(Filter::parse(text).is_none(), "{text}");
        }
    }

    #[test]
    fn key_filters_say_where_they_start() {
        let t = Stamp::parse("2026-01-01T00:00:00Z");
        let key = Filter::parse(
            "DateModified gt 2026-01-01T00:00:00Z or (DateModified eq 2026-01-01T00:00:00Z and Id gt 7L)",
        )
        .unwrap()
        .key_start()
        .unwrap();
        assert!(key.admits(&t, 8) && !key.admits(&t, 7));
        let since = Filter::parse("DateModified ge 2026-01-01T00:00:00Z").unwrap().key_start().unwrap();
        assert!(since.admits(&t, 1));
        assert!(Filter::parse("Id eq 1L").unwrap().key_start().is_none());
    }

    /// A typed stamp (`datetime'…'`, OData v3) compares and starts a key as a bare one (v4)
    /// does; which of the two forms a filter uses is told, for a server that takes only one.
    #[test]
    fn typed_and_bare_stamps_compare_alike_and_are_told_apart() {
        let r = record(json!({"Id": "12", "Name": "datetime", "DateModified": "2026-01-01T00:00:00Z"}));
        let typed = Filter::parse(
            "DateModified gt datetime'2026-01-01T00:00:00' or (DateModified eq datetime'2026-01-01T00:00:00' and Id gt 11L)",
        )
        .unwrap();
        assert!(typed.matches(&r));
        let start = typed.key_start().unwrap();
        assert_eq!(start.stamp, Stamp::parse("2026-01-01T00:00:00Z"));
        assert_eq!(start.after_id, Some(11));
        let datetime = Written::Typed("datetime".into());
        assert!(typed.writes_stamps_as(&datetime) && !typed.writes_stamps_as(&Written::Bare));
        let bare = Filter::parse("DateModified ge 2026-01-01T00:00:00Z and Name eq 'datetime'").unwrap();
        assert!(bare.matches(&r));
        assert!(bare.writes_stamps_as(&Written::Bare) && !bare.writes_stamps_as(&datetime));
        assert!(Filter::parse("Id gt 1L").unwrap().writes_stamps_as(&datetime), "no stamp, nothing to refuse");
        assert!(Filter::parse("DateModified eq null").unwrap().writes_stamps_as(&datetime), "null is no stamp");
        assert!(
            !Filter::parse("DateModified ge datetimeoffset'2026-01-01T00:00:00Z'").unwrap().writes_stamps_as(&datetime)
        );
        assert!(Filter::parse("DateModified ge datetime'2026-01-01").is_none(), "an unclosed literal");
    }
}
