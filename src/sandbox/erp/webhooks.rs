//! The webhook calls the simulator makes after a write.

use serde_json::{Value, json};

/// Makes one webhook call and returns its log entry.
pub(super) async fn call_webhook(client: reqwest::Client, url: String, get: bool, event: Value) -> Value {
    let mut entry = json!({"url": url, "method": if get { "GET" } else { "POST" }, "entityName": event["entityName"],
                           "entityId": event["entityId"], "type": event["type"], "status": 0});
    let request = if get {
        let Ok(mut target) = url::Url::parse(&url) else { return entry };
        target
            .query_pairs_mut()
            .append_pair("entityName", event["entityName"].as_str().unwrap_or_default())
            .append_pair("entityId", event["entityId"].as_str().unwrap_or_default())
            .append_pair("type", event["type"].as_str().unwrap_or_default());
        entry["url"] = json!(target.as_str());
        client.get(target)
    } else {
        client.post(&url).json(&event)
    };
    if let Ok(response) = request.send().await {
        entry["status"] = json!(response.status().as_u16());
    }
    entry
}
