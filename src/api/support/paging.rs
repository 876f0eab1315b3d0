//! How a list is read: by key (`?after=<cursor>&limit=N`, a page's cost flat whatever its
//! depth, answered with the next cursor and a `next` link and no count), or by position
//! (`?page=N&per_page=M`, answered with the count; kept for existing callers: each page costs
//! what it skips). The mirrors' lists take both (docs/api.md, "Reading a set back").
//!
//! A cursor is opaque to consumers: the base64url (no padding) of the last key read, which
//! only this service reads back; a consumer passes on what it was given.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use schemars::JsonSchema;
use schemars::r#gen::SchemaGenerator;
use schemars::schema::Schema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::json;

use crate::error::{ApiError, FieldErrors};

/// A position in a list, as answered in `next_cursor` and asked with `after`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor(String);

/// Characters of a cursor at most: a key of up to 255 characters of up to 4 bytes each.
const MAX_CURSOR_LEN: usize = 1400;

impl Cursor {
    /// The cursor that continues after `key`.
    pub fn after(key: &str) -> Cursor {
        Cursor(URL_SAFE_NO_PAD.encode(key))
    }

    /// The cursor's text, as it goes into a link (base64url needs no escaping).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key the cursor continues after; a 422 naming `after` for a text the document does
    /// not admit (1 to 1,400 of `A-Z a-z 0-9 _ -`). Every text it admits is a position: a
    /// cursor this service did not write (not base64url, not UTF-8) reads after the key it
    /// spells, which only moves where the page starts; no key holds a NUL (which Postgres's
    /// text cannot hold), and an empty one reads from the start.
    pub fn key(&self) -> Result<String, ApiError> {
        let admitted = (1..=MAX_CURSOR_LEN).contains(&self.0.len())
            && self.0.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !admitted {
            return Err(invalid("after", "after is a cursor this service answered (next_cursor), passed on as it is."));
        }
        let key = match URL_SAFE_NO_PAD.decode(&self.0) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(_) => self.0.clone(),
        };
        Ok(key.replace('\0', ""))
    }
}

fn invalid(field: &str, message: &str) -> ApiError {
    ApiError::validation(FieldErrors::from([(field.to_string(), vec![message.to_string()])]))
}

fn cursor_schema(description: &str) -> Schema {
    serde_json::from_value(json!({
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_CURSOR_LEN,
        "pattern": "^[A-Za-z0-9_-]+$",
        "description": description,
    }))
    .expect("a valid schema")
}

impl Serialize for Cursor {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Cursor {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Cursor)
    }
}

impl JsonSchema for Cursor {
    fn schema_name() -> String {
        "Cursor".to_string()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        cursor_schema(
            "An opaque position in a list: pass it on as `after` to read the records that follow. Its content is the service's own and may change between releases.",
        )
    }
}

/// [`Cursor`] as a query parameter: the same string, written out in the parameter (dropshot
/// takes no reference there).
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct CursorParam(Cursor);

impl JsonSchema for CursorParam {
    fn schema_name() -> String {
        "CursorParam".to_string()
    }
    fn is_referenceable() -> bool {
        false
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        cursor_schema(
            "Read the records after this cursor (a `next_cursor` of an earlier page); from the start without it.",
        )
    }
}

impl CursorParam {
    /// The key the cursor continues after (see [`Cursor::key`]).
    pub fn key(self) -> Result<String, ApiError> {
        self.0.key()
    }
}

/// The paging parameters of a mirror's list.
#[derive(Deserialize, JsonSchema)]
pub struct PageQuery {
    /// Read by key: the records after this cursor (a `next_cursor` answered before); from the
    /// start of the set without it. With `after` or `limit` the page has no `meta` (no count)
    /// and costs the same at any depth.
    pub after: Option<CursorParam>,
    /// Read by key: records per page, 1 to 500 (default 50).
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
    /// Read by position (the slower way: a page costs what it skips): page number, from 1
    /// (default 1). Ignored with `after` or `limit`.
    #[schemars(range(min = 1))]
    pub page: Option<u32>,
    /// Read by position: records per page, 1 to 500 (default 50).
    #[schemars(range(min = 1, max = 500))]
    pub per_page: Option<u32>,
}

/// How a list is to be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Paging {
    /// After a key (none: from the start), `limit` records (checked by the area).
    Key { after: Option<String>, limit: Option<u32> },
    /// By position, as given (checked by the area).
    Position { page: Option<u32>, per_page: Option<u32> },
}

impl PageQuery {
    /// By key when `after` or `limit` is given (`page` and `per_page` are then ignored), else
    /// by position.
    pub fn paging(self) -> Result<Paging, ApiError> {
        let by_key = self.after.is_some() || self.limit.is_some();
        if !by_key {
            return Ok(Paging::Position { page: self.page, per_page: self.per_page });
        }
        let after = self.after.map(|CursorParam(cursor)| cursor.key()).transpose()?;
        Ok(Paging::Key { after, limit: self.limit })
    }
}

/// A page of a list read either way, before the route makes it its answer: `meta` when it was
/// read by position, `next` (where it goes on) when read by key.
pub struct ListPage<T> {
    pub rows: Vec<T>,
    pub meta: Option<PageMeta>,
    pub next: NextPage,
}

impl PageQuery {
    /// Reads a page of the list at `uri` as the query asks, `default` records a page and at
    /// most `max`. By key when `after` or `limit` is given: `by_key` reads the records after a
    /// key (one more than `limit`, to learn whether any follow), `key` gives a record's key.
    /// Else by position: `by_position` reads page `page` of `per_page` and the count. `limit`
    /// is checked before `after`, so that a query wrong in both is answered about `limit`.
    pub async fn read<T, E, K, P>(
        self,
        default: u32,
        max: u32,
        uri: &http::Uri,
        by_key: impl FnOnce(Option<String>, u32) -> K,
        by_position: impl FnOnce(u32, u32) -> P,
        key: impl Fn(&T) -> String,
    ) -> Result<ListPage<T>, ApiError>
    where
        K: Future<Output = Result<Vec<T>, E>>,
        P: Future<Output = Result<(Vec<T>, i64), E>>,
        ApiError: From<E>,
    {
        if self.after.is_some() || self.limit.is_some() {
            let limit = checked_key_limit(self.limit, default, max).map_err(ApiError::validation)?;
            let after = self.after.map(CursorParam::key).transpose()?;
            let rows = by_key(after, limit).await?;
            let (rows, next) = key_rows(rows, limit, uri, self.limit, key);
            return Ok(ListPage { rows, meta: None, next });
        }
        let (page, per_page) =
            checked_position(self.page, self.per_page, default, max).map_err(ApiError::validation)?;
        let (rows, total) = by_position(page, per_page).await?;
        Ok(ListPage { rows, meta: Some(PageMeta::new(page, per_page, total)), next: NextPage::default() })
    }
}

/// `page` (default 1) and `per_page` (default `default`, 1 to `max`) of a list read by
/// position, or the field errors naming them.
pub fn checked_position(
    page: Option<u32>,
    per_page: Option<u32>,
    default: u32,
    max: u32,
) -> Result<(u32, u32), FieldErrors> {
    let (page, per_page) = (page.unwrap_or(1), per_page.unwrap_or(default));
    let mut errors = FieldErrors::new();
    if page == 0 {
        errors.insert("page".into(), vec!["The page is at least 1.".into()]);
    }
    if !(1..=max).contains(&per_page) {
        errors.insert("per_page".into(), vec![format!("per_page is between 1 and {max}.")]);
    }
    if errors.is_empty() { Ok((page, per_page)) } else { Err(errors) }
}

/// `limit` of a list read by key (default `default`, 1 to `max`), or the field error naming it.
pub fn checked_key_limit(limit: Option<u32>, default: u32, max: u32) -> Result<u32, FieldErrors> {
    match limit.unwrap_or(default) {
        limit if (1..=max).contains(&limit) => Ok(limit),
        _ => Err(FieldErrors::from([("limit".to_string(), vec![format!("limit is between 1 and {max}.")])])),
    }
}

/// A page of the list at `uri` read by key: its rows (one more than `limit` was read, to learn
/// whether any follow) and where the list goes on, after the key `key` gives the last row.
pub fn key_rows<T>(
    rows: Vec<T>,
    limit: u32,
    uri: &http::Uri,
    asked: Option<u32>,
    key: impl Fn(&T) -> String,
) -> (Vec<T>, NextPage) {
    let (rows, next_key) = crate::vocabulary::key_page::key_page(rows, limit, key);
    let next = NextPage::after_in(uri, next_key.as_deref(), asked);
    (rows, next)
}

/// Paging of a list read by position.
#[derive(Serialize, JsonSchema)]
pub struct PageMeta {
    pub current_page: u32,
    pub per_page: u32,
    pub total: i64,
    pub last_page: u32,
}

impl PageMeta {
    /// The paging of page `current_page` of `per_page` records out of `total`.
    pub fn new(current_page: u32, per_page: u32, total: i64) -> PageMeta {
        let last_page = ((total.max(1) - 1) / i64::from(per_page) + 1) as u32;
        PageMeta { current_page, per_page, total, last_page }
    }
}

/// Where a list read by key goes on: the cursor after the page's last record and the link
/// that reads the next page, while records follow it.
#[derive(Debug, Default)]
pub struct NextPage {
    pub cursor: Option<Cursor>,
    pub link: Option<String>,
}

impl NextPage {
    /// The next page of `path` after `key` (none: this was the last), `limit` records.
    pub fn after(path: &str, key: Option<&str>, limit: Option<u32>) -> NextPage {
        let Some(key) = key else { return NextPage::default() };
        let cursor = Cursor::after(key);
        let limit = limit.map(|limit| format!("&limit={limit}")).unwrap_or_default();
        let link = format!("{path}?after={}{limit}", cursor.as_str());
        NextPage { cursor: Some(cursor), link: Some(link) }
    }

    /// As [`NextPage::after`] for the list at `uri`, whose link keeps the query's other
    /// parameters (a list's filters) as they were asked.
    pub fn after_in(uri: &http::Uri, key: Option<&str>, limit: Option<u32>) -> NextPage {
        let mut next = NextPage::after(uri.path(), key, limit);
        let paging = ["after", "limit", "page", "per_page"];
        let kept: Vec<&str> = uri
            .query()
            .unwrap_or_default()
            .split('&')
            .filter(|pair| !pair.is_empty() && !paging.contains(&pair.split('=').next().unwrap_or_default()))
            .collect();
        if let Some(link) = next.link.as_mut().filter(|_| !kept.is_empty()) {
            link.push('&');
            link.push_str(&kept.join("&"));
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(after: Option<&str>, limit: Option<u32>, page: Option<u32>) -> PageQuery {
        PageQuery { after: after.map(|a| CursorParam(Cursor(a.into()))), limit, page, per_page: None }
    }

    #[test]
    fn a_cursor_gives_back_its_key_and_nothing_else() {
        for key in ["1", "1000000", "erp-customer-17", "Grüße", &"x".repeat(255)] {
            let cursor = Cursor::after(key);
            assert!(cursor.as_str().chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
            assert!(cursor.as_str().len() <= MAX_CURSOR_LEN);
            assert_eq!(cursor.key().unwrap(), key);
        }
        // A cursor this service did not write is still a position (schema-valid input is
        // never refused): its text when it is not base64url, lossy UTF-8, no NUL.
        for (text, key) in [("5", "5"), ("5S", "5S"), ("_w", "\u{fffd}"), ("AA", "")] {
            assert_eq!(Cursor(text.into()).key().unwrap(), key, "{text:?}");
        }
        for text in ["", "0.5", "%%", &"A".repeat(MAX_CURSOR_LEN + 1)] {
            assert_eq!(Cursor(text.into()).key().unwrap_err().status().as_u16(), 422, "{text:?}");
        }
    }

    #[test]
    fn a_list_is_read_by_key_when_asked_else_by_position() {
        let start = query(None, Some(10), None).paging().unwrap();
        assert_eq!(start, Paging::Key { after: None, limit: Some(10) });
        let cursor = Cursor::after("42");
        let next = query(Some(cursor.as_str()), None, None).paging().unwrap();
        assert_eq!(next, Paging::Key { after: Some("42".into()), limit: None });
        assert_eq!(query(None, None, Some(2)).paging().unwrap(), Paging::Position { page: Some(2), per_page: None });
        assert_eq!(
            query(None, Some(10), Some(2)).paging().unwrap(),
            Paging::Key { after: None, limit: Some(10) },
            "page is ignored beside limit"
        );
        let link = NextPage::after("/api/v1/fieldreport/tags", Some("42"), Some(10)).link.unwrap();
        assert_eq!(link, format!("/api/v1/fieldreport/tags?after={}&limit=10", cursor.as_str()));
        assert!(NextPage::after("/x", None, Some(10)).cursor.is_none());
        let uri: http::Uri = "/api/v1/jobs?kind=erp.pull&after=AA&page=3&status=failed&limit=5".parse().unwrap();
        let link = NextPage::after_in(&uri, Some("42"), Some(5)).link.unwrap();
        assert_eq!(link, format!("/api/v1/jobs?after={}&limit=5&kind=erp.pull&status=failed", cursor.as_str()));
        let bare: http::Uri = "/api/v1/jobs".parse().unwrap();
        assert_eq!(
            NextPage::after_in(&bare, Some("42"), None).link.unwrap(),
            format!("/api/v1/jobs?after={}", cursor.as_str())
        );
    }
}
