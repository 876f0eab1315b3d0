use super::registry;
use crate::mirror::Mirror;

const V3: &str = include_str!("../../testdata/fieldreport-v3.xml");

fn mirror(text: &str) -> Mirror {
    Mirror::parse(text, "mirror.toml").unwrap()
}

const MIRROR: &str = "stages = [[\"Companies\", \"Contacts\"]]\n\
                      [[set]]\nname = \"Companies\"\nexpand = [\"Contacts/Appointments\", \"MainContact\"]\n\
                      [[set]]\nname = \"Contacts\"\n";

#[test]
fn a_v3_document_gives_models_with_every_property_and_room_for_unknown_ones() {
    let registry = registry(V3, "v3.xml", &mirror(MIRROR), "mirror.toml").unwrap();
    let sets: Vec<&str> = registry.entities.iter().map(|e| e.set.as_str()).collect();
    assert_eq!(sets, ["Companies", "Contacts"], "the mirror file's sets, in its order");
    assert_eq!(registry.entities[0].expand, ["Contacts/Appointments", "MainContact"]);
    let company = &registry.defs[&registry.entities[0].type_key];
    let properties = company["properties"].as_object().unwrap();
    for name in ["Id", "Name", "DateModified", "OpeningTime", "Aliases", "LoyaltyLevel", "Contacts", "MainContact"] {
        assert!(properties.contains_key(name), "Company lacks {name}: {company}");
    }
    assert_eq!(company["additionalProperties"], serde_json::json!({}), "unknown fields are kept");
    let text = company.to_string();
    assert!(text.contains("Added by the upstream"), "v3 Documentation becomes the description");
    assert!(
        properties["Contacts"].to_string().contains("array"),
        "a `*` end is a collection: {}",
        properties["Contacts"]
    );
    assert!(!properties["MainContact"].to_string().contains("array"), "a `0..1` end is one record");
    assert!(properties["Aliases"].to_string().contains("array"));
}

#[test]
fn what_the_description_lacks_is_named() {
    let error = |xml: &str, mirror_text: &str| match registry(xml, "v3.xml", &mirror(mirror_text), "mirror.toml") {
        Ok(_) => panic!("accepted"),
        Err(error) => format!("{error:#}"),
    };
    let missing = error(V3, "stages = [[\"ServiceRequests\"]]\n[[set]]\nname = \"ServiceRequests\"\n");
    assert!(
        missing.contains("mirror.toml: the mirrored set \"ServiceRequests\" is not an entity set of v3.xml"),
        "{missing}"
    );
    let path =
        error(V3, "stages = [[\"Companies\"]]\n[[set]]\nname = \"Companies\"\nexpand = [\"Contacts/Invoices\"]\n");
    assert!(path.contains("expands \"Contacts/Invoices\"") && path.contains("no property \"Invoices\""), "{path}");
    let scalar = error(V3, "stages = [[\"Companies\"]]\n[[set]]\nname = \"Companies\"\nexpand = [\"Name\"]\n");
    assert!(scalar.contains("not a navigation property"), "{scalar}");
    let no_container = V3.replace("<EntityContainer", "<Ignored").replace("</EntityContainer>", "</Ignored>");
    assert!(error(&no_container, MIRROR).contains("no <EntityContainer>"));
    let bad_key = V3.replacen(r#"<PropertyRef Name="Id"/>"#, r#"<PropertyRef Name="Key"/>"#, 1);
    let bad_key = error(&bad_key, MIRROR);
    assert!(
        bad_key.contains("<PropertyRef Name=\"Key\"> of EntityType \"Company\" is not one of its properties"),
        "{bad_key}"
    );
    let no_association = V3.replace(r#"<Association Name="Company_MainContact">"#, r#"<Association Name="Other">"#);
    let no_association = error(&no_association, MIRROR);
    assert!(no_association.contains("MainContact") && no_association.contains("no <Association>"), "{no_association}");
}

/// A `DateModified` literal takes the form of the description's version and type: a v3
/// `Edm.DateTime` is typed `datetime'…'`, a v3 `Edm.DateTimeOffset` `datetimeoffset'…'`, and a
/// v4 one is bare.
#[test]
fn the_stamp_literal_follows_the_version_and_the_type() {
    let literal = |xml: &str| registry(xml, "x.xml", &mirror(MIRROR), "mirror.toml").unwrap().stamp_literal;
    assert_eq!(literal(V3).as_deref(), Some("datetime"));
    let offset =
        V3.replace(r#"Name="DateModified" Type="Edm.DateTime""#, r#"Name="DateModified" Type="Edm.DateTimeOffset""#);
    assert_ne!(offset, V3);
    assert_eq!(literal(&offset).as_deref(), Some("datetimeoffset"));
    let v4 = offset
        .replace(r#"<edmx:Edmx Version="1.0""#, r#"<edmx:Edmx Version="4.0""#)
        .replace("http://schemas.microsoft.com/ado/2007/06/edmx", "http://docs.oasis-open.org/odata/ns/edmx");
    assert_eq!(literal(&v4), None);
}
