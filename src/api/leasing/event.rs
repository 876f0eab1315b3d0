//! The event the leasing watcher posts to subscriptions, described for the document (no
//! operation answers it; the subscriptions' create operation has it as a callback).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The event posted to subscriptions when a watched financing request's state changes
/// (`type` `leasing.state_changed`).
#[derive(Serialize, Deserialize, JsonSchema)]
#[schemars(example = "LeasingStateChangedEvent::example")]
pub struct LeasingStateChangedEvent {
    /// The event's type, `leasing.state_changed`.
    #[serde(rename = "type")]
    #[schemars(schema_with = "state_changed_type")]
    pub event_type: String,
    /// The event's id (`msg_…`), also its `webhook-id`: the same on every retry; use it to
    /// drop duplicates (delivery is at least once).
    pub id: String,
    /// When the change was observed (RFC 3339).
    pub created_at: String,
    pub data: StateChange,
}

/// The one value of [`LeasingStateChangedEvent`]'s `type`.
fn state_changed_type(_: &mut schemars::r#gen::SchemaGenerator) -> schemars::schema::Schema {
    serde_json::from_value(json!({"type": "string", "enum": [crate::leasing::watch::event::STATE_CHANGED]}))
        .expect("a valid schema")
}

impl LeasingStateChangedEvent {
    fn example() -> Value {
        json!({"type": "leasing.state_changed", "id": "msg_2b7c0e5d4f1a4c3b9e8d7f6a5b4c3d2e",
               "created_at": "2026-11-27T10:05:00.000Z",
               "data": {"financingId": "0b5e8a4c-1d2f-4a7b-9c3e-5f6a7b8c9d0e", "requestId": "180-33001",
                        "previousState": "RequestToGrenke", "state": "ReadyToSign", "terminal": false, "readyToSign": true}})
    }
}

/// One observed change of a financing request's state.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct StateChange {
    #[serde(rename = "financingId")]
    pub financing_id: String,
    /// The provider's request number, once known.
    #[serde(rename = "requestId")]
    pub request_id: Option<String>,
    #[serde(rename = "previousState")]
    pub previous_state: String,
    pub state: String,
    /// Whether the new state is terminal (Declined, Cancelled, Contracted, RunningContract):
    /// no further event follows.
    pub terminal: bool,
    #[serde(rename = "readyToSign")]
    pub ready_to_sign: bool,
}
