//! Secrets inside mirrored ERP records, masked before a record is shown: a `webhook` record's
//! URL carries the service's own webhook secret (`…/erp/webhooks?secret=…`), and other models
//! may hold credentials in fields or URLs. Everything a user can read goes through
//! [`masked`]; the mirror keeps the records as the ERP sent them.

use serde_json::{Map, Value};

/// What a masked value reads as.
pub const MASK: &str = "***";

/// Parts of a field or query-parameter name that mark a secret.
const SECRET_NAMES: &[&str] =
    &["secret", "password", "passwd", "pwd", "token", "apikey", "api_key", "signature", "credential"];

fn names_a_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_NAMES.iter().any(|part| name.contains(part)) || name == "key" || name == "sig"
}

/// The record with every secret masked: string fields named like a secret, and in every URL
/// the password of its user part and the query parameters named like a secret.
pub fn masked(mut document: Value) -> Value {
    mask(&mut document);
    document
}

/// [`masked`] for a record shown as an object.
pub fn masked_object(document: Value) -> Map<String, Value> {
    match masked(document) {
        Value::Object(fields) => fields,
        _ => Map::new(),
    }
}

fn mask(value: &mut Value) {
    match value {
        Value::Object(fields) => {
            for (name, field) in fields.iter_mut() {
                if names_a_secret(name) && field.is_string() {
                    *field = Value::String(MASK.into());
                } else {
                    mask(field);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask),
        Value::String(text) => {
            if let Some(url) = masked_url(text) {
                *text = url;
            }
        }
        _ => {}
    }
}

/// Whether a filter `<field>-eq=<value>` would compare a secret: the field is named like one,
/// or the value is a URL with a secret in it. The records the ERP answers to such a filter
/// would confirm a guess (the service's own webhook secret in a `webhook` record's URL).
pub fn compares_a_secret(field: &str, value: &str) -> bool {
    names_a_secret(field) || masked_url(&value.to_ascii_lowercase()).is_some()
}

/// A URL with its secrets masked; `None` when the text is no URL or holds none.
pub fn masked_url(text: &str) -> Option<String> {
    if !(text.starts_with("http://") || text.starts_with("https://")) {
        return None;
    }
    let mut url = url::Url::parse(text).ok()?;
    let mut changed = false;
    if url.password().is_some() {
        url.set_password(Some(MASK)).ok()?;
        changed = true;
    }
    let pairs: Vec<(String, String)> = url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    if pairs.iter().any(|(name, _)| names_a_secret(name)) {
        let masked: Vec<(String, String)> = pairs
            .into_iter()
            .map(|(name, value)| if names_a_secret(&name) { (name, MASK.to_string()) } else { (name, value) })
            .collect();
        url.query_pairs_mut().clear().extend_pairs(masked);
        changed = true;
    }
    changed.then(|| url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn urls_and_secret_fields_are_masked_and_the_rest_is_kept() {
        let record = json!({
            "id": "7",
            "url": "https://svc.example/api/v1/erp/webhooks?secret=s3cret&tenant=acme",
            "callback": "https://user:hunter2@hooks.example/in?token=abc",
            "apiKey": "k-123",
            "nested": [{"clientSecret": "shh", "name": "kept"}],
            "homepage": "https://acme.example/?page=2",
            "version": "3"
        });
        let shown = masked(record);
        let text = shown.to_string();
        for secret in ["s3cret", "hunter2", "abc", "k-123", "shh"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert_eq!(shown["url"], "https://svc.example/api/v1/erp/webhooks?secret=***&tenant=acme");
        assert_eq!(shown["callback"], "https://user:***@hooks.example/in?token=***");
        assert_eq!(shown["homepage"], "https://acme.example/?page=2");
        assert_eq!(shown["nested"][0]["name"], "kept");
        assert_eq!(shown["version"], "3");
    }
}
