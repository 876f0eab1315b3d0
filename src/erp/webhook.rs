//! Webhook calls from the ERP: who may call (source-address allowlist and a shared secret),
//! and what a call says (entity name, entity id, event).
//!
//! The ERP's calls are unsigned and minimal; their exact keys are not documented, so the
//! parser accepts `entityName`/`entityId`/`type` and the fallbacks seen in practice: `entity`,
//! `entity_name`, `id`, `entity_id`, `entity.id`, `event`, `action`. The record itself is never
//! taken from the call: it is fetched from the ERP by id.

use std::net::IpAddr;

use ipnet::IpNet;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Map, Value};

/// What a webhook call announces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookCall {
    pub entity_name: String,
    pub entity_id: String,
    pub event: Event,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Created,
    Updated,
    Deleted,
}

impl Event {
    pub fn as_str(self) -> &'static str {
        match self {
            Event::Created => "created",
            Event::Updated => "updated",
            Event::Deleted => "deleted",
        }
    }

    /// `created`, `create`, `atCreate`, `CREATED`, … ; unknown or absent → `updated` (the
    /// record is fetched again either way).
    pub fn parse(text: Option<&str>) -> Event {
        let text = text.unwrap_or_default().to_ascii_lowercase();
        if text.contains("delet") {
            Event::Deleted
        } else if text.contains("creat") || text.contains("insert") {
            Event::Created
        } else {
            Event::Updated
        }
    }
}

/// Why a call was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookRefusal {
    #[error("webhook calls are only accepted from the ERP's addresses")]
    Forbidden,
    #[error("the webhook secret is missing or wrong")]
    BadSecret,
    #[error("{0}")]
    Invalid(String),
}

/// The guard of the webhook route.
#[derive(Debug, Clone)]
pub struct WebhookGuard {
    pub allowlist: Vec<IpNet>,
    pub secret: Option<SecretString>,
}

impl WebhookGuard {
    /// The source address must be in the allowlist (an empty allowlist admits nobody); with a
    /// secret configured, the call must carry it (compared in constant time).
    pub fn admit(&self, source: IpAddr, presented: Option<&str>) -> Result<(), WebhookRefusal> {
        let source = canonical(source);
        if !self.allowlist.iter().any(|net| net.contains(&source)) {
            return Err(WebhookRefusal::Forbidden);
        }
        if let Some(secret) = &self.secret {
            // Digests, not the bytes: a byte comparison ends at once when the lengths differ.
            let matches = presented.is_some_and(|p| crate::digest::same_secret(p, secret.expose_secret()));
            if !matches {
                return Err(WebhookRefusal::BadSecret);
            }
        }
        Ok(())
    }
}

/// IPv4-mapped IPv6 addresses (`::ffff:10.0.0.1`) are matched as IPv4.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(address),
        other => other,
    }
}

/// The first of `keys` holding text (or, for ids, a number).
fn first_text(fields: &Map<String, Value>, keys: &[&str], numbers: bool) -> Option<String> {
    keys.iter().find_map(|key| {
        let value = match key.split_once('.') {
            Some((outer, inner)) => fields.get(outer)?.get(inner)?,
            None => fields.get(*key)?,
        };
        match value {
            Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
            Value::Number(n) if numbers => Some(n.to_string()),
            _ => None,
        }
    })
}

/// Whether `text` is at most 64 ASCII letters, digits and characters of `also`.
fn plain_name(text: &str, also: &[char]) -> bool {
    text.len() <= 64 && text.chars().all(|c| c.is_ascii_alphanumeric() || also.contains(&c))
}

/// The registry's spelling of an entity name the ERP may send in another case (`Customer`,
/// `SALESORDER`): the call is the model's, and calls of one record stay together in the inbox.
/// A name of no model is kept as sent (its call fails visibly).
fn registry_spelling(name: String) -> String {
    if generated::erp::model(&name).is_some() {
        return name;
    }
    let same = generated::erp::model_names().find(|known| known.eq_ignore_ascii_case(&name));
    same.map(str::to_string).unwrap_or(name)
}

/// Reads a call from its fields (the GET query or the POST JSON object).
pub fn parse(fields: &Map<String, Value>) -> Result<WebhookCall, WebhookRefusal> {
    let entity_name = first_text(fields, &["entityName", "entity_name", "entityType", "entity"], false);
    let entity_id = first_text(fields, &["entityId", "entity_id", "id", "entity.id"], true);
    const EVENT_KEYS: [&str; 4] = ["type", "event", "action", "eventType"];
    if EVENT_KEYS.iter().any(|key| fields.get(*key).is_some_and(|v| !v.is_string() && !v.is_null())) {
        return Err(WebhookRefusal::Invalid("type: created, updated or deleted, as text".into()));
    }
    let event = first_text(fields, &EVENT_KEYS, false);
    match (entity_name, entity_id) {
        (Some(entity_name), Some(entity_id)) => {
            if !plain_name(&entity_id, &['-']) {
                return Err(WebhookRefusal::Invalid("entityId: letters, digits and -, at most 64".into()));
            }
            // Names are the ERP's entity names (`customer`, `salesOrder`). Anything else is
            // refused here: calls are stored in batches, and a text the database refuses (a NUL
            // character, on Postgres) would fail the batch of every call stored with it.
            if !plain_name(&entity_name, &['_', '-', '.']) {
                return Err(WebhookRefusal::Invalid("entityName: letters, digits, _, - and ., at most 64".into()));
            }
            let entity_name = registry_spelling(entity_name);
            Ok(WebhookCall { entity_name, entity_id, event: Event::parse(event.as_deref()) })
        }
        (None, _) => Err(WebhookRefusal::Invalid("entityName is missing".into())),
        (_, None) => Err(WebhookRefusal::Invalid("entityId (or id) is missing".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn every_key_variant_is_read() {
        let expected = WebhookCall { entity_name: "customer".into(), entity_id: "12".into(), event: Event::Created };
        for body in [
            json!({"entityName": "customer", "entityId": "12", "type": "created"}),
            json!({"entityName": "customer", "id": 12, "event": "CREATE"}),
            json!({"entity": {"id": "12"}, "entityName": "customer", "action": "atCreate"}),
            json!({"entity_name": "customer", "entity_id": "12", "type": "insert"}),
        ] {
            assert_eq!(parse(&object(body.clone())).unwrap(), expected, "{body}");
        }
        for name in ["Customer", "CUSTOMER"] {
            assert_eq!(parse(&object(json!({"entityName": name, "id": 12, "type": "created"}))).unwrap(), expected);
        }
        let deleted = parse(&object(json!({"entityName": "contact", "entityId": "3", "type": "deleted"}))).unwrap();
        assert_eq!(deleted.event, Event::Deleted);
        let no_event = parse(&object(json!({"entityName": "contact", "entityId": "3"}))).unwrap();
        assert_eq!(no_event.event, Event::Updated);
    }

    mod properties {
        use super::*;
        use crate::vocabulary::strategies::text;
        use proptest::prelude::*;

        proptest! {
            /// Whichever key spelling carries them, the entity's name and id are read as sent.
            #[test]
            fn every_spelling_reads_the_same_call(
                name in text("abcdefghijklmnopqrstuvwxyz", 1..20),
                id in text("0123456789abcdefABCDEF-", 1..64),
                name_key in prop::sample::select(vec!["entityName", "entity_name", "entityType", "entity"]),
                id_key in prop::sample::select(vec!["entityId", "entity_id", "id", "entity.id"]),
                numeric in any::<bool>(),
            ) {
                prop_assume!(!(name_key == "entity" && id_key == "entity.id"));
                let id_value = match id.parse::<u64>() {
                    Ok(n) if numeric => json!(n),
                    _ => json!(id),
                };
                let mut fields = Map::new();
                fields.insert(name_key.to_string(), json!(name));
                match id_key.split_once('.') {
                    Some((outer, inner)) => { fields.insert(outer.to_string(), json!({inner: id_value})); }
                    None => { fields.insert(id_key.to_string(), id_value.clone()); }
                }
                let call = parse(&fields).unwrap();
                prop_assert_eq!(call.entity_name, name);
                prop_assert_eq!(call.entity_id, id_value.as_str().map(str::to_string).unwrap_or_else(|| id_value.to_string()));
            }

            /// An id with anything but letters, digits and `-` is refused (it ends up in an
            /// upstream URL), as is one over 64 characters.
            #[test]
            fn odd_ids_are_refused(
                prefix in text("abc123", 0..10),
                odd in prop::sample::select(vec!['/', '.', '%', '?', '#', ' ', '\\', '\'', 'ä']),
                long in text("a1-", 65..90),
            ) {
                let with_odd = format!("a{prefix}{odd}x"); // (surrounding spaces are trimmed, inner ones are not)
                let refused = |id: &str| parse(&object(json!({"entityName": "customer", "entityId": id}))).is_err();
                prop_assert!(refused(&with_odd));
                prop_assert!(refused(&long));
            }

            /// Any object at all is read or refused, never a panic.
            #[test]
            fn arbitrary_objects_never_panic(
                entries in prop::collection::btree_map(
                    prop::sample::select(vec!["entityName", "entityId", "id", "entity", "type", "event", "x"]),
                    prop_oneof![Just(json!(null)), any::<i64>().prop_map(|n| json!(n)), text("ab./ -", 0..8).prop_map(|s| json!(s)), Just(json!({"id": "7"}))],
                    0..6,
                ),
            ) {
                let fields: Map<String, Value> = entries.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
                let _ = parse(&fields);
            }
        }
    }

    #[test]
    fn calls_without_name_or_id_or_with_odd_ids_are_refused() {
        assert!(parse(&object(json!({"entityId": "1"}))).is_err());
        assert!(parse(&object(json!({"entityName": "customer"}))).is_err());
        assert!(parse(&object(json!({"entityName": "customer", "entityId": "../../etc"}))).is_err());
        // Ids may be numbers; names and events are text.
        assert_eq!(parse(&object(json!({"entityName": "customer", "entityId": 7}))).unwrap().entity_id, "7");
        assert!(parse(&object(json!({"entityName": 7, "entityId": "1"}))).is_err());
        for name in ["cus\u{0}tomer", "customer order", "kunde/ä", &"n".repeat(65)] {
            assert!(parse(&object(json!({"entityName": name, "entityId": "1"}))).is_err(), "{name:?}");
        }
        assert_eq!(
            parse(&object(json!({"entityName": "sales_order-2.x", "entityId": "1"}))).unwrap().entity_name,
            "sales_order-2.x"
        );
        assert!(parse(&object(json!({"entityName": "customer", "entityId": "1", "type": -5}))).is_err());
        assert!(parse(&object(json!({"entityName": "customer", "entityId": "1", "type": null}))).is_ok());
    }

    #[test]
    fn the_guard_checks_address_then_secret() {
        let guard = WebhookGuard {
            allowlist: vec!["10.0.0.0/8".parse().unwrap(), "192.0.2.7/32".parse().unwrap()],
            secret: Some(SecretString::from("s3cret")),
        };
        let inside: IpAddr = "10.1.2.3".parse().unwrap();
        assert_eq!(guard.admit(inside, Some("s3cret")), Ok(()));
        assert_eq!(guard.admit("::ffff:192.0.2.7".parse().unwrap(), Some("s3cret")), Ok(()));
        assert_eq!(guard.admit("192.0.2.8".parse().unwrap(), Some("s3cret")), Err(WebhookRefusal::Forbidden));
        assert_eq!(guard.admit(inside, None), Err(WebhookRefusal::BadSecret));
        assert_eq!(guard.admit(inside, Some("s3cre")), Err(WebhookRefusal::BadSecret));
        let open = WebhookGuard { secret: None, ..guard };
        assert_eq!(open.admit(inside, None), Ok(()));
        let nobody = WebhookGuard { allowlist: vec![], secret: None };
        assert_eq!(nobody.admit(inside, None), Err(WebhookRefusal::Forbidden));
    }
}
