//! The field-report system's OData interface: `<root>/odata/<Set>` with HTTP Basic.
//!
//! Records travel as JSON documents (the mirror keeps them whole). Keys are Int64 and
//! addressed as `<Set>(<Id>L)` ([`addresses`]); error answers are summarised ([`messages`]).

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

mod addresses;
mod messages;

pub use addresses::{key_of_address, key_segment, link_path};
pub use messages::odata_message;

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

    /// One call of one record, its answer read by [`record_answer`].
    async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value, UpstreamError> {
        self.call_read(method, path, body, |answer| record_answer(&answer.text)).await
    }

    /// One call, counted (its answer read by `read` included): every call to the field-report
    /// system passes here.
    async fn call_read<T>(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        read: impl FnOnce(Answer) -> Result<T, UpstreamError>,
    ) -> Result<T, UpstreamError> {
        self.call_accepting("application/json", method, path, body, read).await
    }

    /// [`Self::call_read`] asking for an answer of the types `accept` names.
    async fn call_accepting<T>(
        &self,
        accept: &str,
        method: Method,
        path: &str,
        body: Option<&Value>,
        read: impl FnOnce(Answer) -> Result<T, UpstreamError>,
    ) -> Result<T, UpstreamError> {
        let started = Instant::now();
        let result = self.exchange(accept, method, path, body).await.and_then(read);
        self.metrics.record(SYSTEM, CallOutcome::of(&result), started);
        result
    }

    async fn exchange(
        &self,
        accept: &str,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Answer, UpstreamError> {
        let mut request = self
            .http
            .request(method, self.url(path)?)
            .basic_auth(&self.username, Some(self.password.expose_secret()))
            .header(reqwest::header::ACCEPT, accept);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|e| UpstreamError::from_reqwest(SYSTEM, e))?;
        let headers = response.headers();
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
        let address = header("odata-entityid").or_else(|| header("location"));
        let etag = header("etag");
        let status = response.status().as_u16();
        Ok(Answer { text: text_answer(SYSTEM, response, odata_message).await?, status, address, etag })
    }

    /// `POST <Set>`: the upstream's answer, with the Id it assigned. A server answering
    /// `return=minimal` (204, or a 201 without a body) names the new record only by its
    /// address (`OData-EntityId`, `Location`): its key is the Id. An answer that tells no Id
    /// is [`UpstreamError::Unnamed`]: the create applied, or (202) will, under an Id not known
    /// here. A record named only by
    /// its address is read back: the server may have set fields of its own (its `Version`,
    /// which the next update must carry); the Id alone should that read fail.
    pub async fn create(&self, set: &str, record: &Value) -> Result<Value, UpstreamError> {
        let answer = self.create_answer(set, record).await?;
        let only_id = answer.as_object().filter(|fields| fields.len() == 1).and_then(|fields| fields.get("Id"));
        let Some(id) = only_id.and_then(Value::as_str).map(str::to_string) else { return Ok(answer) };
        match self.get(set, &id).await {
            Ok(mut stored) if stored.is_object() => {
                stored["Id"] = Value::String(id);
                Ok(stored)
            }
            _ => Ok(answer),
        }
    }

    /// The answer to `POST <Set>`, its Id taken from the address when the body has none.
    async fn create_answer(&self, set: &str, record: &Value) -> Result<Value, UpstreamError> {
        self.call_read(Method::POST, set, Some(record), |Answer { text, status, address, .. }| {
            let mut answer = record_answer(&text)?;
            let has_id = answer.get("Id").is_some_and(|id| !id.is_null());
            match address.as_deref().and_then(key_of_address) {
                _ if has_id => {}
                Some(id) if answer.is_null() => answer = serde_json::json!({ "Id": id }),
                Some(id) if answer.is_object() => answer["Id"] = Value::String(id),
                _ => {
                    let detail = format!("no Id, OData-EntityId or Location in {:?}", summarise(&text));
                    return Err(UpstreamError::Unnamed { system: SYSTEM, status, detail });
                }
            }
            Ok(answer)
        })
        .await
    }

    /// `PUT <Set>(<Id>L)` with the whole record: the record answered, if any. A server that
    /// answers without a body but with an `ETag` naming another version than the one sent
    /// has set a `Version` of its own: its record is read and answered instead (`null` should
    /// that read fail; the update applied all the same).
    pub async fn update(&self, set: &str, id: &str, record: &Value) -> Result<Value, UpstreamError> {
        let segment = key_segment(set, id);
        let read = |answer: Answer| Ok((record_answer(&answer.text)?, answer.etag));
        let (answer, etag) = self.call_read(Method::PUT, &segment, Some(record), read).await?;
        match etag {
            Some(etag) if answer.is_null() && !tags_version(&etag, record.get("Version")) => {
                Ok(self.get(set, id).await.unwrap_or_default())
            }
            _ => Ok(answer),
        }
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
        retry_read(|| self.call_read(Method::GET, &target, None, |answer| ODataPage::from_text(&answer.text))).await
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

    /// `GET <Set>/$count` (of the records `filter` holds, with one): how many records the set
    /// has, as a number in plain text (every OData version; a JSON number is taken too). Asked
    /// as text first: a server may refuse JSON for it (WCF Data Services answers 415).
    pub async fn count(&self, set: &str, filter: Option<&str>) -> Result<u64, UpstreamError> {
        let target = match filter {
            Some(filter) => {
                let query =
                    url::form_urlencoded::Serializer::new(String::new()).append_pair("$filter", filter).finish();
                format!("{set}/$count?{query}")
            }
            None => format!("{set}/$count"),
        };
        let accept = "text/plain, application/json;q=0.9, */*;q=0.1";
        retry_read(|| {
            self.call_accepting(accept, Method::GET, &target, None, |Answer { text, .. }| {
                let number = text.trim_start_matches('\u{feff}').trim();
                number.parse::<u64>().map_err(|_| UpstreamError::Malformed {
                    system: SYSTEM,
                    detail: format!("{set}/$count answered no count: {}", summarise(&text)),
                })
            })
        })
        .await
    }

    /// `GET <Set>(<Id>L)`, retried while the upstream fails transiently.
    pub async fn get(&self, set: &str, id: &str) -> Result<Value, UpstreamError> {
        let segment = key_segment(set, id);
        retry_read(|| self.call(Method::GET, &segment, None)).await
    }
}

/// An answer's body (empty for 204), its status, the address of the record it names
/// (`OData-EntityId`, else `Location`) and its `ETag`, if any.
struct Answer {
    text: String,
    status: u16,
    address: Option<String>,
    etag: Option<String>,
}

/// Whether an `ETag` (`"3"`, weak `W/"3"`, or an OData literal `W/"'3'"`, `W/"3L"`) names
/// `version`, a record's `Version` (a number, or its text).
fn tags_version(etag: &str, version: Option<&Value>) -> bool {
    let tag = etag.trim().strip_prefix("W/").unwrap_or(etag.trim()).trim_matches('"').trim_matches('\'');
    let tag = tag.strip_suffix(['L', 'l']).unwrap_or(tag);
    version.and_then(crate::vocabulary::json_integer::json_integer).is_some_and(|v| tag == v.to_string())
}

/// The record of an answer to a call of one record (`null` when empty). OData v2's verbose
/// JSON wraps it in `d` (`{"d": {…}}`; `d.results` is a collection's, never a record's). A
/// success status whose body is an OData error (`{"error": …}`) answered nothing that can be
/// taken: it is [`UpstreamError::Malformed`], and a write answered so is read back.
fn record_answer(text: &str) -> Result<Value, UpstreamError> {
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    let answer: Value = parse_json(SYSTEM, text)?;
    let Value::Object(mut top) = answer else { return Ok(answer) };
    let only = |key: &str| top.len() == 1 && top.get(key).is_some_and(Value::is_object);
    if only("error") || only("odata.error") {
        let detail = format!("a success status with an error body: {}", odata_message(text));
        return Err(UpstreamError::Malformed { system: SYSTEM, detail });
    }
    if only("d") {
        return Ok(top.remove("d").unwrap_or_default());
    }
    Ok(Value::Object(top))
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

    #[test]
    fn etags_name_a_version_in_every_form() {
        use serde_json::json;
        for etag in ["\"3\"", "W/\"3\"", "W/\"'3'\"", "W/\"3L\""] {
            assert!(tags_version(etag, Some(&json!(3))), "{etag}");
            assert!(tags_version(etag, Some(&json!("3"))), "{etag}");
        }
        assert!(!tags_version("W/\"4\"", Some(&json!(3))));
        assert!(!tags_version("W/\"AAAAAAAAB9E=\"", Some(&json!(3))));
        assert!(!tags_version("\"3\"", None));
    }

    #[test]
    fn a_record_is_read_inside_d_and_an_error_body_is_no_record() {
        use serde_json::json;
        let record = |body: Value| record_answer(&body.to_string());
        assert_eq!(record(json!({"d": {"Id": "1"}})).unwrap(), json!({"Id": "1"}));
        assert_eq!(record(json!({"Id": "1", "d": {}})).unwrap(), json!({"Id": "1", "d": {}}));
        assert_eq!(record_answer(" ").unwrap(), Value::Null);
        let error = record(json!({"odata.error": {"code": "", "message": {"value": "locked"}}})).unwrap_err();
        assert!(matches!(&error, UpstreamError::Malformed { detail, .. } if detail.contains("locked")), "{error}");
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
}
