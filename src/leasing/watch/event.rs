//! The event of a state change, as delivered: `{"type": "leasing.state_changed", "id",
//! "created_at", "data": {"financingId", "requestId", "previousState", "state", "terminal",
//! "readyToSign"}}`. Its `id` is the `webhook-id` of every delivery and retry of it.

use serde_json::json;

use crate::leasing::state::StateMeta;
use crate::store::leasing::watch::NewEvent;

/// The one event type there is.
pub const STATE_CHANGED: &str = "leasing.state_changed";
/// Every event type a subscription may name.
pub const EVENT_TYPES: [&str; 1] = [STATE_CHANGED];

/// The event of a change from `previous` to `state` of one request.
pub fn state_changed(financing_id: &str, request_id: Option<&str>, previous: &str, state: &str) -> NewEvent {
    let id = format!("msg_{}", uuid::Uuid::new_v4().simple());
    let now = chrono::Utc::now();
    let meta = StateMeta::of(state);
    let payload = json!({
        "type": STATE_CHANGED,
        "id": id,
        "created_at": now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "data": {
            "financingId": financing_id,
            "requestId": request_id,
            "previousState": previous,
            "state": state,
            "terminal": meta.terminal,
            "readyToSign": meta.ready_to_sign,
        }
    });
    NewEvent { id, event_type: STATE_CHANGED, payload: payload.to_string(), created_at: now.timestamp_millis() }
}
