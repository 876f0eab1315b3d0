/// The committed document must equal the one the code generates (`cargo xtask openapi`).
#[test]
fn committed_document_is_up_to_date() {
    let committed = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/spec/openapi.json"))
        .expect("spec/openapi.json exists");
    let generated = super::document();
    assert!(committed == generated, "spec/openapi.json is stale: run `cargo xtask openapi` and commit the result");
}

/// Every operation whose endpoint takes a `BearerToken` declares `bearerAuth` and the 401
/// answer, and no longer lists the `Authorization` header it was derived from; the
/// operations without one declare neither.
#[test]
fn security_follows_the_bearer_token_parameter() {
    let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
    let public = ["login", "healthz", "readyz", "metrics", "erp_webhook_get", "erp_webhook_post"];
    let mut guarded = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let op_id = op["operationId"].as_str().unwrap();
            let parameters = op["parameters"].as_array().into_iter().flatten();
            assert!(
                parameters.clone().all(|p| !super::security::is_authorization_parameter(p)),
                "{method} {path} lists the Authorization header"
            );
            assert!(!op.get("parameters").is_some_and(|p| p == &serde_json::json!([])), "{method} {path}");
            if public.contains(&op_id) {
                let security = op.get("security");
                assert!(security.is_none_or(|s| s[0].get("bearerAuth").is_none()), "{method} {path}");
                continue;
            }
            assert!(path.starts_with("/api/v1/"), "{method} {path} is guarded");
            assert_eq!(op["security"], serde_json::json!([{"bearerAuth": []}]), "{method} {path}");
            assert_eq!(
                op["responses"]["401"],
                serde_json::json!({"$ref": "#/components/responses/Unauthenticated"}),
                "{method} {path}"
            );
            guarded += 1;
        }
    }
    // The loop above checked each one; this, that the document has them at all.
    assert!(guarded > 6 * generated::fieldreport::ENTITIES.len(), "only {guarded} guarded operations");
}

/// Each guarded operation names the ability its token needs, by area and (for the mirror)
/// by reading or writing: as `x-ability`, in its description, with the 403 answer.
#[test]
fn abilities_follow_the_bearer_token_s_need() {
    let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
    let tools = [
        "/api/v1/fieldreport/show",
        "/api/v1/fieldreport/sync",
        "/api/v1/fieldreport/setup",
        "/api/v1/fieldreport/post",
    ];
    let mut counted = std::collections::BTreeMap::<String, usize>::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if op.get("security") != Some(&serde_json::json!([{"bearerAuth": []}])) {
                assert!(op.get("x-ability").is_none(), "{method} {path}");
                continue;
            }
            let expected = if ["/api/v1/user", "/api/v1/logout"].contains(&path.as_str()) {
                None
            } else if path.starts_with("/api/v1/leasing") {
                Some("leasing")
            } else if path.starts_with("/api/v1/erp") {
                Some("erp")
            } else if tools.iter().any(|tool| path == tool || path.starts_with(&format!("{tool}/"))) {
                Some("fieldreport:tools")
            } else if path.starts_with("/api/v1/fieldreport/") && method == "get" {
                Some("fieldreport:read")
            } else if path.starts_with("/api/v1/fieldreport/") {
                Some("fieldreport:write")
            } else if path.starts_with("/api/v1/jobs") {
                Some("jobs")
            } else {
                panic!("{method} {path}: which ability?")
            };
            assert_eq!(op["x-ability"].as_str(), expected, "{method} {path}");
            if let Some(ability) = expected {
                let description = op["description"].as_str().unwrap();
                assert!(description.contains(&format!("ability `{ability}`")), "{method} {path}: {description}");
                let forbidden = &op["responses"]["403"];
                if op["operationId"] == "jobs_cancel" {
                    // Its own 403 names both reasons: the ability, and another user's job.
                    let text = forbidden["description"].as_str().unwrap();
                    assert!(text.contains("missing_ability") && text.contains("not_job_owner"), "{text}");
                } else {
                    assert_eq!(forbidden["$ref"], "#/components/responses/MissingAbility", "{method} {path}");
                }
                *counted.entry(ability.to_string()).or_default() += 1;
            }
        }
    }
    for ability in ["leasing", "erp", "fieldreport:tools", "fieldreport:read", "fieldreport:write"] {
        assert!(counted.get(ability).is_some_and(|n| *n > 0), "no operation needs {ability}: {counted:?}");
    }
}

/// dropshot's own document states the token's header on exactly the guarded operations,
/// the per-entity field-report ones among them.
#[test]
fn guarded_endpoints_declare_the_authorization_header() {
    let api = crate::api::description();
    let version = semver::Version::parse("0.0.0").unwrap();
    let raw = api.openapi("integration-service", version).json().unwrap();
    let takes_token = |path: &str, method: &str| {
        raw["paths"][path][method]["parameters"]
            .as_array()
            .is_some_and(|ps| ps.iter().any(super::security::is_authorization_parameter))
    };
    assert!(takes_token("/api/v1/user", "get"));
    assert!(takes_token("/api/v1/leasing/calculate", "get"));
    assert!(takes_token("/api/v1/leasing/{financingId}/wait-ready-to-sign", "get"));
    assert!(takes_token("/api/v1/fieldreport/companies", "get"));
    assert!(takes_token("/api/v1/fieldreport/companies", "post"));
    assert!(takes_token("/api/v1/fieldreport/companies/{record}", "delete"));
    assert!(!takes_token("/api/v1/login", "post"));
    assert!(!takes_token("/api/v1/erp/webhooks", "post"));
    assert!(!takes_token("/metrics", "get"));
    assert!(!takes_token("/healthz", "get"));
}

/// Every object of the document with its JSON pointer.
fn schema_objects<'a>(
    value: &'a serde_json::Value,
    at: String,
    found: &mut Vec<(String, &'a serde_json::Map<String, serde_json::Value>)>,
) {
    match value {
        serde_json::Value::Object(object) => {
            found.push((at.clone(), object));
            let token = |k: &str| k.replace('~', "~0").replace('/', "~1");
            object.iter().for_each(|(k, v)| schema_objects(v, format!("{at}/{}", token(k)), found));
        }
        serde_json::Value::Array(items) => {
            items.iter().enumerate().for_each(|(i, v)| schema_objects(v, format!("{at}/{i}"), found))
        }
        _ => {}
    }
}

/// Optional values are plain to every generator: `nullable` beside a `type`, or beside an
/// `allOf` of one `$ref` (an optional reference); never an `{enum: [null]}` alternative.
#[test]
fn optional_values_are_nullable_not_null_enums() {
    let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
    let mut objects = Vec::new();
    schema_objects(&doc, String::new(), &mut objects);
    let mut references = 0;
    for (at, object) in objects {
        assert!(object.get("enum") != Some(&serde_json::json!([null])), "enum: [null] at {at}");
        if object.get("nullable") != Some(&serde_json::Value::Bool(true)) || object.contains_key("type") {
            continue;
        }
        let all = object.get("allOf").and_then(|all| all.as_array());
        let one_reference = all.is_some_and(|all| all.len() == 1 && all[0].get("$ref").is_some());
        assert!(one_reference, "nullable without a type or one reference at {at}");
        assert!(!object.contains_key("oneOf") && !object.contains_key("anyOf"), "{at}");
        references += 1;
    }
    assert!(references > 100, "only {references} optional references");
    let billing = &doc["components"]["schemas"]["Company"]["properties"]["BillingAddress"];
    assert_eq!(billing["allOf"], serde_json::json!([{"$ref": "#/components/schemas/Location"}]));
    assert_eq!(billing["nullable"], true);
}

/// The timestamps of the API are typed as such: every `*_at` or `*_since` string (a
/// subscription's `failing_since`) is `format: date-time` (the integration tests assert the
/// format on every answer they receive).
#[test]
fn timestamps_are_typed_date_time() {
    let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
    let mut objects = Vec::new();
    schema_objects(&doc, String::new(), &mut objects);
    let (mut timestamps, mut since) = (0, 0);
    for (at, object) in objects {
        for (name, property) in object.get("properties").and_then(|p| p.as_object()).into_iter().flatten() {
            if (name.ends_with("_at") || name.ends_with("_since")) && property["type"] == "string" {
                assert_eq!(property["format"], "date-time", "{at}/properties/{name}");
                timestamps += 1;
                since += usize::from(name.ends_with("_since"));
            }
        }
    }
    assert!(timestamps >= 17, "only {timestamps} timestamps");
    assert!(since >= 2, "failing_since of Subscription and SubscriptionWithSecret: {since}");
}

/// What a generator reads without guessing: only OpenAPI's own integer formats, each integer
/// with its bounds, every enum
/// described, every answer's schema named (a `$ref`), no two schemas alike, a `servers`
/// entry, and no two operationIds that differ only by a plural `s`.
#[test]
fn the_document_is_plain_to_generators() {
    let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
    let mut objects = Vec::new();
    schema_objects(&doc, String::new(), &mut objects);
    for (at, object) in &objects {
        // Headers too (`Retry-After`): docs/clients.md promises every integer its bounds.
        if object.get("type") == Some(&serde_json::json!("integer")) && !at.contains("/example") {
            let format = object.get("format").and_then(|f| f.as_str());
            assert!(matches!(format, Some("int32") | Some("int64")), "{at}: format {format:?}");
            let bounded = object.contains_key("minimum") && object.contains_key("maximum");
            assert!(bounded, "{at}: an integer without the bounds of its type");
        }
        if object.contains_key("enum") && !at.contains("/example") {
            // A parameter's schema is described by the parameter.
            let owner = match at.strip_suffix("/schema") {
                Some(parameter) if parameter.contains("/parameters/") => doc.pointer(parameter).unwrap(),
                _ => &serde_json::Value::Object((*object).clone()),
            };
            assert!(owner.get("description").is_some_and(|d| d != ""), "{at}: an enum without description");
        }
    }
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for (a, first) in schemas {
        for (b, second) in schemas {
            assert!(a == b || first != second, "{a} and {b} are the same schema");
        }
    }
    let mut confusable = std::collections::BTreeMap::<String, Vec<String>>::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let op_id = op["operationId"].as_str().unwrap();
            let singular: Vec<&str> = op_id.split('_').map(|part| part.trim_end_matches('s')).collect();
            confusable.entry(singular.join("_")).or_default().push(op_id.to_string());
            for (status, response) in op["responses"].as_object().unwrap() {
                for (media, content) in response["content"].as_object().into_iter().flatten() {
                    if media == "application/json" {
                        assert!(content["schema"].get("$ref").is_some(), "{method} {path} {status}: unnamed schema");
                    }
                }
            }
        }
    }
    for ids in confusable.values() {
        assert!(ids.len() == 1, "operationIds that differ only by an s: {ids:?}");
    }
    assert!(doc["servers"][0]["url"].is_string());
}

/// openapi-generator's `go` writes, for every model `X`, the constructors `NewX` and
/// `NewXWithDefaults` and the type `NullableX`: a schema of one of those names (`NewJob`
/// beside `Job`) is declared twice in the Go package, which then does not compile.
#[test]
fn no_schema_is_named_as_a_go_helper_of_another() {
    let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let mut clashes = Vec::new();
    for name in schemas.keys() {
        for helper in [format!("New{name}"), format!("New{name}WithDefaults"), format!("Nullable{name}")] {
            if schemas.contains_key(&helper) {
                clashes.push(format!("{helper} (beside {name})"));
            }
        }
    }
    assert!(clashes.is_empty(), "schemas named as openapi-generator's Go helpers of another: {clashes:?}");
}

/// Each event type a subscription can receive has a schema of its own (its `type` allows
/// that event's name only) and is posted as a callback of the subscription's create.
#[test]
fn each_event_type_is_a_callback_of_the_subscription() {
    let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
    let create = &doc["paths"]["/api/v1/leasing/subscriptions"]["post"];
    assert_eq!(create["operationId"], "leasing_subscription_create");
    let callbacks = create["callbacks"].as_object().expect("the create has callbacks");
    for event_type in crate::leasing::watch::event::EVENT_TYPES {
        let posted = callbacks.values().find_map(|callback| {
            let body = &callback["{$request.body#/url}"]["post"]["requestBody"]["content"]["application/json"];
            let name = body["schema"]["$ref"].as_str()?.trim_start_matches("#/components/schemas/");
            let schema = &doc["components"]["schemas"][name];
            (schema["properties"]["type"]["enum"] == serde_json::json!([event_type])).then_some(name)
        });
        assert!(posted.is_some(), "no callback posts a schema of its own for {event_type}");
    }
}

/// A record read and a record written have one identity: the `Id` and `Version` of each
/// set's record schema (the answers of its list and show) are those of its update body. The
/// write bodies state the `ExternalId` length the service checks (422 beyond).
#[test]
fn records_read_and_written_have_one_identity() {
    let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
    let schemas = &doc["components"]["schemas"];
    let kind = |schema: &serde_json::Value| {
        (schema["type"].clone(), schema["format"].clone(), schema.get("nullable").cloned())
    };
    for entity in generated::fieldreport::ENTITIES {
        let show = &doc["paths"][format!("/api/v1/fieldreport/{}/{{record}}", entity.route)]["get"];
        let read = show["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].as_str().unwrap();
        let read = &schemas[read.trim_start_matches("#/components/schemas/")];
        let update = &schemas[format!("{}Update", entity.set)];
        for field in ["Id", "Version"] {
            let (read, written) = (&read["properties"][field], &update["properties"][field]);
            assert_eq!(kind(read), kind(written), "{}: {field} read {read} and written {written}", entity.set);
        }
        assert_eq!(read["properties"]["Id"]["type"], "string", "{}", entity.set);
        for body in [update, &schemas[format!("New{}", entity.set)]] {
            let max = &body["properties"]["ExternalId"]["maxLength"];
            assert_eq!(max, crate::fieldreport::service::MAX_ID_LEN, "{}: ExternalId", entity.set);
        }
    }
}

/// The login body states the lengths the service checks (422 beyond), in characters as both
/// count them: a client's validator refuses what the service would, and nothing else.
#[test]
fn the_login_body_states_the_lengths_checked() {
    let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
    let login = &doc["components"]["schemas"]["LoginRequest"]["properties"];
    assert_eq!(login["email"]["maxLength"], crate::auth::MAX_EMAIL_LEN, "{login}");
    assert_eq!(login["password"]["maxLength"], crate::auth::MAX_PASSWORD_CHARS, "{login}");
}

/// What client generators and strict validators need of every operation and schema: a
/// description, snake-case operationIds, an example of each request body, the `4XX` range,
/// and `x-request-id` on each answer.
#[test]
fn every_operation_is_described_for_generators() {
    let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
    let header = serde_json::json!({"$ref": "#/components/headers/RequestId"});
    for (name, response) in doc["components"]["responses"].as_object().unwrap() {
        assert_eq!(response["headers"]["x-request-id"], header, "components/responses/{name}");
    }
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let op_id = op["operationId"].as_str().unwrap();
            assert!(op_id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'), "{op_id}");
            let description = op["description"].as_str().unwrap_or_default();
            assert!(!description.is_empty() && !description.starts_with("Needs a token"), "{op_id}: no description");
            assert!(op["responses"].get("4XX").is_some(), "{method} {path}: no 4XX");
            for (status, response) in op["responses"].as_object().unwrap() {
                if response.get("$ref").is_none() {
                    assert_eq!(response["headers"]["x-request-id"], header, "{op_id} {status}");
                }
            }
            if let Some(body) = op.get("requestBody") {
                let content = &body["content"]["application/json"];
                assert!(content.get("example").is_some(), "{op_id}: no example of its request body");
            }
        }
    }
}

/// The `error_code`s a response allows: its schema's `error_code` enum, following `$ref`s
/// and `allOf`; `None` when any code is allowed (plain `ApiError`).
fn allowed_codes(doc: &serde_json::Value, value: &serde_json::Value) -> Option<Vec<String>> {
    if let Some(reference) = value["$ref"].as_str() {
        return allowed_codes(doc, doc.pointer(&reference[1..]).expect("a $ref resolves"));
    }
    if let Some(codes) = value["properties"]["error_code"]["enum"].as_array() {
        return Some(codes.iter().map(|c| c.as_str().unwrap().to_string()).collect());
    }
    let schema = &value["content"]["application/json"]["schema"];
    if !schema.is_null() {
        return allowed_codes(doc, schema);
    }
    value["allOf"].as_array().into_iter().flatten().find_map(|part| allowed_codes(doc, part))
}

/// Every answer an operation's error types can give (each variant of each, through the
/// service's one mapping) is declared by the operation: its own status (not only the `4XX`
/// range, which some generators drop), and its `error_code` in that status's enum. And every operation that meets
/// the database declares 500 `internal_error`.
#[test]
fn error_answers_follow_the_error_types() {
    use super::answers::{self, Source};
    let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let op_id = op["operationId"].as_str().unwrap();
            let tags: Vec<String> =
                op["tags"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect();
            let guarded = op.get("security") == Some(&serde_json::json!([{"bearerAuth": []}]));
            let sources = answers::sources(op_id, &tags, guarded);
            let responses = &op["responses"];
            for (status, code) in answers::answers(&sources) {
                // A token lacks an ability only where one is needed.
                if (status, code.as_str()) == (403, "missing_ability") && op.get("x-ability").is_none() {
                    continue;
                }
                let response = responses.get(status.to_string());
                let response = response.unwrap_or_else(|| panic!("{method} {path}: {status} `{code}` undeclared"));
                if let Some(allowed) = allowed_codes(&doc, response) {
                    assert!(allowed.contains(&code), "{method} {path}: {status} `{code}` not in {allowed:?}");
                }
                checked += 1;
            }
            let meets_the_database = sources.iter().any(|s| *s != Source::Probe);
            if meets_the_database {
                let allowed = allowed_codes(&doc, &responses["500"]);
                assert!(
                    allowed.is_some_and(|codes| codes.iter().any(|c| c == "internal_error")),
                    "{method} {path}: no 500 `internal_error`"
                );
            }
        }
    }
    assert!(checked > 1000, "only {checked} answers checked");
    let update = &doc["paths"]["/api/v1/erp/update/{model}"]["get"]["responses"]["503"];
    assert!(allowed_codes(&doc, update).unwrap().contains(&"interrupted".to_string()));
}

/// No operation declares its server errors by a range (docs/api.md: "there is no `5XX`
/// catch-all"): a generator that drops ranges would not know them, and a range says nothing
/// of the `error_code`s.
#[test]
fn no_operation_declares_server_errors_by_a_range() {
    let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let responses = op["responses"].as_object().unwrap();
            assert!(!responses.contains_key("5XX"), "{method} {path} declares 5XX: {:?}", responses.keys());
        }
    }
    let metrics = &doc["paths"]["/metrics"]["get"]["responses"];
    let internal = allowed_codes(&doc, &metrics["500"]).expect("/metrics declares 500 with its codes");
    assert_eq!(internal, ["internal_error"]);
}

/// Each server error's description names every `error_code` its enum allows.
#[test]
fn server_errors_describe_their_codes() {
    let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
    let schemas = &doc["components"]["schemas"];
    let names = super::errors::SERVER_ERRORS.iter().map(|(name, _, _)| *name);
    let flow = ["LeasingFlowFailure", "LeasingFlowRetryConflict", "LeasingFlowInvalid", "LeasingFlowUnavailable"];
    for name in names.chain(flow) {
        // The flow's failure has "the causes of `LeasingFailure`", described there.
        let described_in = if name == "LeasingFlowFailure" { "LeasingFailure" } else { name };
        let description = schemas[described_in]["description"].as_str();
        let description = description.unwrap_or_else(|| panic!("{described_in} is not stated"));
        for code in allowed_codes(&doc, &schemas[name]).unwrap() {
            assert!(description.contains(&format!("`{code}`")), "{name} does not describe `{code}`: {description}");
        }
    }
}

#[test]
fn guarded_operations_declare_bearer_and_401() {
    let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
    let user = &doc["paths"]["/api/v1/user"]["get"];
    assert_eq!(user["security"][0]["bearerAuth"], serde_json::json!([]));
    assert!(user["responses"]["401"].is_object());
    let login = &doc["paths"]["/api/v1/login"]["post"];
    assert!(login.get("security").is_none());
    let metrics = &doc["paths"]["/metrics"]["get"];
    assert_eq!(metrics["security"], serde_json::json!([{"metricsToken": []}, {}]));
    assert!(metrics["responses"]["200"]["content"]["text/plain; version=0.0.4; charset=utf-8"].is_object());
    assert!(login["responses"]["429"].is_object());
    for (_, item) in doc["paths"].as_object().unwrap() {
        for (_, op) in item.as_object().unwrap() {
            assert!(op["summary"].as_str().is_some_and(|s| !s.is_empty()), "{op}");
            assert!(op["tags"].as_array().is_some_and(|t| !t.is_empty()), "{op}");
        }
    }
}

/// The ERP webhook routes declare both forms the secret may take, `?secret=` and the
/// `X-Webhook-Secret` header, each optional, so that a generated client can send either.
#[test]
fn webhook_routes_declare_both_forms_of_the_secret() {
    let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
    for method in ["get", "post"] {
        let parameters = doc["paths"]["/api/v1/erp/webhooks"][method]["parameters"].as_array().unwrap();
        let declared = |place: &str, name: &str| {
            parameters.iter().any(|p| p["in"] == place && p["name"] == name && p["required"] != true)
        };
        assert!(declared("query", "secret"), "{method}: ?secret= is not declared as optional");
        assert!(
            declared("header", crate::api::erp::webhooks::SECRET_HEADER),
            "{method}: X-Webhook-Secret is not declared as an optional header"
        );
    }
}

/// The operations whose answers include the refusals of an `Idempotency-Key` are the ones that
/// take the header.
#[test]
fn idempotent_operations_are_the_ones_taking_the_key() {
    let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
    let mut taking = Vec::new();
    for item in doc["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            let parameters = op["parameters"].as_array().into_iter().flatten();
            if parameters.into_iter().any(|p| p["in"] == "header" && p["name"] == "idempotency-key") {
                taking.push(op["operationId"].as_str().unwrap());
            }
        }
    }
    taking.sort();
    assert_eq!(taking, super::answers::IDEMPOTENT_OPERATIONS);
}
