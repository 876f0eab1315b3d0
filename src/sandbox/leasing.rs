//! The leasing-provider simulator: the operations of `spec/upstream/leasing/openapi.json`,
//! requests held in memory, states scripted by a marker in `Lessee.CompanyName`:
//!
//! | marker | state on reads |
//! |---|---|
//! | none | `RequestToGrenke` on the 1st read, `ReadyToSign` from the 2nd |
//! | `[declined]` `[cancelled]` `[missing-info]` `[running-contract]` `[contract-printed]` | that state from the 1st read |
//! | `[slow:N]` | `RequestToGrenke` until the N-th read, `ReadyToSign` from then on |
//! | `[never-ready]` | `ApplicationReceived` always |
//! | `[moves:S]` | by itself, read or not: `RequestToGrenke`, after S seconds (a decimal, e.g. `0.5`) `ReadyToSign`, after 2·S `Contracted` |
//!
//! `[moves:S]` is what the state watcher's tour, tests and bench use: a request that changes
//! while nobody asks, as a real one does.
//!
//! `GET /__sandbox/stats` says how many requests it holds (tests use it to prove that a
//! retried create created nothing new). It enforces the provider's 400 rules (amount equals the sum of the objects to the cent,
//! exactly one Main address, legal form and object type from the reference lists) and
//! answers with the provider's error shapes.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use base64::Engine;
use http::{Method, StatusCode};
use rust_decimal::Decimal;
use rust_decimal::prelude::FromPrimitive;
use serde_json::{Map, Value, json};
use slog::Logger;

use super::faults::Faults;
use super::http::{SimRequest, SimResponse, empty, json, serve};

pub const LEGAL_FORMS: &[(i64, &str)] =
    &[(1, "GmbH"), (2, "AG"), (3, "Einzelunternehmen"), (4, "GbR"), (5, "UG (haftungsbeschränkt)")];
pub const OBJECT_TYPES: &[(i64, &str)] =
    &[(1, "IT hardware"), (2, "Software"), (3, "Office equipment"), (4, "Medical equipment"), (5, "Machinery")];

#[derive(Debug, Clone, PartialEq, Eq)]
enum Scenario {
    Normal,
    Fixed(&'static str),
    Slow(u32),
    NeverReady,
    /// Moves on every this many milliseconds.
    Moves(u64),
}

impl Scenario {
    fn of(company_name: &str) -> Scenario {
        let name = company_name.to_ascii_lowercase();
        for (marker, state) in [
            ("[declined]", "Declined"),
            ("[cancelled]", "Cancelled"),
            ("[missing-info]", "MissingInfo"),
            ("[running-contract]", "RunningContract"),
            ("[contract-printed]", "ContractPrinted"),
        ] {
            if name.contains(marker) {
                return Scenario::Fixed(state);
            }
        }
        if name.contains("[never-ready]") {
            return Scenario::NeverReady;
        }
        if let Some(rest) = name.split("[moves:").nth(1)
            && let Some(seconds) = rest.split(']').next().and_then(|s| s.trim().parse::<f64>().ok())
            && seconds.is_finite()
            && seconds >= 0.0
        {
            return Scenario::Moves((seconds * 1000.0) as u64);
        }
        if let Some(rest) = name.split("[slow:").nth(1)
            && let Some(n) = rest.split(']').next().and_then(|n| n.trim().parse().ok())
        {
            return Scenario::Slow(n);
        }
        Scenario::Normal
    }

    /// The state at the `read`-th read, `elapsed` after the request was created.
    fn state_at(&self, read: u32, elapsed: std::time::Duration) -> &'static str {
        match self {
            Scenario::Moves(step) => match elapsed.as_millis() as u64 / (*step).max(1) {
                0 => "RequestToGrenke",
                1 => "ReadyToSign",
                _ => "Contracted",
            },
            other => other.state_on_read(read),
        }
    }

    fn state_on_read(&self, read: u32) -> &'static str {
        match self {
            Scenario::Moves(_) => "RequestToGrenke",
            Scenario::Normal if read >= 2 => "ReadyToSign",
            Scenario::Normal => "RequestToGrenke",
            Scenario::Fixed(state) => state,
            Scenario::Slow(n) if read >= *n => "ReadyToSign",
            Scenario::Slow(_) => "RequestToGrenke",
            Scenario::NeverReady => "ApplicationReceived",
        }
    }
}

struct StoredRequest {
    document: Map<String, Value>,
    scenario: Scenario,
    reads: u32,
    created: std::time::Instant,
    /// Set by actions (e-signature, cancel, paper); wins over the scenario once set.
    state: Option<&'static str>,
    contract: bool,
}

impl StoredRequest {
    fn current_state(&self) -> &'static str {
        self.state.unwrap_or_else(|| self.scenario.state_at(self.reads.max(1), self.created.elapsed()))
    }
}

#[derive(Default)]
struct Provider {
    requests: Mutex<HashMap<String, StoredRequest>>,
    next_request_number: Mutex<u32>,
}

pub async fn start(bind: SocketAddr, log: Logger) -> std::io::Result<SocketAddr> {
    let provider = Arc::new(Provider::default());
    serve(bind, Arc::new(Faults::default()), log, move |req| {
        let provider = provider.clone();
        async move { provider.handle(req) }
    })
    .await
}

fn validation_error(errors: Map<String, Value>) -> SimResponse {
    json(StatusCode::BAD_REQUEST, &json!({"Errors": errors, "Message": "The request is invalid."}))
}

fn not_found(financing_id: &str) -> SimResponse {
    json(
        StatusCode::NOT_FOUND,
        &json!({"Message": format!("Financing request {financing_id} not found."), "StatusCode": 404, "CorrelationId": uuid::Uuid::new_v4().to_string()}),
    )
}

fn conflict(message: &str) -> SimResponse {
    json(
        StatusCode::CONFLICT,
        &json!({"Message": message, "StatusCode": 409, "CorrelationId": uuid::Uuid::new_v4().to_string()}),
    )
}

fn decimal(value: &Value) -> Option<Decimal> {
    match value {
        Value::Number(n) => n.as_i64().map(Decimal::from).or_else(|| n.as_f64().and_then(Decimal::from_f64)),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn push_error(errors: &mut Map<String, Value>, field: &str, message: &str) {
    let entry = errors.entry(field.to_string()).or_insert_with(|| json!([]));
    if let Some(list) = entry.as_array_mut() {
        list.push(json!(message));
    }
}

/// The provider's own 400 rules for a new request.
fn validate_new_request(body: &Map<String, Value>) -> Map<String, Value> {
    let mut errors = Map::new();
    let objects = body.get("FinancingObjects").and_then(Value::as_array).cloned().unwrap_or_default();
    if objects.is_empty() {
        push_error(&mut errors, "FinancingObjects", "At least one financing object is required.");
    }
    let mut sum = Decimal::ZERO;
    for (i, object) in objects.iter().enumerate() {
        let quantity = object.get("Quantity").and_then(decimal).unwrap_or(Decimal::ZERO);
        let price = object.get("NetPricePerObject").and_then(decimal).unwrap_or(Decimal::ZERO);
        sum += quantity * price;
        let type_id = object.get("ObjectTypeId").and_then(Value::as_i64);
        if !type_id.is_some_and(|id| OBJECT_TYPES.iter().any(|(known, _)| *known == id)) {
            push_error(&mut errors, &format!("FinancingObjects[{i}].ObjectTypeId"), "Unknown object type.");
        }
    }
    let amount = body.get("FinancingAmount").and_then(decimal).unwrap_or(Decimal::ZERO);
    if amount.round_dp(2) != sum.round_dp(2) {
        push_error(
            &mut errors,
            "FinancingAmount",
            &format!("The financing amount {amount} must equal the sum of the objects {sum}."),
        );
    }
    let lessee = body.get("Lessee").and_then(Value::as_object);
    let mains = lessee
        .and_then(|l| l.get("Addresses"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter(|x| x.get("Type").and_then(Value::as_str).is_some_and(|t| t.eq_ignore_ascii_case("main")))
                .count()
        })
        .unwrap_or(0);
    if mains != 1 {
        push_error(&mut errors, "Lessee.Addresses", "Exactly one address of type Main is required.");
    }
    let legal_form = lessee.and_then(|l| l.get("LegalFormId")).and_then(Value::as_i64);
    if !legal_form.is_some_and(|id| LEGAL_FORMS.iter().any(|(known, _)| *known == id)) {
        push_error(&mut errors, "Lessee.LegalFormId", "Unknown legal form.");
    }
    errors
}

impl Provider {
    fn handle(&self, req: SimRequest) -> SimResponse {
        let segments = req.segments();
        match (&req.method, segments.as_slice()) {
            (&Method::GET, ["echo"]) => json(StatusCode::OK, &json!("echo")),
            (&Method::GET, ["__sandbox", "stats"]) => {
                json(StatusCode::OK, &json!({"requests": self.requests.lock().expect("lock").len()}))
            }
            (&Method::POST, ["basic", "v1", "calculate"]) => self.calculate(&req),
            (&Method::GET, ["basic", "v1", "legalforms"]) => json(
                StatusCode::OK,
                &json!({"Items": LEGAL_FORMS.iter().map(|(id, name)| json!({"Id": id, "Name": name, "Country": "DE"})).collect::<Vec<_>>()}),
            ),
            (&Method::GET, ["basic", "v1", "objecttypes"]) => json(
                StatusCode::OK,
                &json!({"Items": OBJECT_TYPES.iter().map(|(id, name)| json!({"Id": id, "Name": name})).collect::<Vec<_>>()}),
            ),
            (&Method::POST, ["basic", "v1", "requests"]) => self.create(&req),
            (method, ["basic", "v1", "requests", id, rest @ ..]) => self.on_request(method, id, rest, &req),
            _ => json(StatusCode::NOT_FOUND, &json!({"Message": "No such operation.", "StatusCode": 404})),
        }
    }

    fn calculate(&self, req: &SimRequest) -> SimResponse {
        let body = match req.json() {
            Ok(body) => body,
            Err(response) => return response,
        };
        let Some(amount) = body.get("FinancingAmount").and_then(decimal).filter(|a| *a > Decimal::ZERO) else {
            let mut errors = Map::new();
            push_error(&mut errors, "FinancingAmount", "The financing amount must be greater than 0.");
            return validation_error(errors);
        };
        let factors: [(i64, Decimal); 4] = [
            (48, Decimal::new(231, 2)),
            (60, Decimal::new(191, 2)),
            (72, Decimal::new(164, 2)),
            (84, Decimal::new(147, 2)),
        ];
        let period = body.get("Period").and_then(Value::as_i64);
        let items: Vec<Value> = factors
            .iter()
            .filter(|(p, _)| period.is_none_or(|wanted| wanted == *p))
            .map(|(p, factor)| {
                let instalment = (amount * factor / Decimal::ONE_HUNDRED).round_dp(2);
                json!({"Period": p, "MonthlyTotalInstalment": instalment.to_string().parse::<f64>().unwrap_or_default(),
                       "FinancingAmount": amount.to_string().parse::<f64>().unwrap_or_default(), "Currency": body.get("Currency").cloned().unwrap_or(json!("EUR"))})
            })
            .collect();
        if items.is_empty() {
            let mut errors = Map::new();
            push_error(&mut errors, "Period", "The period is not offered.");
            return validation_error(errors);
        }
        json(StatusCode::OK, &json!({"Items": items}))
    }

    fn create(&self, req: &SimRequest) -> SimResponse {
        let Ok(Value::Object(mut body)) = req.json() else {
            return validation_error(Map::from_iter([("Body".to_string(), json!(["A JSON object is required."]))]));
        };
        let errors = validate_new_request(&body);
        if !errors.is_empty() {
            return validation_error(errors);
        }
        let company = body.get("Lessee").and_then(|l| l.get("CompanyName")).and_then(Value::as_str).unwrap_or_default();
        let scenario = Scenario::of(company);
        let financing_id = uuid::Uuid::new_v4().to_string();
        let request_number = {
            let mut next = self.next_request_number.lock().expect("lock");
            *next += 1;
            33000 + *next
        };
        body.insert("FinancingId".into(), json!(financing_id));
        body.insert("RequestId".into(), json!(format!("180-{request_number}")));
        body.insert("CreatedAt".into(), json!(chrono::Utc::now().to_rfc3339()));
        self.requests.lock().expect("lock").insert(
            financing_id.clone(),
            StoredRequest {
                document: body,
                scenario,
                reads: 0,
                created: std::time::Instant::now(),
                state: None,
                contract: false,
            },
        );
        // The provider leaves RequestId out of the create answer; it appears on GET.
        json(StatusCode::CREATED, &json!({"FinancingId": financing_id, "State": "RequestToGrenke"}))
    }

    fn on_request(&self, method: &Method, id: &str, rest: &[&str], req: &SimRequest) -> SimResponse {
        let mut requests = self.requests.lock().expect("lock");
        let Some(stored) = requests.get_mut(id) else { return not_found(id) };
        let info = |stored: &StoredRequest, message: &str| json!({"FinancingId": id, "RequestId": stored.document.get("RequestId"), "State": stored.current_state(), "Message": message});
        match (method, rest) {
            (&Method::GET, []) => {
                stored.reads += 1;
                let mut document = stored.document.clone();
                document.insert("State".into(), json!(stored.current_state()));
                json(StatusCode::OK, &Value::Object(document))
            }
            (&Method::PATCH, []) | (&Method::PATCH, ["lessee"]) => {
                if matches!(stored.current_state(), "Contracted" | "Declined" | "Cancelled") {
                    return conflict(&format!("The request cannot be changed in state {}.", stored.current_state()));
                }
                let Ok(Value::Object(patch)) = req.json() else {
                    return validation_error(Map::from_iter([(
                        "Body".to_string(),
                        json!(["A JSON object is required."]),
                    )]));
                };
                if rest.is_empty() {
                    if patch.contains_key("Lessee") {
                        return validation_error(Map::from_iter([(
                            "Lessee".to_string(),
                            json!(["Patch the lessee through /lessee."]),
                        )]));
                    }
                    stored.document.extend(patch);
                    // A change invalidates a running e-signature.
                    if stored.state == Some("AwaitingCustomerSignature") {
                        stored.state = Some("ReadyToSign");
                    }
                } else {
                    let lessee = stored.document.entry("Lessee").or_insert_with(|| json!({}));
                    if let Some(lessee) = lessee.as_object_mut() {
                        lessee.extend(patch);
                    }
                }
                let mut document = stored.document.clone();
                document.insert("State".into(), json!(stored.current_state()));
                json(StatusCode::OK, &Value::Object(document))
            }
            (&Method::GET, ["e-signature", "configuration"]) => json(
                StatusCode::OK,
                &json!({"DocuSign": {"MinNumberOfCustomerSignees": 1, "MaxNumberOfCustomerSignees": 2, "MinNumberOfPartnerSignees": 0, "MaxNumberOfPartnerSignees": 1}}),
            ),
            (&Method::POST, ["e-signature"]) => {
                if stored.current_state() != "ReadyToSign" {
                    return conflict(&format!("E-signature needs state ReadyToSign, not {}.", stored.current_state()));
                }
                stored.state = Some("AwaitingCustomerSignature");
                let mut answer = info(stored, "E-signature started.");
                answer["ESignatureType"] = json!("DocuSign");
                json(StatusCode::OK, &answer)
            }
            (&Method::PUT, ["cancel-e-signature"]) => {
                stored.state = Some("ReadyToSign");
                json(StatusCode::OK, &info(stored, "E-signature cancelled."))
            }
            (&Method::PUT, ["switch-to-paper-contract"]) => {
                if matches!(stored.current_state(), "Declined" | "Cancelled") {
                    return conflict(&format!("No contract in state {}.", stored.current_state()));
                }
                stored.state = Some("ContractPrinted");
                json(StatusCode::OK, &info(stored, "Switched to a paper contract."))
            }
            (&Method::POST, ["contractdocument"]) => {
                if stored.contract {
                    return conflict("The contract document exists already.");
                }
                stored.contract = true;
                empty(StatusCode::CREATED)
            }
            (&Method::GET, ["contractdocument"]) => {
                stored.contract = true;
                let pdf = super::pdf::one_page(&format!("Leasing contract {id}"));
                json(
                    StatusCode::OK,
                    &json!({"Content": base64::engine::general_purpose::STANDARD.encode(pdf), "FileName": format!("{id}.pdf")}),
                )
            }
            (&Method::POST, ["contractdocument", "link"]) => {
                let expires = chrono::Utc::now() + chrono::Duration::hours(1);
                json(
                    StatusCode::OK,
                    &json!({"Url": format!("https://documents.sandbox.invalid/contracts/{id}.pdf?token={}", uuid::Uuid::new_v4().simple()), "ExpiresAt": expires.to_rfc3339()}),
                )
            }
            _ => json(StatusCode::NOT_FOUND, &json!({"Message": "No such operation.", "StatusCode": 404})),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_follow_the_company_name_marker() {
        assert_eq!(Scenario::of("ACME GmbH"), Scenario::Normal);
        assert_eq!(Scenario::of("ACME [Declined]"), Scenario::Fixed("Declined"));
        assert_eq!(Scenario::of("ACME [slow:5]"), Scenario::Slow(5));
        assert_eq!(Scenario::of("ACME [never-ready]"), Scenario::NeverReady);
        assert_eq!(Scenario::Normal.state_on_read(1), "RequestToGrenke");
        assert_eq!(Scenario::Normal.state_on_read(2), "ReadyToSign");
        assert_eq!(Scenario::Slow(3).state_on_read(2), "RequestToGrenke");
        assert_eq!(Scenario::Slow(3).state_on_read(3), "ReadyToSign");
        let moves = Scenario::of("ACME [moves:1.5]");
        assert_eq!(moves, Scenario::Moves(1500));
        let at = |ms| moves.state_at(1, std::time::Duration::from_millis(ms));
        assert_eq!(
            (at(0), at(1499), at(1500), at(3000)),
            ("RequestToGrenke", "RequestToGrenke", "ReadyToSign", "Contracted")
        );
    }

    #[test]
    fn provider_rules_name_each_bad_field() {
        let body = json!({
            "FinancingAmount": 100.0,
            "FinancingObjects": [{"Quantity": 2, "NetPricePerObject": 49.99, "ObjectTypeId": 99}],
            "Lessee": {"CompanyName": "X", "LegalFormId": 42, "Addresses": [{"Type": "Billing"}]}
        });
        let errors = validate_new_request(body.as_object().unwrap());
        for field in ["FinancingAmount", "FinancingObjects[0].ObjectTypeId", "Lessee.Addresses", "Lessee.LegalFormId"] {
            assert!(errors.contains_key(field), "{field}: {errors:?}");
        }
        let good = json!({
            "FinancingAmount": 99.98,
            "FinancingObjects": [{"Quantity": 2, "NetPricePerObject": 49.99, "ObjectTypeId": 1}],
            "Lessee": {"CompanyName": "X", "LegalFormId": 1, "Addresses": [{"Type": "main"}]}
        });
        assert!(validate_new_request(good.as_object().unwrap()).is_empty());
    }
}
