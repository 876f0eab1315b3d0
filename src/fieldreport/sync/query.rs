//! The OData query of each request of a sync, and where a sync starts.

use generated::fieldreport::EntityInfo;

use crate::fieldreport::page::Key;
use crate::vocabulary::stamp::Stamp;

/// Records asked for per `$top` window.
pub(super) const WINDOW: usize = 500;

/// Where a query of a sync starts. A sync reads first the records never modified, which have
/// no `DateModified` (the description allows null) and so no place in the key order, by Id;
/// then every other record in key order (`DateModified`, then `Id`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum From {
    /// Records without a `DateModified`, in Id order: those created at or after `since` or
    /// without a `DateOfCreation` (every one on the set's first sync, `None`), with an Id
    /// above `above`.
    Unmodified { since: Option<Stamp>, above: Option<i64> },
    /// Every record with a `DateModified`: the set's first sync.
    Everything,
    /// Records stamped at or after this: the overlap window before the last sync's cursor.
    Since(Stamp),
    /// Records after this key: the last key of the pages read so far.
    After(Stamp, i64),
    /// Records stamped from `from` until before `until`, in Id order, with an Id above `above`:
    /// a stamp that the key order cannot page through (see [`From::past_tie`]).
    Tie { from: Stamp, until: Stamp, above: Option<i64> },
}

impl From {
    /// The `$filter` of the query, its stamps written as `literal` says (see [`Literal`]).
    /// The key's `or` keeps the query on the key order whatever was written meanwhile: a
    /// position (`$skip`, a next link made of one) moves when a record read before it
    /// changes, a key does not.
    pub(super) fn filter(&self, literal: Literal) -> String {
        match self {
            From::Unmodified { since, above } => {
                let mut filter = "DateModified eq null".to_string();
                // A record with neither stamp has no place in time, so every sync reads it
                // again (unchanged, it costs no write): else only the set's first sync would.
                if let Some(since) = since {
                    let at = since.literal(literal.0);
                    filter.push_str(&format!(" and (DateOfCreation ge {at} or DateOfCreation eq null)"));
                }
                if let Some(above) = above {
                    filter.push_str(&format!(" and Id gt {above}L"));
                }
                filter
            }
            From::Everything => "DateModified ne null".to_string(),
            From::Since(stamp) => format!("DateModified ge {}", stamp.literal(literal.0)),
            From::After(stamp, id) => {
                let at = stamp.literal(literal.0);
                format!("DateModified gt {at} or (DateModified eq {at} and Id gt {id}L)")
            }
            From::Tie { from, until, above } => {
                let (from, until) = (from.literal(literal.0), until.literal(literal.0));
                let mut filter = format!("DateModified ge {from} and DateModified lt {until}");
                if let Some(above) = above {
                    filter.push_str(&format!(" and Id gt {above}L"));
                }
                filter
            }
        }
    }

    /// Where a sync goes on past the records stamped `at` when the key order cannot page
    /// through them: all records stamped within a step of it (see [`Stamp::step`]), read by Id,
    /// then those stamped later. A server that keeps finer stamps than it writes orders and
    /// filters by the stamps it keeps: records it writes with the same `DateModified` are not in
    /// Id order, and `DateModified gt T` holds for those of `T` already read, so that a
    /// query after the last key of a page answers the same page again when more records
    /// share its stamp than a page holds. Every record stamped before the step was read: they
    /// come before the page's last record in the server's order.
    /// The step before `at` stops at `floor`, where the sync started (see [`From::floor`]): a
    /// server that rounds keeps a record it writes as the start's stamp before it, and its
    /// count of what the sync read leaves that record out (see `verify.rs`); so read, it was
    /// counted as read, in the place of a record the server skipped.
    pub(super) fn past_tie(at: &Stamp, floor: Option<&Stamp>) -> From {
        let from = at.earlier_by(at.step());
        let from = floor.filter(|floor| **floor > from).cloned().unwrap_or(from);
        From::Tie { from, until: at.later_by(at.step()), above: None }
    }

    /// The stamp a sync's stamped records start at, none on the set's first sync: the records
    /// stamped before it are not the sync's.
    pub(super) fn floor(&self) -> Option<Stamp> {
        match self.modified() {
            From::Since(stamp) => Some(stamp),
            _ => None,
        }
    }

    /// Whether this query reads records in Id order (the key of its pages is the Id alone).
    pub(super) fn by_id(&self) -> bool {
        matches!(self, From::Unmodified { .. } | From::Tie { .. })
    }

    /// Whether the filter writes a stamp (whose form a server may refuse).
    pub(super) fn has_stamp(&self) -> bool {
        !matches!(self, From::Everything | From::Unmodified { since: None, .. })
    }

    /// The field whose stamps the filter compares: a server may take another literal form
    /// for each.
    pub(super) fn stamped_field(&self) -> StampedField {
        match self {
            From::Unmodified { .. } => StampedField::DateOfCreation,
            _ => StampedField::DateModified,
        }
    }

    /// The order the query asks for.
    pub(super) fn order(&self) -> &'static str {
        match self {
            From::Unmodified { .. } | From::Tie { .. } => "Id",
            _ => "DateModified,Id",
        }
    }

    /// Where the records with a `DateModified` start once those without are read.
    pub(super) fn modified(&self) -> From {
        match self {
            From::Unmodified { since: Some(since), .. } => From::Since(since.clone()),
            From::Unmodified { since: None, .. } => From::Everything,
            other => other.clone(),
        }
    }

    /// Where the query after a page whose last key is `key` starts.
    pub(super) fn next(&self, key: Key) -> From {
        match self {
            From::Unmodified { since, .. } => From::Unmodified { since: since.clone(), above: Some(key.1) },
            From::Tie { from, until, .. } => From::Tie { from: from.clone(), until: until.clone(), above: Some(key.1) },
            _ => From::After(key.0, key.1),
        }
    }

    /// Whether `key` lies after where this query starts: the upstream honoured the filter.
    /// Records without a `DateModified` are keyed by their Id alone (see
    /// [`crate::fieldreport::page::last_unmodified_key`]).
    pub(super) fn precedes(&self, key: &(Stamp, i64)) -> bool {
        match self {
            From::Unmodified { above, .. } | From::Tie { above, .. } => above.is_none_or(|above| key.1 > above),
            From::Everything => true,
            From::Since(stamp) => key.0 >= *stamp,
            From::After(stamp, id) => (&key.0, key.1) > (stamp, *id),
        }
    }
}

/// The stamped field a filter compares (`DateModified eq null` writes no stamp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StampedField {
    DateOfCreation = 0,
    DateModified = 1,
}

/// The form of each stamped field's literals that the server took, by [`StampedField`].
pub(super) type Forms = [Literal; 2];

/// How a sync's filters write a `DateModified` value: the prefix of a typed literal
/// (`datetime'…'`) or none (bare).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Literal(pub(super) Option<&'static str>);

impl Literal {
    /// The form the description declares (OData v3 `Edm.DateTime`: `datetime'…'`).
    pub(super) const DESCRIBED: Literal = Literal(generated::fieldreport::STAMP_LITERAL);

    /// Every form but this one, in the order a sync tries them when a server refuses this one:
    /// the other OData version's (bare for a typed one, `datetime'…'` for a bare one), then
    /// `datetimeoffset'…'`, what a v3 server takes for stamps it types `Edm.DateTimeOffset`.
    pub(super) fn others(self) -> impl Iterator<Item = Literal> {
        [Literal(Some("datetime")), Literal(None), Literal(Some("datetimeoffset"))]
            .into_iter()
            .filter(move |form| *form != self)
    }

    /// The form as a log line names it: `datetime'…'`, or `bare`.
    pub(super) fn name(self) -> String {
        match self.0 {
            Some(prefix) => format!("{prefix}'…'"),
            None => "bare".to_string(),
        }
    }
}

/// The query of one request of a sync: the set's expands, where it starts, the key order and
/// a window of [`WINDOW`] records (the upstream may answer fewer).
pub(super) fn query(info: &EntityInfo, from: &From, literal: Literal) -> String {
    let mut parts = Vec::new();
    if !info.expand.is_empty() {
        parts.push(("$expand".to_string(), info.expand.join(",")));
    }
    parts.push(("$filter".to_string(), from.filter(literal)));
    parts.push(("$orderby".to_string(), from.order().to_string()));
    parts.push(("$top".to_string(), WINDOW.to_string()));
    url::form_urlencoded::Serializer::new(String::new()).extend_pairs(parts).finish()
}

/// Where a sync starts: with the records never modified, created since `overlap` before the
/// last sync's cursor (records stamped before it but committed after it was read: a long
/// upstream transaction, a stamp of a coarse clock), or the whole set.
pub(super) fn start(cursor: Option<&str>, overlap: std::time::Duration) -> From {
    From::Unmodified { since: cursor.map(|cursor| Stamp::parse(cursor).earlier_by(overlap)), above: None }
}
