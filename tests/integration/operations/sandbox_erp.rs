//! The ERP simulator over real HTTP: key, lists, writes, optimistic locking, seeds, webhooks, faults.

use crate::common::JsonAnswer;
use crate::common::contract::Checked;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use integration_service::sandbox::erp;
use integration_service::sandbox::faults::Faults;
use integration_service::sandbox::http::{SimRequest, json as json_response, serve};
use reqwest::StatusCode;
use serde_json::{Value, json};

fn logger() -> slog::Logger {
    slog::Logger::root(slog::Discard, slog::o!())
}

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// A started simulator: its host root (for `/__sandbox`) and its API root.
struct Sim {
    root: String,
    api: String,
    client: reqwest::Client,
}

impl Sim {
    async fn start() -> Sim {
        let address = erp::start(loopback(), logger()).await.unwrap();
        let root = format!("http://{address}");
        Sim { api: format!("{root}{}", erp::API_ROOT), root, client: reqwest::Client::new() }
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> (StatusCode, Value) {
        let response = request.header("AuthenticationToken", erp::API_KEY).checked().await.unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        (status, if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap() })
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.send(self.client.get(format!("{}{path}", self.api))).await
    }

    async fn post(&self, path: &str, body: &Value) -> (StatusCode, Value) {
        self.send(self.client.post(format!("{}{path}", self.api)).json(body)).await
    }

    async fn put(&self, path: &str, body: &Value) -> (StatusCode, Value) {
        self.send(self.client.put(format!("{}{path}", self.api)).json(body)).await
    }

    async fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.send(self.client.delete(format!("{}{path}", self.api))).await
    }

    async fn sandbox(&self, path: &str) -> Value {
        self.client.get(format!("{}/__sandbox/{path}", self.root)).json_value().await
    }

    async fn seed(&self, body: &Value) -> Value {
        let response = self.client.post(format!("{}/__sandbox/seed", self.root)).json(body).checked().await.unwrap();
        assert_eq!(response.status(), 201);
        response.json_value().await
    }

    /// The listed records of `path`.
    async fn list(&self, path: &str) -> Vec<Value> {
        let (status, body) = self.get(path).await;
        assert_eq!(status, 200, "{path}: {body}");
        body["result"].as_array().unwrap().clone()
    }
}

fn ids(records: &[Value]) -> Vec<u64> {
    records.iter().map(|r| r["id"].as_str().unwrap().parse().unwrap()).collect()
}

fn assert_problem(body: &Value, status: u16) {
    assert_eq!(body["status"], status, "{body}");
    assert!(body["type"].is_string() && body["title"].is_string() && body["detail"].is_string(), "{body}");
}

#[tokio::test]
async fn the_api_key_is_required() {
    let sim = Sim::start().await;
    let url = format!("{}/customer", sim.api);
    let missing = sim.client.get(&url).checked().await.unwrap();
    assert_eq!(missing.status(), 401);
    assert!(missing.headers()["content-type"].to_str().unwrap().starts_with("application/json"));
    assert_problem(&missing.json_value().await, 401);
    let wrong = sim.client.get(&url).header("AuthenticationToken", "nope").checked().await.unwrap();
    assert_eq!(wrong.status(), 401);
    let (status, body) = sim.get("/customer").await;
    assert_eq!(status, 200);
    assert_eq!(body["result"].as_array().unwrap().len(), 3, "three seeded customers");
    let (status, body) = sim.get("/noSuchEntity").await;
    assert_eq!(status, 404);
    assert_problem(&body, 404);
}

#[tokio::test]
async fn lists_page_sort_filter_and_count() {
    let sim = Sim::start().await;
    let seeded = sim.seed(&json!({"model": "customer", "count": 25})).await;
    assert_eq!(seeded["result"].as_array().unwrap().len(), 25);
    assert_eq!(sim.get("/customer/count").await.1, json!({"result": 28}));

    let all = sim.list("/customer?pageSize=1000").await;
    assert_eq!(all.len(), 28);
    let all_ids = ids(&all);
    assert!(all_ids.windows(2).all(|w| w[0] < w[1]), "by id ascending by default: {all_ids:?}");
    let third = sim.list("/customer?page=3&pageSize=10").await;
    assert_eq!(ids(&third), all_ids[20..]);
    assert!(sim.list("/customer").await.len() == 28, "default page size 100");
    let descending = sim.list("/customer?sort=-id&pageSize=5").await;
    assert_eq!(ids(&descending), all_ids.iter().rev().take(5).copied().collect::<Vec<_>>());
    let by_company = sim.list("/customer?sort=company&pageSize=1000").await;
    let companies: Vec<&str> = by_company.iter().map(|r| r["company"].as_str().unwrap()).collect();
    assert!(companies.windows(2).all(|w| w[0] <= w[1]), "{companies:?}");
    let (status, body) = sim.get("/customer?pageSize=1001").await;
    assert_eq!(status, 400);
    assert_problem(&body, 400);

    let company = all[4]["company"].as_str().unwrap();
    let found = sim.list(&format!("/customer?company-eq={}", urlencode(company))).await;
    assert_eq!(ids(&found), [all_ids[4]]);
    let picked = sim.list(&format!("/customer?id-in={},{}&unknownParameter=1", all_ids[1], all_ids[7])).await;
    assert_eq!(ids(&picked), [all_ids[1], all_ids[7]]);
    let cursor = all[19]["lastModifiedDate"].as_i64().unwrap();
    let later = sim.list(&format!("/customer?lastModifiedDate-gt={cursor}&sort=lastModifiedDate")).await;
    assert_eq!(ids(&later), all_ids[20..], "lastModifiedDate is strictly increasing");
    let (_, count) = sim.get(&format!("/customer/count?lastModifiedDate-gt={cursor}")).await;
    assert_eq!(count["result"], 8);
    let numbers = sim.list("/customer?customerNumber-ge=10026").await;
    assert_eq!(numbers.len(), 3, "customer numbers 10026..10028 compare as numbers");
}

fn urlencode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[tokio::test]
async fn writes_assign_lock_and_replace() {
    let sim = Sim::start().await;
    let (status, created) = sim
        .post("/contact", &json!({"id": "5", "firstName": "Eva", "lastName": "Kurz", "email": "eva@x.example"}))
        .await;
    assert_eq!(status, 201);
    let id = created["id"].as_str().unwrap().to_string();
    assert!(id.chars().all(|c| c.is_ascii_digit()) && id != "5", "the simulator assigns the id: {id}");
    assert_eq!(created["version"], "0");
    let created_date = created["createdDate"].as_i64().unwrap();
    assert_eq!(created["lastModifiedDate"].as_i64(), Some(created_date));
    assert_eq!(sim.get(&format!("/contact/id/{id}")).await, (StatusCode::OK, created.clone()));
    let (status, body) = sim.get("/contact/id/999999").await;
    assert_eq!(status, 404);
    assert_problem(&body, 404);

    // A partial update keeps the other fields.
    let (status, partial) =
        sim.put(&format!("/contact/id/{id}?ignoreMissingProperties=true"), &json!({"email": "eva@y.example"})).await;
    assert_eq!(status, 200);
    assert_eq!((partial["email"].as_str(), partial["firstName"].as_str()), (Some("eva@y.example"), Some("Eva")));
    assert_eq!(partial["version"], "1");
    let partial_modified = partial["lastModifiedDate"].as_i64().unwrap();
    assert!(partial_modified > created_date);

    // A full update replaces the entity but keeps id and createdDate.
    let (status, replaced) = sim.put(&format!("/contact/id/{id}"), &json!({"version": "1", "lastName": "Lang"})).await;
    assert_eq!(status, 200);
    assert!(replaced.get("firstName").is_none() && replaced.get("email").is_none(), "{replaced}");
    assert_eq!((replaced["id"].as_str(), replaced["version"].as_str()), (Some(id.as_str()), Some("2")));
    assert_eq!(replaced["createdDate"].as_i64(), Some(created_date));
    assert!(replaced["lastModifiedDate"].as_i64().unwrap() > partial_modified);

    // A stale version changes nothing.
    let (status, conflict) = sim.put(&format!("/contact/id/{id}"), &json!({"version": "1", "lastName": "Alt"})).await;
    assert_eq!(status, 409);
    assert_problem(&conflict, 409);
    assert_eq!(conflict["title"], "optimistic_lock");
    assert!(conflict["type"].as_str().unwrap().ends_with("optimistic_lock"));
    assert_eq!(sim.get(&format!("/contact/id/{id}")).await.1, replaced);

    assert_eq!(sim.delete(&format!("/contact/id/{id}")).await.0, 204);
    assert_eq!(sim.get(&format!("/contact/id/{id}")).await.0, 404);
    assert_eq!(sim.delete(&format!("/contact/id/{id}")).await.0, 404);

    let received = sim.sandbox("received").await;
    let methods: Vec<&str> = received.as_array().unwrap().iter().map(|w| w["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["POST", "PUT", "PUT", "PUT", "DELETE", "DELETE"]);
    assert_eq!(received[1]["query"], "ignoreMissingProperties=true");
    assert_eq!(received[1]["body"], json!({"email": "eva@y.example"}));
    assert_eq!(received[4]["path"], format!("{}/contact/id/{id}", erp::API_ROOT));
}

#[tokio::test]
async fn seeds_templates_attributes_and_given_records() {
    let sim = Sim::start().await;
    let templates = sim.list("/mailTemplate?name-eq=leasing-missing-info").await;
    assert_eq!(templates.len(), 1);
    let template = &templates[0];
    assert_eq!((template["type"].as_str(), template["useAsDefault"].as_bool()), (Some("EMAIL"), Some(true)));
    assert_eq!(template["bccEmailAddresses"], "leasing-archive@sandbox.example");
    assert!(template["text"].as_str().unwrap().contains("{{ lessee.CompanyName }}"));
    assert!(template["subject"].as_str().unwrap().contains("financing_id"));

    let definitions = sim.list("/customAttributeDefinition?attributeKey-in=fieldReportId,serviceLevel").await;
    assert_eq!(definitions.len(), 2);
    let service_level = definitions.iter().find(|d| d["attributeKey"] == "serviceLevel").unwrap();
    let customers = sim.list("/customer").await;
    assert!(customers.iter().all(|c| {
        c["customAttributes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["attributeDefinitionId"] == service_level["id"] && a["stringValue"].is_string())
    }));
    assert!(customers.iter().all(|c| c["addresses"][0]["primeAddress"] == true && c["partyType"] == "ORGANIZATION"));
    assert_eq!(sim.list("/contact").await.len(), 3);
    assert!(sim.list("/article").await.iter().all(|a| a["articleType"] == "BASIC" && a["articleNumber"].is_string()));

    let seeded =
        sim.seed(&json!({"model": "article", "records": [{"id": "90001", "name": "Given"}, {"name": "Next"}]})).await;
    assert_eq!(seeded["result"][0]["id"], "90001");
    assert_eq!(seeded["result"][1]["id"], "90002", "ids continue after the highest one");
    assert_eq!(seeded["result"][1]["version"], "0");
    assert_eq!(sim.get("/article/id/90001").await.1["name"], "Given");
}

/// A loopback server that records the calls it gets.
async fn recorder() -> (String, Arc<Mutex<Vec<Value>>>) {
    let calls: Arc<Mutex<Vec<Value>>> = Arc::default();
    let recorded = calls.clone();
    let address = serve(loopback(), Arc::new(Faults::default()), logger(), move |req: SimRequest| {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        recorded
            .lock()
            .unwrap()
            .push(json!({"method": req.method.as_str(), "path": req.path, "query": req.query, "body": body}));
        async { json_response(http::StatusCode::OK, &json!({})) }
    })
    .await
    .unwrap();
    (format!("http://{address}"), calls)
}

/// Waits up to 5 s until `ready` holds for what `fetch` gives.
async fn eventually<F, Fut>(fetch: F, ready: impl Fn(&Value) -> bool) -> Value
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Value>,
{
    for _ in 0..100 {
        let value = fetch().await;
        if ready(&value) {
            return value;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("not ready after 5 s: {}", fetch().await);
}

#[tokio::test]
async fn webhooks_call_back_by_get_and_post() {
    let sim = Sim::start().await;
    let (hooks, calls) = recorder().await;
    let closed = std::net::TcpListener::bind(loopback()).unwrap().local_addr().unwrap();
    for hook in [
        json!({"entityName": "customer", "atCreate": true, "atUpdate": false, "atDelete": true, "requestMethod": "GET",
               "url": format!("{hooks}/hook?secret=s3cret")}),
        json!({"entityName": "customer", "atCreate": false, "atUpdate": true, "atDelete": false, "requestMethod": "POST",
               "url": format!("{hooks}/post")}),
        json!({"entityName": "contact", "atCreate": true, "requestMethod": "POST", "url": format!("http://{closed}/gone")}),
    ] {
        assert_eq!(sim.post("/webhook", &hook).await.0, 201);
    }
    sim.seed(&json!({"model": "customer", "count": 2})).await;
    let (_, customer) = sim.post("/customer", &json!({"company": "Hook AG"})).await;
    let id = customer["id"].as_str().unwrap().to_string();
    sim.put(&format!("/customer/id/{id}?ignoreMissingProperties=true"), &json!({"email": "a@hook.example"})).await;
    assert_eq!(sim.delete(&format!("/customer/id/{id}")).await.0, 204);
    sim.post("/contact", &json!({"lastName": "Nobody"})).await;

    let fetch = || async { Value::Array(calls.lock().unwrap().clone()) };
    let received = eventually(fetch, |v| v.as_array().unwrap().len() >= 3).await;
    let mut received = received.as_array().unwrap().clone();
    received.sort_by_key(|c| c["path"].as_str().unwrap().to_string());
    assert_eq!(received.len(), 3, "seeding fires no webhooks: {received:?}");
    let query = |kind: &str| format!("secret=s3cret&entityName=customer&entityId={id}&type={kind}");
    let gets: Vec<(&str, &str)> =
        received[..2].iter().map(|c| (c["method"].as_str().unwrap(), c["query"].as_str().unwrap())).collect();
    assert!(gets.contains(&("GET", query("created").as_str())), "{gets:?}");
    assert!(gets.contains(&("GET", query("deleted").as_str())), "{gets:?}");
    assert_eq!(received[2]["method"], "POST");
    assert_eq!(received[2]["path"], "/post");
    assert_eq!(received[2]["body"], json!({"entityName": "customer", "entityId": id, "type": "updated"}));

    let log = eventually(|| sim.sandbox("webhook-calls"), |v| v.as_array().unwrap().len() >= 4).await;
    let log = log.as_array().unwrap();
    assert_eq!(log.len(), 4);
    let created = log.iter().find(|c| c["type"] == "created" && c["entityName"] == "customer").unwrap();
    assert_eq!(created["method"], "GET");
    assert_eq!(created["url"], format!("{hooks}/hook?{}", query("created")));
    assert_eq!((created["entityId"].as_str(), created["status"].as_u64()), (Some(id.as_str()), Some(200)));
    let updated = log.iter().find(|c| c["type"] == "updated").unwrap();
    assert_eq!((updated["method"].as_str(), updated["status"].as_u64()), (Some("POST"), Some(200)));
    let failed = log.iter().find(|c| c["entityName"] == "contact").unwrap();
    assert_eq!(failed["status"], 0, "a failed call is logged with status 0");
}

#[tokio::test]
async fn a_429_fault_asks_to_wait() {
    let sim = Sim::start().await;
    let fault = json!({"path_prefix": "/webapp/api/v1/customer", "status": 429, "retry_after_seconds": 3});
    let added = sim.client.post(format!("{}/__sandbox/faults", sim.root)).json(&fault).checked().await.unwrap();
    assert_eq!(added.status(), 204);
    let response = sim
        .client
        .get(format!("{}/customer", sim.api))
        .header("AuthenticationToken", erp::API_KEY)
        .checked()
        .await
        .unwrap();
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "3");
    let body: Value = response.json_value().await;
    assert_problem(&body, 429);
    assert_eq!(body["title"], "too_many_requests");
    assert_eq!(sim.get("/customer").await.0, 200, "the fault applied once");
}
