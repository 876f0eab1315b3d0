//! Lists and counts: paging, `sort` and the `<property>-<op>=value` filters.

use std::cmp::Ordering;

use serde_json::{Map, Value};

use super::api::{bad_request, query_pairs};
use crate::sandbox::comparison::Comparison;
use crate::sandbox::http::SimResponse;

const DEFAULT_PAGE_SIZE: usize = 100;
const MAX_PAGE_SIZE: usize = 1000;

/// A scalar as text, for comparing; arrays, objects and null have none.
pub(super) fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Numbers compare as numbers when both sides are numbers, anything else as text.
fn compare_text(a: &str, b: &str) -> Ordering {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(a), Ok(b)) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
        _ => a.cmp(b),
    }
}

/// Orders two property values for `sort`; missing values come first.
pub(super) fn compare_values(a: Option<&Value>, b: Option<&Value>) -> Ordering {
    match (a.and_then(text), b.and_then(text)) {
        (Some(a), Some(b)) => compare_text(&a, &b),
        (a, b) => a.is_some().cmp(&b.is_some()),
    }
}

/// SQL-style `like` with `%` as the only wildcard.
pub(super) fn like(text: &str, pattern: &str) -> bool {
    let parts: Vec<&str> = pattern.split('%').collect();
    let [first, middle @ .., last] = parts.as_slice() else { return text == pattern };
    let Some(mut rest) = text.strip_prefix(first) else { return false };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Compare(Comparison),
    In,
    NotIn,
    Like,
    ILike,
    Null,
    NotNull,
}

/// One `<property>-<op>=value` filter.
pub(super) struct Filter {
    property: String,
    op: Op,
    value: String,
}

impl Filter {
    /// Reads a query pair; `None` when its name is no filter.
    pub(super) fn parse(name: &str, value: &str) -> Option<Filter> {
        let (property, op) = name.rsplit_once('-')?;
        let op = match op {
            "in" => Op::In,
            "notin" => Op::NotIn,
            "like" => Op::Like,
            "ilike" => Op::ILike,
            "null" => Op::Null,
            "notnull" => Op::NotNull,
            comparison => Op::Compare(Comparison::parse(comparison)?),
        };
        Some(Filter { property: property.to_string(), op, value: value.to_string() })
    }

    /// The values of `in`/`notin`: a JSON array or a comma-separated list.
    fn values(&self) -> Vec<String> {
        match serde_json::from_str::<Vec<Value>>(&self.value) {
            Ok(values) => values.iter().filter_map(text).collect(),
            Err(_) => self.value.split(',').map(|v| v.trim().to_string()).collect(),
        }
    }

    /// The id after which every record this filter admits lies (`id-gt`, `id-ge`), for a
    /// list read in id order.
    fn least_id(&self) -> Option<u64> {
        let id: u64 = self.value.parse().ok().filter(|_| self.property == "id")?;
        match self.op {
            Op::Compare(Comparison::Gt) => Some(id),
            Op::Compare(Comparison::Ge) => id.checked_sub(1),
            _ => None,
        }
    }

    pub(super) fn matches(&self, record: &Map<String, Value>) -> bool {
        let actual = record.get(&self.property).and_then(text);
        let equals = |expected: &str| actual.as_deref().is_some_and(|a| compare_text(a, expected).is_eq());
        match self.op {
            Op::Null => record.get(&self.property).is_none_or(Value::is_null),
            Op::NotNull => record.get(&self.property).is_some_and(|v| !v.is_null()),
            Op::In => self.values().iter().any(|v| equals(v)),
            Op::NotIn => !self.values().iter().any(|v| equals(v)),
            Op::Like => actual.is_some_and(|a| like(&a, &self.value)),
            Op::ILike => actual.is_some_and(|a| like(&a.to_lowercase(), &self.value.to_lowercase())),
            // A record without the property is unequal to any value, and in no order with it.
            Op::Compare(comparison) => match actual {
                Some(a) => comparison.holds(compare_text(&a, &self.value)),
                None => comparison == Comparison::Ne,
            },
        }
    }
}

/// The query of a list or count call.
pub(super) struct ListQuery {
    pub(super) page: usize,
    pub(super) page_size: usize,
    /// Fields to sort by, each with "descending"; the id breaks ties.
    pub(super) sort: Vec<(String, bool)>,
    pub(super) filters: Vec<Filter>,
}

impl ListQuery {
    /// Whether the list is in id order alone, the order its records are kept in.
    pub(super) fn by_id(&self) -> bool {
        self.sort.iter().all(|(field, descending)| field == "id" && !descending)
    }

    /// The greatest id that no record of the list can have (`id-gt` and `id-ge` filters).
    pub(super) fn ids_after(&self) -> Option<u64> {
        self.filters.iter().filter_map(Filter::least_id).max()
    }

    pub(super) fn parse(query: Option<&str>) -> Result<ListQuery, SimResponse> {
        let mut parsed = ListQuery { page: 1, page_size: DEFAULT_PAGE_SIZE, sort: Vec::new(), filters: Vec::new() };
        for (name, value) in query_pairs(query) {
            match name.as_str() {
                "page" => match value.parse() {
                    Ok(page) if page >= 1 => parsed.page = page,
                    _ => return Err(bad_request(&format!("page must be a number from 1, not {value:?}"))),
                },
                "pageSize" => match value.parse() {
                    Ok(size) if (1..=MAX_PAGE_SIZE).contains(&size) => parsed.page_size = size,
                    _ => {
                        return Err(bad_request(&format!("pageSize must be from 1 to {MAX_PAGE_SIZE}, not {value:?}")));
                    }
                },
                "sort" => {
                    for field in value.split(',').map(str::trim).filter(|f| !f.is_empty()) {
                        parsed.sort.push(match field.strip_prefix('-') {
                            Some(field) => (field.to_string(), true),
                            None => (field.trim_start_matches('+').to_string(), false),
                        });
                    }
                }
                _ => parsed.filters.extend(Filter::parse(&name, &value)),
            }
        }
        parsed.sort.push(("id".into(), false));
        Ok(parsed)
    }
}
