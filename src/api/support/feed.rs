//! The wire of the mirrors' change feeds and exports (docs/api.md, "Copying and following a
//! set"), for both areas: the position a consumer passes on (`since`), a page of changes, and
//! the export, streamed as NDJSON lines of the same change items, ending with the position to
//! follow the feed from.

use std::pin::Pin;
use std::task::{Context, Poll};

use dropshot::Body;
use hyper::body::{Bytes, Frame};
use schemars::JsonSchema;
use schemars::r#gen::SchemaGenerator;
use schemars::schema::Schema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use serde_json::value::RawValue;

use crate::api::support::per_user::{PerUser, Place};
use crate::error::{ApiError, FieldErrors};
use crate::feed::{ChangePage, MAX_LIMIT, Since};
use crate::store::Store;
use crate::store::feed::Change;

/// The content type of an export.
pub const NDJSON: &str = "application/x-ndjson";

/// Digits of a position at most (an `i64` holds any of them).
const MAX_POSITION_DIGITS: usize = 18;

/// A position in a set's change feed, as answered in `next_cursor` and asked with `since`:
/// the history's generation ([`GENERATION_DIGITS`]) then the number, zero-padded, all digits
/// (the document's pattern and length, which released clients check). A text of fewer digits
/// is a bare number, as answered before positions named their history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FeedCursor(String);

/// Digits of a generation in a position (migration 0038 takes them in 100000..=999999) and of
/// its number after it (a set numbers fewer changes than 10^12 in its life; a number past them
/// goes out bare).
const GENERATION_DIGITS: usize = 6;
const NUMBER_DIGITS: usize = MAX_POSITION_DIGITS - GENERATION_DIGITS;

impl FeedCursor {
    pub fn at(position: Since) -> FeedCursor {
        match position.generation {
            Some(generation)
                if position.seq < 10i64.pow(NUMBER_DIGITS as u32)
                    && generation < 10i64.pow(GENERATION_DIGITS as u32) =>
            {
                FeedCursor(format!("{generation:0GENERATION_DIGITS$}{:0NUMBER_DIGITS$}", position.seq))
            }
            _ => FeedCursor(position.seq.to_string()),
        }
    }

    /// The position; a 422 naming `since` for a text that is not one (the document's pattern).
    pub fn position(&self) -> Result<Since, ApiError> {
        let admitted = (1..=MAX_POSITION_DIGITS).contains(&self.0.len()) && self.0.bytes().all(|b| b.is_ascii_digit());
        let invalid = || {
            ApiError::validation(FieldErrors::from([(
                "since".to_string(),
                vec!["since is a position this service answered (next_cursor), passed on as it is.".to_string()],
            )]))
        };
        if !admitted {
            return Err(invalid());
        }
        if self.0.len() < MAX_POSITION_DIGITS {
            let seq = self.0.parse::<i64>().map_err(|_| invalid())?;
            return Ok(Since { generation: None, seq });
        }
        let (generation, seq) = self.0.split_at(GENERATION_DIGITS);
        match (generation.parse::<i64>(), seq.parse::<i64>()) {
            (Ok(generation), Ok(seq)) => Ok(Since { generation: Some(generation), seq }),
            _ => Err(invalid()),
        }
    }
}

fn cursor_schema(description: &str) -> Schema {
    serde_json::from_value(json!({
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_POSITION_DIGITS,
        "pattern": "^[0-9]+$",
        "description": description,
        "example": "482913000000001042",
    }))
    .expect("a valid schema")
}

impl JsonSchema for FeedCursor {
    fn schema_name() -> String {
        "FeedCursor".to_string()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        cursor_schema(
            "An opaque position in a set's change feed: pass it on as `since` to read the changes after it. Its content is the service's own and may change between releases.",
        )
    }
}

/// [`FeedCursor`] as a query parameter (written out: dropshot takes no reference there).
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct FeedCursorParam(FeedCursor);

impl JsonSchema for FeedCursorParam {
    fn schema_name() -> String {
        "FeedCursorParam".to_string()
    }
    fn is_referenceable() -> bool {
        false
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        cursor_schema(
            "Read the changes after this position (a `next_cursor` answered before, or the one an export ended with); from the start of the set without it.",
        )
    }
}

/// The parameters of a change feed.
#[derive(Deserialize, JsonSchema)]
pub struct FeedQuery {
    /// The changes after this position (a `next_cursor` answered before, or the last line of
    /// an export); without it, from the start: every record the set holds, once, then what
    /// follows.
    pub since: Option<FeedCursorParam>,
    /// Changes per page, 1 to 1000 (default 100).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<u32>,
}

impl FeedQuery {
    /// The position and the page size asked.
    pub fn read(self) -> Result<(Option<Since>, Option<u32>), ApiError> {
        let since = self.since.map(|FeedCursorParam(cursor)| cursor.position()).transpose()?;
        Ok((since, self.limit))
    }
}

/// The kind of a change: a record stored (as it is now), or one removed.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Upsert,
    Delete,
}

/// One change of a set as it goes out: its kind, the record's id, and the record (an upsert
/// only), passed through as stored or as `show` makes it.
#[derive(Serialize)]
pub struct ChangeItem {
    pub change: ChangeKind,
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<Box<RawValue>>,
}

impl ChangeItem {
    /// The record `id` as it is now: a line of an export, or a change of the feed.
    pub fn upsert(id: String, record: Box<RawValue>) -> ChangeItem {
        ChangeItem { change: ChangeKind::Upsert, id, record: Some(record) }
    }

    /// `change` with its record made as it is shown by `show` (for the ERP: secrets masked).
    pub fn of(change: Change, show: &impl Fn(Box<RawValue>) -> Box<RawValue>) -> ChangeItem {
        match change.document {
            Some(document) => ChangeItem::upsert(change.id, show(document)),
            None => ChangeItem { change: ChangeKind::Delete, id: change.id, record: None },
        }
    }
}

/// The schema of a change of a set whose records are `record`.
pub fn change_schema(generator: &mut SchemaGenerator, record: Schema, of: &str) -> Schema {
    let kind = generator.subschema_for::<ChangeKind>();
    let id: Schema =
        serde_json::from_value(json!({"type": "string", "description": "The record's id."})).expect("a schema");
    let mut schema: Schema = serde_json::from_value(json!({
        "type": "object",
        "description": format!("One change of {of}: `upsert` with the record as it is now stored, or `delete` with the id of a record removed. Applied in order to a copy (an upsert replaces the record with that id or adds it; a delete removes it, if present), the changes reproduce the mirror."),
        "required": ["change", "id"],
    }))
    .expect("a schema");
    if let Schema::Object(object) = &mut schema {
        let properties = &mut object.object().properties;
        properties.insert("change".into(), kind);
        properties.insert("id".into(), id);
        properties.insert("record".into(), record);
    }
    schema
}

/// The schema of a page of changes whose items are `item`.
pub fn change_page_schema(generator: &mut SchemaGenerator, item: Schema, of: &str) -> Schema {
    let cursor = generator.subschema_for::<FeedCursor>();
    let next: Schema = serde_json::from_value(json!({
        "type": "string",
        "description": "The path and query that read the changes after this page."
    }))
    .expect("a schema");
    serde_json::from_value(json!({
        "type": "object",
        "description": format!("Changes of {of} in the order they were stored, at most `limit`; `next_cursor` is where to read on (the position asked when nothing changed since: ask again later). An empty `data` means the copy is up to date."),
        "required": ["data", "next_cursor", "next"],
        "properties": {
            "data": {"type": "array", "items": item},
            "next_cursor": cursor,
            "next": next,
        }
    }))
    .expect("a schema")
}

/// A page of changes as it goes out.
#[derive(Serialize)]
pub struct ChangePageBody {
    pub data: Vec<ChangeItem>,
    pub next_cursor: FeedCursor,
    pub next: String,
}

impl ChangePageBody {
    /// `page` of the feed at `path`, read `limit` at a time.
    pub fn new(
        page: ChangePage,
        path: &str,
        limit: Option<u32>,
        show: &impl Fn(Box<RawValue>) -> Box<RawValue>,
    ) -> ChangePageBody {
        let limit = limit.map(|limit| format!("&limit={limit}")).unwrap_or_default();
        let next_cursor = FeedCursor::at(page.next);
        ChangePageBody {
            data: page.changes.into_iter().map(|change| ChangeItem::of(change, show)).collect(),
            next: format!("{path}?since={}{limit}", next_cursor.0),
            next_cursor,
        }
    }
}

/// Changes per line group of an export (the records of one key page of the mirror).
pub const EXPORT_PAGE: u32 = MAX_LIMIT;

/// An export's body: NDJSON chunks sent by the task that reads the set, at most a few ahead
/// (its memory is bounded by them); the reading stops when the client leaves (the body is
/// dropped, and the next send fails). It holds its user's export place until it is dropped:
/// read to its end, or its client gone.
struct ExportBody {
    chunks: tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>,
    _place: Place,
}

/// Chunks an export's reader may have ready before the client takes them.
const CHUNKS_AHEAD: usize = 4;

impl ExportBody {
    /// The body, and the sender its reader writes chunks to.
    /// A failure sent ends the body there, without its last line (the client sees the
    /// answer cut short).
    fn channel(place: Place) -> (tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>, ExportBody) {
        let (sender, chunks) = tokio::sync::mpsc::channel(CHUNKS_AHEAD);
        (sender, ExportBody { chunks, _place: place })
    }

    /// A `200` answer streaming this body as NDJSON.
    fn response(self) -> Result<http::Response<Body>, ApiError> {
        http::Response::builder()
            .status(http::StatusCode::OK)
            .header(http::header::CONTENT_TYPE, NDJSON)
            .body(Body::wrap(self))
            .map_err(ApiError::internal)
    }
}

impl hyper::body::Body for ExportBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        self.chunks.poll_recv(cx).map(|chunk| chunk.map(|chunk| chunk.map(Frame::data)))
    }
}

/// A place for one more export of `user_id` (at most `MAX_EXPORTS_PER_USER` stream at once
/// per user on an instance: each holds pages of its set until its client reads them), or 429
/// `too_many_exports`.
pub fn export_place(exports: &std::sync::Arc<PerUser>, user_id: i64) -> Result<Place, ApiError> {
    exports.take(user_id).ok_or_else(|| ApiError::too_many_exports(exports.most()))
}

/// Starts an export in the `place` of its user ([`export_place`]): a task sends, a key page at a time, the change lines of the records that
/// `read_page` reads after a key (the last id of the page before; none at first), until a page
/// is empty, then, once what it read is on disk ([`Store::make_feed_durable`]), the last line
/// with `position`; the answer streams what it sends. The task stops when the client leaves; a
/// failure ends the answer without its last line.
pub fn export<F, Fut>(
    store: Store,
    position: Since,
    place: Place,
    mut read_page: F,
) -> Result<http::Response<Body>, ApiError>
where
    F: FnMut(Option<String>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<Vec<ChangeItem>, crate::store::StoreError>> + Send,
{
    let (sender, body) = ExportBody::channel(place);
    tokio::spawn(async move {
        let mut after: Option<String> = None;
        let mut records = 0u64;
        loop {
            let chunk = match read_page(after.take()).await {
                Ok(items) if items.is_empty() => break,
                Ok(items) => {
                    records += items.len() as u64;
                    after = items.last().map(|item| item.id.clone());
                    ndjson_lines(&items)
                }
                Err(error) => Err(std::io::Error::other(error.to_string())),
            };
            let failed = chunk.is_err();
            if sender.send(chunk).await.is_err() || failed {
                return;
            }
        }
        let end = match store.make_feed_durable().await {
            Ok(()) => Ok(ndjson_end(position, records)),
            Err(error) => Err(std::io::Error::other(error.to_string())),
        };
        let _ = sender.send(end).await;
    });
    body.response()
}

/// The lines of `items`, each a JSON object and a newline.
fn ndjson_lines(items: &[ChangeItem]) -> Result<Bytes, std::io::Error> {
    let mut lines = Vec::with_capacity(items.len() * 256);
    for item in items {
        serde_json::to_writer(&mut lines, item)?;
        lines.push(b'\n');
    }
    Ok(Bytes::from(lines))
}

/// The last line of an export: where to follow the feed from.
fn ndjson_end(position: Since, records: u64) -> Bytes {
    let line = json!({"next_cursor": FeedCursor::at(position), "records": records});
    Bytes::from(format!("{line}\n"))
}
