//! The closed sets the service writes are `enum`s in the document.
//!
//! A string property of an answer whose description names its values as a list of words
//! (``"`pending`, `done` or `failed` (given up)."``, ``"Always `ok`."``) is a closed set: a
//! generator reads it from `enum` only, so the property must carry one, and the two must name
//! the same words. Schemas that requests use (the provider's payloads, passed through
//! untouched) are not judged: their values are the provider's to close.

use std::collections::{BTreeSet, HashSet};

use serde_json::Value;

/// The words a description lists as a property's values: its first clause (up to `:` or `.`
/// outside parentheses and code) made only of code spans joined by `,`, `or` and `then`, or
/// `Always` and one code span. None for any other description.
fn listed_words(description: &str) -> Option<BTreeSet<String>> {
    let description = description.strip_prefix("Always ").unwrap_or(description);
    if !description.starts_with('`') {
        return None;
    }
    let (mut words, mut rest) = (BTreeSet::new(), String::new());
    let (mut depth, mut word) = (0, None::<String>);
    for c in description.chars() {
        match (&mut word, c) {
            (Some(current), '`') => {
                if depth == 0 {
                    words.insert(std::mem::take(current));
                }
                word = None;
            }
            (Some(current), c) => current.push(c),
            (None, '`') => word = Some(String::new()),
            (None, '(') => depth += 1,
            (None, ')') => depth -= 1,
            (None, _) if depth > 0 => {}
            (None, ':' | '.') => break,
            (None, c) => rest.push(c),
        }
    }
    let joins = rest.replace(',', " ");
    joins.split_whitespace().all(|join| join == "or" || join == "then").then_some(words)
}

/// The names of the schemas a request body or parameter reaches through `$ref`.
fn request_schemas(doc: &Value) -> HashSet<String> {
    let mut reached = HashSet::new();
    let mut pending: Vec<&Value> = Vec::new();
    for item in doc["paths"].as_object().into_iter().flat_map(|paths| paths.values()) {
        for op in item.as_object().into_iter().flat_map(|ops| ops.values()) {
            pending.push(&op["requestBody"]);
            pending.push(&op["parameters"]);
        }
    }
    while let Some(value) = pending.pop() {
        match value {
            Value::Object(object) => {
                if let Some(name) = object.get("$ref").and_then(Value::as_str).and_then(|r| r.rsplit('/').next())
                    && reached.insert(name.to_string())
                {
                    pending.push(&doc["components"]["schemas"][name]);
                }
                pending.extend(object.values());
            }
            Value::Array(items) => pending.extend(items),
            _ => {}
        }
    }
    reached
}

#[test]
fn closed_sets_in_answers_are_enums() {
    let doc: Value = serde_json::from_str(&super::document()).unwrap();
    let requested = request_schemas(&doc);
    assert!(requested.contains("FinancingRequestPayload"), "{requested:?}");
    let mut closed = Vec::new();
    for (name, schema) in doc["components"]["schemas"].as_object().unwrap() {
        if requested.contains(name) {
            continue;
        }
        for (property, value) in schema["properties"].as_object().into_iter().flatten() {
            let description = value["description"].as_str().unwrap_or_default();
            let Some(words) = listed_words(description).filter(|_| value["type"] == "string") else { continue };
            let declared: Option<BTreeSet<String>> =
                value["enum"].as_array().map(|values| values.iter().map(|v| v.as_str().unwrap().to_string()).collect());
            assert_eq!(declared, Some(words), "{name}.{property}: the enum and the description differ");
            closed.push(format!("{name}.{property}"));
        }
    }
    for expected in ["Delivery.status", "Subscription.status", "FlowRecord.status", "InboxEntry.state", "Job.status"] {
        assert!(closed.iter().any(|c| c == expected), "{expected} not judged: {closed:?}");
    }
}

#[test]
fn listed_words_are_read_only_from_lists() {
    let words = |d: &str| listed_words(d).map(|w| w.into_iter().collect::<Vec<_>>());
    assert_eq!(
        words("`pending` (retried at `next_attempt_at`), `done` or `failed` (given up)."),
        Some(vec!["done".to_string(), "failed".into(), "pending".into()])
    );
    assert_eq!(words("`active`, or `disabled`: after five days."), Some(vec!["active".to_string(), "disabled".into()]));
    assert_eq!(words("Always `ok`."), Some(vec!["ok".to_string()]));
    assert_eq!(words("`whsec_<base64>` is the secret."), None);
    assert_eq!(words("The state, e.g. `ReadyToSign`."), None);
}
