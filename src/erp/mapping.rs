//! The ERP → field-report mapping: which ERP records become which field-report records, and
//! how their fields translate. This table is the one place that knows it.
//!
//! | ERP model | field-report entity | fields |
//! |---|---|---|
//! | `customer` | `companies` | `Name` (company, else first and last name, else customer number), `IsPhysicalPerson` (partyType `PERSON`), `SupportMail` (email), `SupportTelephone` (phone), `Location` (the prime address: `Street`, `Postal`, `City`, `Country`, `AddressString`) |
//! | `contact` | `contacts` | `FirstName`, `LastName`, `Salutation`, `Email`, `Telephone` (phone), `MobilePhone` (mobilePhone1), `Fax` |
//! | `article` | `products` | `Name` (name, else article number), `Description` (description, else shortDescription1) |
//!
//! Every mapped record carries `ExternalId` = the ERP record's id: that is how a field-report
//! record is found again for the ERP record it came from. A record created locally (by a
//! webhook, without forwarding) gets the placeholder Id `erp-<model>-<id>` until it is sent to
//! the field-report system, which assigns the real (numeric) Id.
//!
//! ERP records are read through the generated models (`generated::erp::types`), so a field the
//! ERP renames or retypes shows up as a mapping error, not as silently empty data.

use generated::erp::ErpModel;
use generated::erp::types::{Article, Contact, Customer, PartyAddress};
use serde_json::{Map, Value, json};

/// One row of the mapping table.
pub struct Mapping {
    /// The ERP model, in the ERP's spelling.
    pub model: &'static str,
    /// The field-report entity, as its routes spell it.
    pub entity: &'static str,
    /// Translates one ERP record into the field-report fields it determines.
    pub map: fn(&Value) -> Result<Map<String, Value>, String>,
}

pub const MAPPINGS: &[Mapping] = &[
    Mapping { model: <Customer as ErpModel>::INFO.name, entity: "companies", map: company },
    Mapping { model: <Contact as ErpModel>::INFO.name, entity: "contacts", map: contact },
    Mapping { model: <Article as ErpModel>::INFO.name, entity: "products", map: product },
];

/// The mapping of an ERP model, if it has one.
pub fn mapping_for(model: &str) -> Option<&'static Mapping> {
    MAPPINGS.iter().find(|m| m.model == model)
}

/// The placeholder Id of a field-report record created locally from an ERP record.
pub fn placeholder_id(model: &str, erp_id: &str) -> String {
    format!("erp-{model}-{erp_id}")
}

/// Whether a field-report Id is a placeholder (the record has not reached the field-report
/// system yet).
pub fn is_placeholder(id: &str) -> bool {
    id.starts_with("erp-")
}

fn typed<T: ErpModel>(record: &Value) -> Result<T, String> {
    serde_json::from_value(record.clone())
        .map_err(|e| format!("the {} record does not match the ERP model: {e}", T::INFO.name))
}

fn text(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// Inserts the fields that have a value; a field the ERP record leaves empty stays untouched.
fn fields(external_id: &Option<String>, pairs: Vec<(&str, Option<Value>)>) -> Result<Map<String, Value>, String> {
    let id = text(external_id).ok_or("the ERP record has no id")?;
    let mut out = Map::new();
    out.insert("ExternalId".into(), Value::String(id.to_string()));
    for (name, value) in pairs {
        if let Some(value) = value {
            out.insert(name.to_string(), value);
        }
    }
    Ok(out)
}

fn string(value: Option<&str>) -> Option<Value> {
    value.map(|s| Value::String(s.to_string()))
}

fn prime_address(customer: &Customer) -> Option<&PartyAddress> {
    let addresses = customer.addresses.as_deref().unwrap_or_default();
    addresses
        .iter()
        .find(|a| a.prime_address == Some(true))
        .or_else(|| addresses.iter().find(|a| a.id.is_some() && a.id == customer.primary_address_id))
        .or_else(|| addresses.first())
}

fn location(address: &PartyAddress) -> Value {
    let street = [text(&address.street1), text(&address.street2)].into_iter().flatten().collect::<Vec<_>>().join(" ");
    let town = [text(&address.zipcode), text(&address.city)].into_iter().flatten().collect::<Vec<_>>().join(" ");
    let line = [street.as_str(), town.as_str(), text(&address.country_code).unwrap_or_default()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(", ");
    json!({
        "AddressString": line,
        "Street": street,
        "Postal": text(&address.zipcode).unwrap_or_default(),
        "City": text(&address.city).unwrap_or_default(),
        "Country": text(&address.country_code).unwrap_or_default(),
    })
}

fn company(record: &Value) -> Result<Map<String, Value>, String> {
    let customer: Customer = typed(record)?;
    let person = [text(&customer.first_name), text(&customer.last_name)].into_iter().flatten().collect::<Vec<_>>();
    let name = text(&customer.company)
        .map(str::to_string)
        .or_else(|| (!person.is_empty()).then(|| person.join(" ")))
        .or_else(|| text(&customer.customer_number).map(str::to_string));
    fields(
        &customer.id,
        vec![
            ("Name", name.map(Value::String)),
            ("IsPhysicalPerson", customer.party_type.as_deref().map(|t| Value::Bool(t == "PERSON"))),
            ("SupportMail", string(text(&customer.email))),
            ("SupportTelephone", string(text(&customer.phone))),
            ("Location", prime_address(&customer).map(location)),
        ],
    )
}

fn contact(record: &Value) -> Result<Map<String, Value>, String> {
    let contact: Contact = typed(record)?;
    fields(
        &contact.id,
        vec![
            ("FirstName", string(text(&contact.first_name))),
            ("LastName", string(text(&contact.last_name))),
            ("Salutation", string(text(&contact.salutation))),
            ("Email", string(text(&contact.email))),
            ("Telephone", string(text(&contact.phone))),
            ("MobilePhone", string(text(&contact.mobile_phone1))),
            ("Fax", string(text(&contact.fax))),
        ],
    )
}

fn product(record: &Value) -> Result<Map<String, Value>, String> {
    let article: Article = typed(record)?;
    fields(
        &article.id,
        vec![
            ("Name", string(text(&article.name).or(text(&article.article_number)))),
            ("Description", string(text(&article.description).or(text(&article.short_description1)))),
        ],
    )
}

/// Whether `document` already holds every mapped field with the same value.
pub fn already_applied(document: &Value, mapped: &Map<String, Value>) -> bool {
    mapped.iter().all(|(k, v)| document.get(k) == Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_customer_becomes_a_company_with_its_prime_address() {
        let customer = json!({
            "id": "12", "version": "3", "company": "ACME GmbH", "partyType": "ORGANIZATION",
            "email": "info@acme.example", "phone": "+49 30 1",
            "addresses": [
                {"street1": "Nebenweg 1", "city": "Köln", "zipcode": "50667", "countryCode": "DE"},
                {"street1": "Hauptstr. 5", "city": "Berlin", "zipcode": "10115", "countryCode": "DE", "primeAddress": true}
            ],
            "someNewField": {"kept": true}
        });
        let mapped = company(&customer).unwrap();
        assert_eq!(
            Value::Object(mapped),
            json!({
                "ExternalId": "12", "Name": "ACME GmbH", "IsPhysicalPerson": false,
                "SupportMail": "info@acme.example", "SupportTelephone": "+49 30 1",
                "Location": {"AddressString": "Hauptstr. 5, 10115 Berlin, DE", "Street": "Hauptstr. 5",
                             "Postal": "10115", "City": "Berlin", "Country": "DE"}
            })
        );
    }

    #[test]
    fn a_person_without_company_is_named_by_first_and_last_name() {
        let mapped =
            company(&json!({"id": "7", "firstName": "Ada", "lastName": "Lovelace", "partyType": "PERSON"})).unwrap();
        assert_eq!(mapped["Name"], "Ada Lovelace");
        assert_eq!(mapped["IsPhysicalPerson"], true);
        assert!(!mapped.contains_key("Location"));
    }

    #[test]
    fn contacts_and_articles_map_their_fields() {
        let contact =
            contact(&json!({"id": "5", "firstName": "Max", "lastName": "Muster", "mobilePhone1": "0170"})).unwrap();
        assert_eq!(
            Value::Object(contact),
            json!({"ExternalId": "5", "FirstName": "Max", "LastName": "Muster", "MobilePhone": "0170"})
        );
        let product = product(&json!({"id": "9", "articleNumber": "A-9", "shortDescription1": "Pump"})).unwrap();
        assert_eq!(Value::Object(product), json!({"ExternalId": "9", "Name": "A-9", "Description": "Pump"}));
    }

    #[test]
    fn records_that_do_not_fit_the_model_are_errors() {
        assert!(company(&json!({"id": "1", "company": 42})).unwrap_err().contains("customer"));
        assert!(contact(&json!({"firstName": "x"})).unwrap_err().contains("no id"));
    }

    #[test]
    fn the_table_names_real_models_and_entities() {
        for m in MAPPINGS {
            assert!(generated::erp::model(m.model).is_some(), "{}", m.model);
            assert!(generated::fieldreport::by_route(m.entity).is_some(), "{}", m.entity);
        }
        assert_eq!(mapping_for("customer").unwrap().entity, "companies");
        assert!(mapping_for("salesOrder").is_none());
        assert!(is_placeholder(&placeholder_id("customer", "1")));
    }
}
