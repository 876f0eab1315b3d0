//! The records every simulator starts with, and generated sample records.

use serde_json::{Map, Value, json};

use super::state::State;

/// The name of the seeded mail template.
pub const MAIL_TEMPLATE: &str = "leasing-missing-info";

/// The mail template the service sends when the leasing provider needs more information.
pub(super) fn mail_template() -> Map<String, Value> {
    let text = "<p>Hello {{ lessee.CompanyName }},</p>\
        <p>to go on with your leasing request {{ request.RequestId or financing_id }} \
        (financing id {{ financing_id }}) we need some more \
        information from you. Please answer this email or call us.</p>\
        {% if technician_appointment_date %}<p>Technician appointment: {{ technician_appointment_date }}\
        {% if technician_appointment_time %} at {{ technician_appointment_time }}{% endif %}.</p>{% endif %}\
        <p>Kind regards<br>Your leasing team</p>";
    let template = json!({
        "name": MAIL_TEMPLATE,
        "subject": "Leasing request {{ request.RequestId or financing_id }}: information missing",
        "text": text,
        "toEmailAddresses": "",
        "ccEmailAddresses": "",
        "bccEmailAddresses": "leasing-archive@sandbox.example",
        "type": "EMAIL",
        "useAsDefault": true,
    });
    template.as_object().cloned().unwrap_or_default()
}

/// The `n`-th generated record of `model`; customers carry the seeded custom attributes.
pub(super) fn sample(state: &State, model: &str, n: usize) -> Map<String, Value> {
    const COMPANIES: [(&str, &str, &str, &str, &str); 3] = [
        ("Müller Bürotechnik GmbH", "mueller-buerotechnik", "Hauptstraße 12", "10115", "Berlin"),
        ("Schmidt & Partner Steuerberatung", "schmidt-partner", "Marktplatz 3", "80331", "München"),
        ("Nordlicht Logistik KG", "nordlicht-logistik", "Hafenweg 40", "20457", "Hamburg"),
    ];
    const PEOPLE: [(&str, &str); 3] = [("Anna", "Becker"), ("Jonas", "Wagner"), ("Lea", "Hoffmann")];
    const ARTICLES: [(&str, &str); 3] = [
        ("Business Laptop 14\"", "Laptop with 16 GB RAM and 512 GB SSD"),
        ("USB-C Docking Station", "Docking station with two display ports"),
        ("Multifunction Printer A4", "Colour laser printer, scanner and copier"),
    ];
    let suffix = if n < 3 { String::new() } else { format!(" {n}") };
    let (company, slug, street, zipcode, city) = COMPANIES[n % 3];
    let record = match model {
        "customer" => {
            let attribute =
                |key: &str| {
                    state.models.get("customAttributeDefinition").into_iter().flat_map(|d| d.values()).find_map(|d| {
                        (d.get("attributeKey").and_then(Value::as_str) == Some(key)).then(|| d["id"].clone())
                    })
                };
            let mut attributes = Vec::new();
            if let Some(id) = attribute("fieldReportId").filter(|_| n % 3 != 2) {
                attributes.push(json!({"attributeDefinitionId": id, "stringValue": format!("legacy-{}", 1001 + n)}));
            }
            if let Some(id) = attribute("serviceLevel") {
                attributes
                    .push(json!({"attributeDefinitionId": id, "stringValue": (["gold", "silver", "bronze"][n % 3])}));
            }
            json!({
                "customerNumber": (10001 + n).to_string(), "company": format!("{company}{suffix}"),
                "email": format!("info{}@{slug}.example", if n < 3 { String::new() } else { n.to_string() }),
                "phone": format!("+49 30 555{n:04}"), "partyType": "ORGANIZATION",
                "addresses": [{"street1": street, "zipcode": zipcode, "city": city, "countryCode": "DE", "primeAddress": true}],
                "customAttributes": attributes,
            })
        }
        "contact" => {
            let (first, last) = PEOPLE[n % 3];
            json!({
                "firstName": first, "lastName": format!("{last}{suffix}"), "partyType": "PERSON",
                "email": format!("{}.{}{}@{slug}.example", first.to_lowercase(), last.to_lowercase(),
                                 if n < 3 { String::new() } else { n.to_string() }),
                "phone": format!("+49 40 777{n:04}"), "company": company,
            })
        }
        "article" => {
            let (name, description) = ARTICLES[n % 3];
            let unit = state.models.get("unit").and_then(|units| units.values().next()).map(|u| u["id"].clone());
            json!({"articleNumber": format!("A-{}", 100001 + n), "name": format!("{name}{suffix}"), "articleType": "BASIC",
                   "unitId": unit, "description": description, "active": true})
        }
        _ => json!({"name": format!("{model} {n}")}),
    };
    record.as_object().cloned().unwrap_or_default()
}

/// The records every simulator starts with; no webhooks fire for them.
pub(super) fn seed_defaults(state: &mut State) {
    state.insert("mailTemplate", mail_template(), None);
    for (key, label) in [("fieldReportId", "Field-report id"), ("serviceLevel", "Service level")] {
        let definition = json!({"attributeKey": key, "label": label, "attributeType": "STRING",
                                "entities": ["customer"], "active": true, "mandatory": false});
        state.insert("customAttributeDefinition", definition.as_object().cloned().unwrap_or_default(), None);
    }
    let unit = json!({"name": "Stk.", "description": "Stück"});
    state.insert("unit", unit.as_object().cloned().unwrap_or_default(), None);
    for model in ["customer", "contact", "article"] {
        for n in 0..3 {
            let record = sample(state, model, n);
            state.insert(model, record, None);
        }
    }
}
