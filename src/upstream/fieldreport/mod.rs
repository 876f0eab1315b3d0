//! The field-report system's OData interface: `<root>/odata/<Set>` with HTTP Basic.
//!
//! Records travel as JSON documents (the mirror keeps them whole). Keys are Int64 and
//! addressed as `<Set>(<Id>L)`; OData errors (v4 `error`, v3 `odata.error`) are summarised.

use std::sync::Arc;
use std::time::Instant;

use reqwest::Method;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use url::Url;

use super::config::FieldReportConfig;
use super::{CallOutcome, System, UpstreamError, error_chain, parse_json, retry_read, summarise, text_answer};
use crate::metrics::{CallRecorder, Metrics};

const SYSTEM: System = System::FieldReport;

/// Empty pages with a next link followed in a row at most, each a window of rows the server
/// withholds after paging (soft-deleted ones): at a page size of 100, a million such rows in a
/// row. A server that links every empty page onward, past its set's end, would have a query
/// never end.
pub const EMPTY_PAGES_FOLLOWED: usize = 10_000;

#[derive(Clone)]
pub struct FieldReportClient {
    http: reqwest::Client,
    root: Url,
    username: String,
    password: SecretString,
    metrics: CallRecorder,
}

/// What a key escapes in its path segment: all but RFC 3986's unreserved characters. Not a
/// form's encoding, which writes a space `+`: in a path that is a plus, another key.
const KEY_ESCAPED: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// How a record is addressed: `Companies(123L)` for numeric ids, `Companies('x')` otherwise.
pub fn key_segment(set: &str, id: &str) -> String {
    if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) {
        format!("{set}({id}L)")
    } else {
        let quoted = id.replace('\'', "''");
        format!("{set}('{}')", percent_encoding::utf8_percent_encode(&quoted, KEY_ESCAPED))
    }
}

/// The message of an OData error body (v4 or v3 JSON, v3 XML `<m:error>`, an HTML error
/// page's title), or the body itself, shortened.
pub fn odata_message(body: &str) -> String {
    if body.trim_start().starts_with('<') {
        return summarise(&markup_message(body));
    }
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let from_error = parsed.as_ref().and_then(|v| {
        let error = v.get("error").or_else(|| v.get("odata.error"))?;
        let message = error.get("message")?;
        let text = message
            .as_str()
            .map(str::to_string)
            .or_else(|| message.get("value").and_then(Value::as_str).map(str::to_string))?;
        let code = error.get("code").and_then(Value::as_str).unwrap_or_default();
        Some(if code.is_empty() { text } else { format!("{code}: {text}") })
    });
    summarise(&from_error.unwrap_or_else(|| body.to_string()))
}

/// The message of an XML or HTML error body: an OData XML error's `code: message`, else an
/// HTML page's `title` (or first heading), else its text without the markup.
fn markup_message(body: &str) -> String {
    let text = |name: &str| element_text(body, name).filter(|t| !t.is_empty());
    if let Some(message) = text("message") {
        return match text("code") {
            Some(code) => format!("{code}: {message}"),
            None => message,
        };
    }
    if let Some(title) = text("title").or_else(|| text("h1")) {
        return title;
    }
    let mut plain = String::new();
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                plain.push(' ');
            }
            c if !in_tag => plain.push(c),
            _ => {}
        }
    }
    let plain = unescape(&plain.split_whitespace().collect::<Vec<_>>().join(" "));
    if plain.is_empty() { body.to_string() } else { plain }
}

/// The text of the first element named `name` (in any namespace prefix, any case), its
/// whitespace collapsed and its character references read.
fn element_text(body: &str, name: &str) -> Option<String> {
    let mut rest = body;
    while let Some(at) = rest.find('<') {
        rest = &rest[at + 1..];
        let tag_end = rest.find('>')?;
        let tag = &rest[..tag_end];
        let tag_name = tag.split(|c: char| c.is_whitespace() || c == '/').next().unwrap_or_default();
        let local = tag_name.rsplit(':').next().unwrap_or_default();
        if local.eq_ignore_ascii_case(name) && !tag.ends_with('/') {
            let content = &rest[tag_end + 1..];
            let content = &content[..content.find("</").unwrap_or(content.len())];
            return Some(unescape(&content.split_whitespace().collect::<Vec<_>>().join(" ")));
        }
    }
    None
}

/// The five predefined XML entities read.
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

impl FieldReportClient {
    pub fn from_config(config: &FieldReportConfig) -> Result<FieldReportClient, UpstreamError> {
        let root = config
            .base_url
            .clone()
            .ok_or(UpstreamError::NotConfigured { system: SYSTEM, setting: "FIELDREPORT_BASE_URL" })?;
        let username = config
            .username
            .clone()
            .ok_or(UpstreamError::NotConfigured { system: SYSTEM, setting: "FIELDREPORT_USERNAME" })?;
        let password = config
            .password
            .clone()
            .ok_or(UpstreamError::NotConfigured { system: SYSTEM, setting: "FIELDREPORT_PASSWORD" })?;
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(std::time::Duration::from_secs(10))
            .redirect(super::no_redirects())
            .build()
            .map_err(|e| UpstreamError::Client { system: SYSTEM, detail: error_chain(&e) })?;
        // The forms the password travels in, should the upstream echo them: `user:password`
        // and its base64 (the Basic header's credentials).
        let credentials = format!("{username}:{}", password.expose_secret());
        crate::vocabulary::redaction::register(&credentials);
        crate::vocabulary::redaction::register(&base64::engine::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            credentials.as_bytes(),
        ));
        Ok(FieldReportClient { http, root, username, password, metrics: CallRecorder::default() })
    }

    /// Counts every call in `metrics`.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = CallRecorder::new(metrics);
        self
    }

    fn url(&self, path: &str) -> Result<Url, UpstreamError> {
        let base = self.root.as_str().trim_end_matches('/');
        Url::parse(&format!("{base}/odata/{path}"))
            .map_err(|e| UpstreamError::Client { system: SYSTEM, detail: e.to_string() })
    }

    /// One call whose answer is JSON (`null` when empty).
    async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value, UpstreamError> {
        self.call_read(method, path, body, |text, _| {
            if text.trim().is_empty() { Ok(Value::Null) } else { parse_json(SYSTEM, &text) }
        })
        .await
    }

    /// One call, counted (its answer read by `read` included): every call to the field-report
    /// system passes here. `read` takes the body and the address of the record the answer
    /// names (`OData-EntityId`, else `Location`), if any.
    async fn call_read<T>(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        read: impl FnOnce(String, Option<String>) -> Result<T, UpstreamError>,
    ) -> Result<T, UpstreamError> {
        let started = Instant::now();
        let result = self.exchange(method, path, body).await.and_then(|(text, address)| read(text, address));
        self.metrics.record(SYSTEM, CallOutcome::of(&result), started);
        result
    }

    async fn exchange(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(String, Option<String>), UpstreamError> {
        let mut request = self
            .http
            .request(method, self.url(path)?)
            .basic_auth(&self.username, Some(self.password.expose_secret()))
            .header(reqwest::header::ACCEPT, "application/json");
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|e| UpstreamError::from_reqwest(SYSTEM, e))?;
        let headers = response.headers();
        let address = ["odata-entityid", "location"]
            .into_iter()
            .find_map(|name| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string));
        Ok((text_answer(SYSTEM, response, odata_message).await?, address))
    }

    /// `POST <Set>`: the upstream's answer, with the Id it assigned. A server answering
    /// `return=minimal` (204, or a 201 without a body) names the new record only by its
    /// address (`OData-EntityId`, `Location`): its key is the Id. An answer that tells no Id
    /// is unreadable: the create applied, under an Id not known here.
    pub async fn create(&self, set: &str, record: &Value) -> Result<Value, UpstreamError> {
        self.call_read(Method::POST, set, Some(record), |text, address| {
            let mut answer = if text.trim().is_empty() { Value::Null } else { parse_json(SYSTEM, &text)? };
            let has_id = answer.get("Id").is_some_and(|id| !id.is_null());
            match address.as_deref().and_then(key_of_address) {
                _ if has_id => {}
                Some(id) if answer.is_null() => answer = serde_json::json!({ "Id": id }),
                Some(id) if answer.is_object() => answer["Id"] = Value::String(id),
                _ => {
                    return Err(UpstreamError::Malformed {
                        system: SYSTEM,
                        detail: format!(
                            "a create answered without the Id it assigned (no record, no OData-EntityId or \
                             Location): {}",
                            summarise(&text)
                        ),
                    });
                }
            }
            Ok(answer)
        })
        .await
    }

    /// `PUT <Set>(<Id>L)` with the whole record.
    pub async fn update(&self, set: &str, id: &str, record: &Value) -> Result<Value, UpstreamError> {
        self.call(Method::PUT, &key_segment(set, id), Some(record)).await
    }

    /// `DELETE <Set>(<Id>L)`.
    pub async fn delete(&self, set: &str, id: &str) -> Result<Value, UpstreamError> {
        self.call(Method::DELETE, &key_segment(set, id), None).await
    }

    /// One page of a set. `next` is the upstream's next link (v4 `@odata.nextLink`, v3
    /// `odata.nextLink` or `__next`, relative or absolute) or, from the second page on, the
    /// query with `$skip` advanced. Retried while the upstream fails transiently.
    pub async fn page(&self, set: &str, query: &str, next: Option<&str>) -> Result<ODataPage, UpstreamError> {
        let target = match next {
            Some(link) => link_path(set, link),
            None if query.is_empty() => set.to_string(),
            None => format!("{set}?{query}"),
        };
        retry_read(|| self.call_read(Method::GET, &target, None, |text, _| ODataPage::from_text(&text))).await
    }

    /// The first page of `query` with records, or its last page: a server that withholds rows
    /// after paging (soft-deleted ones, say) answers a window of only such rows with an empty
    /// page and a next link, which is no end of the query. The links are followed from empty
    /// pages only: from a page with records a query goes on from their last key, not by
    /// position. A link followed before (empty pages leading back to an earlier one), or more
    /// than [`EMPTY_PAGES_FOLLOWED`] of them, is a malformed answer: the query would not end.
    pub async fn page_with_records(&self, set: &str, query: &str) -> Result<ODataPage, UpstreamError> {
        let mut page = self.page(set, query, None).await?;
        let mut followed = std::collections::HashSet::new();
        while page.records.is_empty()
            && let Some(link) = page.next_link.take()
        {
            let detail = if followed.contains(&link) {
                format!("{set} answered empty pages whose next links lead back to one followed before: {link}")
            } else if followed.len() == EMPTY_PAGES_FOLLOWED {
                format!("{set} answered {EMPTY_PAGES_FOLLOWED} empty pages in a row, each with a next link: {link}")
            } else {
                page = self.page(set, query, Some(&link)).await?;
                followed.insert(link);
                continue;
            };
            return Err(UpstreamError::Malformed { system: SYSTEM, detail });
        }
        Ok(page)
    }

    /// `GET <Set>(<Id>L)`, retried while the upstream fails transiently.
    pub async fn get(&self, set: &str, id: &str) -> Result<Value, UpstreamError> {
        let segment = key_segment(set, id);
        retry_read(|| self.call(Method::GET, &segment, None)).await
    }
}

/// The key of a record's address (`https://host/odata/Companies(123L)`, `Companies(123)`,
/// `Tags('a%20b')`, `Companies(Id=123L)`): the Id it names, as [`key_segment`] writes it.
pub fn key_of_address(address: &str) -> Option<String> {
    let path = address.split(['?', '#']).next()?;
    let (_, key) = path.trim_end_matches('/').strip_suffix(')')?.rsplit_once('(')?;
    let key = key.strip_prefix("Id=").unwrap_or(key);
    let decoded = percent_encoding::percent_decode_str(key).decode_utf8().ok()?;
    if let Some(quoted) = decoded.strip_prefix('\'').and_then(|k| k.strip_suffix('\'')) {
        return (!quoted.is_empty()).then(|| quoted.replace("''", "'"));
    }
    let digits = decoded.strip_suffix(['L', 'l']).unwrap_or(&decoded);
    let numeric = !digits.is_empty() && digits.trim_start_matches('-').bytes().all(|b| b.is_ascii_digit());
    numeric.then(|| digits.to_string())
}

/// The part of `set`'s next link after the service root: a link may be absolute
/// (`https://host/odata/Set?…`, asked of the configured root whatever its host),
/// root-relative (`/odata/Set?…`), relative (`Set?…`) or only a query (`?$skiptoken=…`, as a
/// relative reference resolves against the set's own address). Only the path is searched for
/// the root, so a query that names `/odata/` (a filter on a URL, say) is kept whole.
pub fn link_path(set: &str, link: &str) -> String {
    if let Some(query) = link.strip_prefix('?') {
        return format!("{set}?{query}");
    }
    let (path, query) = link.split_once('?').map_or((link, None), |(path, query)| (path, Some(query)));
    let path = path.split_once("/odata/").map_or(path, |(_, rest)| rest);
    match query {
        Some(query) => format!("{path}?{query}"),
        None => path.to_string(),
    }
}

/// One page of records from an OData list.
#[derive(Debug)]
pub struct ODataPage {
    /// The records as the upstream sent them: checked to be JSON, not parsed into trees (a
    /// sync stores them as they are).
    pub records: Vec<Box<RawValue>>,
    /// The next link, whichever OData version spelled it.
    pub next_link: Option<String>,
}

/// An OData list answer: v4/v3 (`value`) or verbose (`d.results`), with its next link in any
/// of the three spellings (looked for in this order, at the top and then in `d`).
#[derive(Deserialize)]
struct ListBody {
    value: Option<Vec<Box<RawValue>>>,
    d: Option<Box<ListBody>>,
    results: Option<Vec<Box<RawValue>>>,
    #[serde(rename = "@odata.nextLink")]
    next_v4: Option<Value>,
    #[serde(rename = "odata.nextLink")]
    next_v3: Option<Value>,
    #[serde(rename = "__next")]
    next_verbose: Option<Value>,
}

impl ListBody {
    fn next_link(&self) -> Option<&str> {
        [&self.next_v4, &self.next_v3, &self.next_verbose]
            .into_iter()
            .find_map(|link| link.as_ref().and_then(Value::as_str))
    }
}

impl ODataPage {
    pub fn from_text(text: &str) -> Result<ODataPage, UpstreamError> {
        let malformed = |detail: String| UpstreamError::Malformed { system: SYSTEM, detail };
        if text.trim().is_empty() {
            return Err(malformed("an empty answer to a list".into()));
        }
        let body: ListBody = parse_json(SYSTEM, text)?;
        let next_link = body.next_link().or_else(|| body.d.as_ref().and_then(|d| d.next_link())).map(str::to_string);
        let Some(records) = body.value.or_else(|| body.d.and_then(|d| d.results)) else {
            return Err(malformed(format!("a list without `value`: {}", summarise(text))));
        };
        Ok(ODataPage { records, next_link })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(body: Value) -> Result<ODataPage, UpstreamError> {
        ODataPage::from_text(&body.to_string())
    }

    fn parsed(page: &ODataPage) -> Vec<Value> {
        page.records.iter().map(|r| serde_json::from_str(r.get()).unwrap()).collect()
    }

    #[test]
    fn next_links_of_both_versions_are_found() {
        use serde_json::json;
        let v4 = page(json!({"value": [1], "@odata.nextLink": "/odata/Companies?$skip=1"})).unwrap();
        assert_eq!(v4.next_link.as_deref(), Some("/odata/Companies?$skip=1"));
        let v3 = page(json!({"odata.metadata": "x", "value": [1, 2], "odata.nextLink": "Companies?$skip=2"})).unwrap();
        assert_eq!((v3.records.len(), v3.next_link.as_deref()), (2, Some("Companies?$skip=2")));
        let verbose = page(json!({"d": {"results": [1], "__next": "https://x/odata/Companies?$skiptoken=9"}})).unwrap();
        assert_eq!(verbose.next_link.as_deref(), Some("https://x/odata/Companies?$skiptoken=9"));
        let last = page(json!({"value": []})).unwrap();
        assert_eq!(last.next_link, None);
        assert!(page(json!({"error": "x"})).is_err());
    }

    mod properties {
        use super::super::*;
        use super::{page, parsed};
        use crate::vocabulary::strategies::text;
        use proptest::prelude::*;
        use serde_json::json;

        proptest! {
            /// Whatever spelling the upstream uses (v4, v3, verbose), the page has exactly the
            /// records and the next link it sent.
            #[test]
            fn pages_keep_their_records_and_next_link(
                ids in prop::collection::vec(0u32..100_000, 0..40),
                link in prop::option::of(text("abcXYZ09?$=&/:.-", 1..40)),
                spelling in 0usize..3,
            ) {
                let records: Vec<Value> = ids.iter().map(|id| json!({"Id": id.to_string()})).collect();
                let body = match spelling {
                    0 => json!({"value": records, "@odata.nextLink": link}),
                    1 => json!({"odata.metadata": "m", "value": records, "odata.nextLink": link}),
                    _ => json!({"d": {"results": records, "__next": link}}),
                };
                let page = page(body).unwrap();
                prop_assert_eq!(parsed(&page), records);
                prop_assert_eq!(page.next_link, link);
            }

            /// An absolute, a root-relative and a relative next link lead to the same request.
            #[test]
            fn next_links_of_every_form_lead_to_the_same_path(
                set in text("ABCDEFGHabcdefgh", 1..12),
                query in text("abc019$=&' ", 0..30),
                host in text("abcdef0123.", 1..20),
            ) {
                let relative = format!("{set}?{query}");
                let (absolute, rooted) = (format!("https://{host}/odata/{relative}"), format!("/odata/{relative}"));
                prop_assert_eq!(link_path(&set, &absolute), relative.clone());
                prop_assert_eq!(link_path(&set, &rooted), relative.clone());
                prop_assert_eq!(link_path(&set, &relative), relative.clone());
                prop_assert_eq!(link_path(&set, &format!("?{query}")), relative);
            }

            /// A query that names the root (a filter on a URL) is not taken for it.
            #[test]
            fn a_query_naming_the_root_is_kept_whole(set in text("ABCDEFGHabcdefgh", 1..12), tail in text("abc019$=", 0..12)) {
                let relative = format!("{set}?$filter=Url eq 'https://x/odata/{tail}'");
                prop_assert_eq!(link_path(&set, &format!("https://host/odata/{relative}")), relative.clone());
                prop_assert_eq!(link_path(&set, &relative), relative);
            }

            /// Anything that is not a list is refused, never taken as an empty page.
            #[test]
            fn bodies_without_a_list_are_refused(key in text("abcdefgh.@", 1..12), n in any::<i64>()) {
                prop_assume!(key != "value" && key != "d");
                let (other_key, scalar_value) = (json!({key: n}), json!({"value": n}));
                prop_assert!(page(other_key).is_err());
                prop_assert!(page(scalar_value).is_err());
            }
        }
    }

    #[test]
    fn addresses_give_the_key_they_name() {
        for (address, key) in [
            ("https://h/odata/Companies(123L)", Some("123")),
            ("/odata/Companies(123)", Some("123")),
            ("Companies(Id=7L)/", Some("7")),
            ("https://h/odata/Tags('a%27%27b%20c')", Some("a'b c")),
            ("https://h/odata/Companies", None),
            ("https://h/odata/Companies()", None),
        ] {
            assert_eq!(key_of_address(address).as_deref(), key, "{address}");
        }
        assert_eq!(key_of_address(&format!("https://h/odata/{}", key_segment("Tags", "a+b c'd"))).unwrap(), "a+b c'd");
    }

    #[test]
    fn keys_use_the_int64_suffix() {
        assert_eq!(key_segment("Companies", "123"), "Companies(123L)");
        assert_eq!(key_segment("Companies", "a'b c"), "Companies('a%27%27b%20c')");
    }

    /// A key is a path segment, not a form: a space is `%20` (a `+` in a path is a plus), and
    /// the characters that would end the segment or the path are escaped.
    #[test]
    fn a_key_is_escaped_as_a_path_segment() {
        assert_eq!(key_segment("Tags", "a+b c"), "Tags('a%2Bb%20c')");
        assert_eq!(key_segment("Tags", "x/y?z#w%"), "Tags('x%2Fy%3Fz%23w%25')");
        assert_eq!(key_segment("Tags", "Ä-1.2_~"), "Tags('%C3%84-1.2_~')");
    }

    #[test]
    fn odata_errors_of_both_versions_are_summarised() {
        assert_eq!(odata_message(r#"{"error": {"code": "Conflict", "message": "stale"}}"#), "Conflict: stale");
        assert_eq!(
            odata_message(r#"{"odata.error": {"code": "", "message": {"lang": "en", "value": "gone"}}}"#),
            "gone"
        );
        assert_eq!(odata_message("plain text"), "plain text");
        let xml = r#"<?xml version="1.0"?><m:error xmlns:m="x"><m:code>Conflict</m:code>
            <m:message xml:lang="en-US">Version 3 &lt; 4</m:message><m:innererror><m:message>inner</m:message></m:innererror></m:error>"#;
        assert_eq!(odata_message(xml), "Conflict: Version 3 < 4");
        let html = "<html><head><style>p{}</style><title>503 Service Unavailable</title></head><body>x</body></html>";
        assert_eq!(odata_message(html), "503 Service Unavailable");
        assert_eq!(odata_message("<html><body><p>Bad  <b>gateway</b></p></body></html>"), "Bad gateway");
    }

    #[test]
    fn markup_without_elements_is_shown_as_text() {
        assert_eq!(odata_message("<error/>"), "<error/>");
        assert_eq!(odata_message("<p>a &amp; b"), "a & b");
    }
}
