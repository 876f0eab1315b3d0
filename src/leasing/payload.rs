//! Financing request payloads as JSON documents: validation before the provider is called,
//! and defaults for fields the provider leaves out. Unknown fields pass through untouched.

use rust_decimal::Decimal;
use rust_decimal::prelude::FromPrimitive;
use serde_json::{Map, Value, json};

use crate::vocabulary::field_errors::FieldErrors;

fn add(errors: &mut FieldErrors, field: &str, message: &str) {
    errors.entry(field.to_string()).or_default().push(message.to_string());
}

/// The payload as a JSON object, or the error naming `body` with `message`.
fn object<'a>(payload: &'a Value, message: &str) -> Result<&'a Map<String, Value>, FieldErrors> {
    payload.as_object().ok_or_else(|| FieldErrors::from([("body".to_string(), vec![message.to_string()])]))
}

/// The smallest financing amount: a cent.
pub const MIN_AMOUNT: f64 = 0.01;
/// The largest amount or price the service takes (a trillion): well inside `Decimal`, whose
/// sums must not overflow.
pub const MAX_AMOUNT: f64 = 1_000_000_000_000.0;
const AMOUNT_RULE: &str = "The financing amount must be a number from 0.01 to 1000000000000.";

fn min_amount() -> Decimal {
    Decimal::new(1, 2)
}

/// A number as a decimal, if it is within ±[`MAX_AMOUNT`].
fn decimal(value: &Value) -> Option<Decimal> {
    let number = match value {
        Value::Number(n) => n.as_i64().map(Decimal::from).or_else(|| n.as_f64().and_then(Decimal::from_f64)),
        _ => None,
    }?;
    (number.abs() <= Decimal::from_f64(MAX_AMOUNT).expect("a trillion is a decimal")).then_some(number)
}

fn non_empty_str<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    object.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty())
}

/// The longest lease accepted, in months (20 years).
pub const MAX_PERIOD_MONTHS: u64 = 240;
const PERIOD_RULE: &str = "The period must be a whole number of months from 1 to 240.";

/// A mailbox as RFC 5321 writes it, in the form mail systems take: `local@domain`, the local
/// part dot-separated atoms of ASCII letters, digits and ``!#$%&'*+-/=?^_`{|}~`` (at most 64
/// characters), the domain dot-separated labels of ASCII letters, digits and inner hyphens, at
/// least two; at most 254 characters. The document types the lessee's `Email` `format: email`,
/// so nothing else is taken or answered there.
fn is_email(email: &str) -> bool {
    let atom =
        |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-/=?^_`{|}~".contains(&b));
    let label = |s: &str| {
        !s.is_empty()
            && s.len() <= 63
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !s.starts_with('-')
            && !s.ends_with('-')
    };
    email.len() <= 254
        && email.split_once('@').is_some_and(|(local, domain)| {
            local.len() <= 64 && local.split('.').all(atom) && domain.contains('.') && domain.split('.').all(label)
        })
}

/// Checks a create payload: FinancingAmount from a cent to a trillion, Period, ProductType, Lessee.CompanyName,
/// exactly one Main address, at least one FinancingObject, and the amount equal to the sum of
/// Quantity × NetPricePerObject to the cent. Names every bad field.
pub fn validate_create(payload: &Value) -> Result<(), FieldErrors> {
    let request = object(payload, "The request payload must be a JSON object.")?;
    let mut errors = FieldErrors::new();
    let amount = request.get("FinancingAmount").and_then(decimal);
    match amount {
        Some(a) if a >= min_amount() => {}
        _ => add(&mut errors, "FinancingAmount", AMOUNT_RULE),
    }
    if request.get("Period").and_then(Value::as_u64).is_none_or(|p| !(1..=MAX_PERIOD_MONTHS).contains(&p)) {
        add(&mut errors, "Period", PERIOD_RULE);
    }
    if non_empty_str(request, "ProductType").is_none() {
        add(&mut errors, "ProductType", "The product type is required, e.g. ClassicLease.");
    }
    match request.get("Lessee").and_then(Value::as_object) {
        None => add(&mut errors, "Lessee", "The lessee is required."),
        Some(lessee) => {
            if non_empty_str(lessee, "CompanyName").is_none() {
                add(&mut errors, "Lessee.CompanyName", "The lessee's company name is required.");
            }
            if lessee.get("Email").is_some_and(|email| !email.is_null() && !email.as_str().is_some_and(is_email)) {
                add(&mut errors, "Lessee.Email", "The lessee's email must be a valid email address.");
            }
            let mains = lessee
                .get("Addresses")
                .and_then(Value::as_array)
                .map(|addresses| {
                    addresses
                        .iter()
                        .filter(|a| {
                            a.get("Type").and_then(Value::as_str).is_some_and(|t| t.eq_ignore_ascii_case("main"))
                        })
                        .count()
                })
                .unwrap_or(0);
            if mains != 1 {
                add(&mut errors, "Lessee.Addresses", "Exactly one address of type Main is required.");
            }
        }
    }
    let objects = request.get("FinancingObjects").and_then(Value::as_array);
    let mut sum = Some(Decimal::ZERO);
    match objects {
        None => add(&mut errors, "FinancingObjects", "At least one financing object is required."),
        Some(list) if list.is_empty() => {
            add(&mut errors, "FinancingObjects", "At least one financing object is required.")
        }
        Some(list) => {
            for (i, object) in list.iter().enumerate() {
                let quantity =
                    object.get("Quantity").and_then(Value::as_u64).filter(|q| *q > 0 && *q <= i32::MAX as u64);
                if quantity.is_none() {
                    add(
                        &mut errors,
                        &format!("FinancingObjects.{i}.Quantity"),
                        "The quantity must be a whole number greater than 0.",
                    );
                }
                let price = object.get("NetPricePerObject").and_then(decimal).filter(|p| *p >= Decimal::ZERO);
                if price.is_none() {
                    add(
                        &mut errors,
                        &format!("FinancingObjects.{i}.NetPricePerObject"),
                        "The net price must be a number from 0 to 1000000000000.",
                    );
                }
                sum = match (sum, quantity, price) {
                    (Some(s), Some(q), Some(p)) => Some(s + Decimal::from(q) * p),
                    _ => None,
                };
            }
        }
    }
    if let (Some(amount), Some(sum)) = (amount, sum)
        && amount > Decimal::ZERO
        && objects.is_some_and(|o| !o.is_empty())
        && amount.round_dp(2) != sum.round_dp(2)
    {
        add(
            &mut errors,
            "FinancingAmount",
            &format!(
                "The financing amount {:.2} must equal the sum of quantity × net price of the objects, {:.2}.",
                amount.round_dp(2),
                sum.round_dp(2)
            ),
        );
    }
    if errors.is_empty() { Ok(()) } else { Err(errors) }
}

/// Checks a lessee patch: its `Email`, when given, is an email address (it is answered back as
/// the lessee's, which the document says is one).
pub fn validate_lessee_patch(payload: &Value) -> Result<(), FieldErrors> {
    let patch = object(payload, "The patch must be a JSON object.")?;
    let mut errors = FieldErrors::new();
    if patch.get("Email").is_some_and(|email| !email.is_null() && !email.as_str().is_some_and(is_email)) {
        add(&mut errors, "Email", "The email must be a valid email address.");
    }
    if errors.is_empty() { Ok(()) } else { Err(errors) }
}

/// Checks the fields of a request patch that are present: `Period` a whole number of months
/// greater than 0, `FinancingAmount` from a cent to a trillion, each financing object's
/// `Quantity` a whole number greater than 0 and `NetPricePerObject` from 0 to a trillion. The provider would store
/// anything; the service's document promises these bounds in its answers.
pub fn validate_patch(payload: &Value) -> Result<(), FieldErrors> {
    let patch = object(payload, "The patch must be a JSON object.")?;
    let mut errors = FieldErrors::new();
    let present = |key: &str| patch.get(key).filter(|v| !v.is_null());
    if present("Period").is_some_and(|p| p.as_u64().is_none_or(|p| !(1..=MAX_PERIOD_MONTHS).contains(&p))) {
        add(&mut errors, "Period", PERIOD_RULE);
    }
    if present("FinancingAmount").is_some_and(|a| decimal(a).is_none_or(|a| a < min_amount())) {
        add(&mut errors, "FinancingAmount", AMOUNT_RULE);
    }
    for (i, object) in present("FinancingObjects").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let field = |key: &str| object.get(key).filter(|v| !v.is_null());
        if field("Quantity").is_some_and(|q| q.as_u64().is_none_or(|q| q == 0 || q > i32::MAX as u64)) {
            add(
                &mut errors,
                &format!("FinancingObjects.{i}.Quantity"),
                "The quantity must be a whole number greater than 0.",
            );
        }
        if field("NetPricePerObject").is_some_and(|p| decimal(p).is_none_or(|p| p < Decimal::ZERO)) {
            add(
                &mut errors,
                &format!("FinancingObjects.{i}.NetPricePerObject"),
                "The net price must be a number from 0 to 1000000000000.",
            );
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(errors) }
}

/// Fills the fields of a request response that the provider left out (strings "", numbers 0,
/// objects {}, lists []), keeping every field it sent. The lessee's `Email` is the exception:
/// the document states it as an email address or null, so a missing or empty one, or one that
/// is not a mailbox ([`is_email`]; a request made elsewhere may hold anything), is null.
pub fn with_defaults(response: Value) -> Value {
    use Empty::{Bool, List, Number, Object, Text};
    const REQUEST: &[(&str, Empty)] = &[
        ("FinancingId", Text),
        ("RequestId", Text),
        ("State", Text),
        ("ProductType", Text),
        ("FinancingAmount", Number),
        ("Period", Number),
        ("PaymentFrequency", Text),
        ("PaymentMethod", Text),
        ("Currency", Text),
        ("ResidualValue", Number),
        ("HasRepurchase", Bool),
        ("Lessee", Object),
        ("FinancingObjects", List),
    ];
    const LESSEE: &[(&str, Empty)] = &[
        ("CompanyName", Text),
        ("ExternalId", Text),
        ("LegalFormId", Number),
        ("Addresses", List),
        ("Telephones", List),
    ];
    let mut response = match response {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    fill(&mut response, REQUEST);
    if let Some(Value::Object(lessee)) = response.get_mut("Lessee") {
        fill(lessee, LESSEE);
        if lessee.get("Email").is_none_or(|email| !email.as_str().is_some_and(is_email)) {
            lessee.insert("Email".to_string(), Value::Null);
        }
    }
    Value::Object(response)
}

/// The empty value of a field's type.
#[derive(Clone, Copy)]
enum Empty {
    Text,
    Number,
    Bool,
    Object,
    List,
}

impl Empty {
    fn value(self) -> Value {
        match self {
            Empty::Text => json!(""),
            Empty::Number => json!(0),
            Empty::Bool => json!(false),
            Empty::Object => json!({}),
            Empty::List => json!([]),
        }
    }
}

fn fill(object: &mut Map<String, Value>, defaults: &[(&str, Empty)]) {
    for (key, empty) in defaults {
        if object.get(*key).is_none_or(Value::is_null) {
            object.insert(key.to_string(), empty.value());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid() -> Value {
        json!({
            "ProductType": "ClassicLease", "FinancingAmount": 2598.0, "Period": 48,
            "Lessee": {"CompanyName": "ACME GmbH", "Addresses": [{"Type": "main"}]},
            "FinancingObjects": [{"Quantity": 2, "NetPricePerObject": 1299.0}],
            "SomethingNew": {"kept": true}
        })
    }

    #[test]
    fn a_valid_payload_passes() {
        assert_eq!(validate_create(&valid()), Ok(()));
    }

    #[test]
    fn every_bad_field_is_named() {
        let payload = json!({
            "FinancingAmount": 0, "Lessee": {"Addresses": [{"Type": "Main"}, {"Type": "main"}]},
            "FinancingObjects": [{"Quantity": 0, "NetPricePerObject": -1}]
        });
        let errors = validate_create(&payload).unwrap_err();
        for field in [
            "FinancingAmount",
            "Period",
            "ProductType",
            "Lessee.CompanyName",
            "Lessee.Addresses",
            "FinancingObjects.0.Quantity",
            "FinancingObjects.0.NetPricePerObject",
        ] {
            assert!(errors.contains_key(field), "{field}: {errors:?}");
        }
    }

    #[test]
    fn the_period_is_bounded_and_the_lessees_email_checked() {
        for (period, valid_period) in [(1, true), (240, true), (241, false), (2_147_483_647, false)] {
            let mut payload = valid();
            payload["Period"] = json!(period);
            assert_eq!(validate_create(&payload).is_ok(), valid_period, "Period {period}");
        }
        for (email, valid_email) in
            [(json!("a@b.example"), true), (json!(null), true), (json!("not an email"), false), (json!(42), false)]
                .into_iter()
                .chain(
                    [
                        ("o'brien+x@acme-gmbh.example", true),
                        ("a@b.c", true),
                        ("jörg@acme.example", false),
                        ("a.@acme.example", false),
                        ("a..b@acme.example", false),
                        (".a@acme.example", false),
                        ("a@acme", false),
                        ("a@-acme.example", false),
                        ("a@acme..example", false),
                        ("a@b@acme.example", false),
                    ]
                    .map(|(email, valid)| (json!(email), valid)),
                )
        {
            let mut payload = valid();
            payload["Lessee"]["Email"] = email.clone();
            let errors = validate_create(&payload).err().unwrap_or_default();
            assert_eq!(!errors.contains_key("Lessee.Email"), valid_email, "{email}: {errors:?}");
        }
    }

    #[test]
    fn amount_must_equal_the_objects_to_the_cent() {
        let mut payload = valid();
        payload["FinancingAmount"] = json!(2598.01);
        let errors = validate_create(&payload).unwrap_err();
        assert!(errors["FinancingAmount"][0].contains("2598.00"), "{errors:?}");
        // 3 × 0.1 is 0.3 exactly in decimal (f64 would say 0.30000000000000004).
        let mut payload = valid();
        payload["FinancingAmount"] = json!(0.3);
        payload["FinancingObjects"] = json!([{"Quantity": 3, "NetPricePerObject": 0.1}]);
        assert_eq!(validate_create(&payload), Ok(()));
    }

    #[test]
    fn amounts_beyond_a_trillion_are_refused_not_overflowed() {
        // 2 × 7e28 overflowed `Decimal` (a panic) before amounts were bounded.
        let mut payload = valid();
        payload["FinancingAmount"] = json!(1.4e29);
        payload["FinancingObjects"] = json!([{"Quantity": 2, "NetPricePerObject": 7e28}]);
        let errors = validate_create(&payload).unwrap_err();
        assert!(errors.contains_key("FinancingAmount") && errors.contains_key("FinancingObjects.0.NetPricePerObject"));
        let mut payload = valid();
        payload["FinancingAmount"] = json!(0.001);
        assert!(validate_create(&payload).unwrap_err().contains_key("FinancingAmount"));
    }

    #[test]
    fn a_patch_is_checked_field_by_field() {
        assert_eq!(validate_patch(&json!({"PaymentMethod": "Invoice", "Period": null})), Ok(()));
        assert_eq!(validate_patch(&json!({"Period": 60, "FinancingAmount": 0.01})), Ok(()));
        assert!(validate_patch(&json!({"Period": 241})).unwrap_err().contains_key("Period"));
        assert!(validate_patch(&json!({"Period": 2147483647})).unwrap_err().contains_key("Period"));
        let errors = validate_patch(&json!({
            "Period": -1, "FinancingAmount": 0,
            "FinancingObjects": [{"Quantity": 4294967294u64, "NetPricePerObject": -0.5}]
        }))
        .unwrap_err();
        for field in
            ["Period", "FinancingAmount", "FinancingObjects.0.Quantity", "FinancingObjects.0.NetPricePerObject"]
        {
            assert!(errors.contains_key(field), "{field}: {errors:?}");
        }
        assert!(validate_patch(&json!([1])).unwrap_err().contains_key("body"));
    }

    #[test]
    fn missing_response_fields_get_defaults_and_unknown_ones_stay() {
        let filled =
            with_defaults(json!({"FinancingId": "f-1", "Lessee": {"CompanyName": "ACME"}, "Extra": 7, "State": null}));
        assert_eq!(filled["FinancingId"], "f-1");
        assert_eq!(filled["FinancingObjects"], json!([]));
        assert_eq!(filled["FinancingAmount"], 0);
        assert_eq!(filled["State"], "");
        assert_eq!(filled["Extra"], 7);
        assert_eq!(filled["Lessee"]["CompanyName"], "ACME");
        assert_eq!(filled["Lessee"]["Addresses"], json!([]));
        assert_eq!(filled["Lessee"]["Email"], Value::Null, "no email address: null, not \"\"");
        let empty = with_defaults(json!({"Lessee": {"Email": ""}}));
        assert_eq!(empty["Lessee"]["Email"], Value::Null);
        let given = with_defaults(json!({"Lessee": {"Email": "a@b.example"}}));
        assert_eq!(given["Lessee"]["Email"], "a@b.example");
        assert_eq!(with_defaults(Value::Null)["FinancingId"], "");
    }
}
