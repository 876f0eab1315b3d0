//! What `cargo xtask codegen` produced behaves as the design needs: records keep unknown fields
//! through a round trip, keys keep their JSON spelling, and the registries answer by name.

use generated::{erp, fieldreport};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

/// Deserialize into `T` and serialize back; the JSON value must not change.
fn round_trip<T: DeserializeOwned + Serialize>(record: Value) {
    let typed: T = serde_json::from_value(record.clone()).expect("record deserializes");
    let back = serde_json::to_value(&typed).expect("record serializes");
    assert_eq!(back, record);
}

#[test]
fn field_report_company_keeps_unknown_fields() {
    let record = json!({
        "Id": "4711",
        "Version": 3,
        "Name": "ACME GmbH",
        "IsPhysicalPerson": false,
        "Location": { "City": "Berlin", "Postal": "10115", "GeoHash": "u33db" },
        "Contacts": [],
        "Tags": [{ "Id": 5, "Name": "vip", "Colour": "#ff0000" }],
        "odata.etag": "W/\"3\"",
        "SomethingNewUpstream": { "nested": [1, 2.5, "x", null] }
    });
    round_trip::<fieldreport::types::Company>(record.clone());

    let company: fieldreport::types::Company = serde_json::from_value(record).unwrap();
    assert_eq!(company.id.as_ref().and_then(|id| id.as_i64()), Some(4711));
    assert_eq!(company.name.as_deref(), Some("ACME GmbH"));
    assert!(company.extra.contains_key("SomethingNewUpstream"));
}

#[test]
fn erp_customer_keeps_unknown_fields() {
    let record = json!({
        "id": "3512",
        "version": "7",
        "createdDate": 1_700_000_000_000_i64,
        "company": "ACME GmbH",
        "customerNumber": "C-1001",
        "creditLimit": "1500.00",
        "customAttributes": [{ "attributeDefinitionId": "99", "stringValue": "x", "newKind": true }],
        "addresses": [],
        "aFieldOfANewerApiVersion": { "a": 1 }
    });
    round_trip::<erp::types::Customer>(record.clone());
    let customer: erp::types::Customer = serde_json::from_value(record).unwrap();
    assert_eq!(customer.customer_number.as_deref(), Some("C-1001"));
    assert!(customer.extra.contains_key("aFieldOfANewerApiVersion"));
}

#[test]
fn field_report_registry() {
    let routes: Vec<&str> = fieldreport::entity_names().collect();
    assert_eq!(
        routes,
        [
            "companies",
            "contacts",
            "products",
            "documents",
            "timeEvents",
            "stepListTemplates",
            "itemTypes",
            "itemUnits",
            "users",
            "costCenters",
            "tags",
            "qualifications",
            "serviceObjects",
            "serviceRequests",
            "items"
        ]
    );
    let by_route = fieldreport::entity("costCenters").unwrap();
    let by_set = fieldreport::entity("CostCenters").unwrap();
    assert_eq!(by_route, by_set);
    assert_eq!(by_route.type_name, "CostCenter");
    assert!(fieldreport::entity("nope").is_none());
    assert_eq!(fieldreport::by_set("Companies").unwrap().expand, ["Contacts", "Tags", "ServiceObjects", "MainContact"]);
    assert_eq!(
        fieldreport::by_route("serviceRequests").unwrap().expand,
        [
            "Qualifications",
            "ServiceObjects",
            "Customer",
            "Reports",
            "Items",
            "Appointments/Contacts",
            "Steps",
            "Comments",
            "StockMovements",
            "Tags"
        ]
    );
    assert_eq!(fieldreport::by_route("serviceObjects").unwrap().expand, ["Contacts", "Company", "Product", "Tags"]);
    for e in fieldreport::ENTITIES {
        if !["companies", "serviceRequests", "serviceObjects"].contains(&e.route) {
            assert!(e.expand.is_empty(), "{} expands {:?}", e.route, e.expand);
        }
    }
}

#[test]
fn erp_registry() {
    assert_eq!(erp::MODELS.len(), 150);
    assert!(erp::MODELS.windows(2).all(|w| w[0].name < w[1].name), "sorted by name");
    let customer = erp::model("customer").unwrap();
    assert_eq!((customer.path, customer.type_name), ("/customer", "Customer"));
    assert_eq!(erp::model("salesOrder").unwrap().path, "/salesOrder");
    assert!(erp::model("Customer").is_none());
    assert_eq!(erp::model_names().next(), Some("accountingTransaction"));
    assert_eq!(erp::model_names().last(), Some("weclappOs"));
}
