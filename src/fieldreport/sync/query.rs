//! The OData query of each request of a sync, and where a sync starts.

use generated::fieldreport::EntityInfo;

use crate::vocabulary::stamp::Stamp;

/// Records asked for per `$top` window.
pub(super) const WINDOW: usize = 500;

/// Where a query of a sync starts, in the sync's key order (`DateModified`, then `Id`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum From {
    /// The whole set: the set's first sync.
    Everything,
    /// Records stamped at or after this: the overlap window before the last sync's cursor.
    Since(Stamp),
    /// Records after this key: the last key of the pages read so far.
    After(Stamp, i64),
}

impl From {
    /// The `$filter` of the query, if any, its stamps written as `literal` says (see
    /// [`Literal`]). The key's `or` keeps the query on the key order whatever was written
    /// meanwhile: a position (`$skip`, a next link made of one) moves when a record read
    /// before it changes, a key does not.
    pub(super) fn filter(&self, literal: Literal) -> Option<String> {
        match self {
            From::Everything => None,
            From::Since(stamp) => Some(format!("DateModified ge {}", stamp.literal(literal.0))),
            From::After(stamp, id) => {
                let at = stamp.literal(literal.0);
                Some(format!("DateModified gt {at} or (DateModified eq {at} and Id gt {id}L)"))
            }
        }
    }

    /// Whether `key` lies after where this query starts: the upstream honoured the filter.
    pub(super) fn precedes(&self, key: &(Stamp, i64)) -> bool {
        match self {
            From::Everything => true,
            From::Since(stamp) => key.0 >= *stamp,
            From::After(stamp, id) => (&key.0, key.1) > (stamp, *id),
        }
    }
}

/// How a sync's filters write a `DateModified` value: the prefix of a typed literal
/// (`datetime'…'`) or none (bare).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Literal(pub(super) Option<&'static str>);

impl Literal {
    /// The form the description declares (OData v3 `Edm.DateTime`: `datetime'…'`).
    pub(super) const DESCRIBED: Literal = Literal(generated::fieldreport::STAMP_LITERAL);

    /// The form of the other OData version: bare for a typed one, `datetime'…'` for a bare one.
    pub(super) fn other(self) -> Literal {
        match self.0 {
            Some(_) => Literal(None),
            None => Literal(Some("datetime")),
        }
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
    if let Some(filter) = from.filter(literal) {
        parts.push(("$filter".to_string(), filter));
    }
    parts.push(("$orderby".to_string(), "DateModified,Id".to_string()));
    parts.push(("$top".to_string(), WINDOW.to_string()));
    url::form_urlencoded::Serializer::new(String::new()).extend_pairs(parts).finish()
}

/// Where a sync starts: `overlap` before the last sync's cursor (records stamped before it but
/// committed after it was read: a long upstream transaction, a stamp of a coarse clock), or the
/// whole set.
pub(super) fn start(cursor: Option<&str>, overlap: std::time::Duration) -> From {
    match cursor {
        Some(cursor) => From::Since(Stamp::parse(cursor).earlier_by(overlap)),
        None => From::Everything,
    }
}
