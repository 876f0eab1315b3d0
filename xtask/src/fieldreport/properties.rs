use super::registry;
use crate::mirror::{Mirror, MirroredSet};
use proptest::prelude::*;

/// An identifier as CSDL names are written: a capital, then letters and digits.
fn name() -> impl Strategy<Value = String> {
    let rest: Vec<char> = "abcdefghijklmnopqrstuvwxyz0123456789".chars().collect();
    (prop::sample::select(('A'..='Z').collect::<Vec<_>>()), prop::collection::vec(prop::sample::select(rest), 1..10))
        .prop_map(|(first, rest)| std::iter::once(first).chain(rest).collect())
}

const EDM: &[&str] =
    &["Edm.String", "Edm.Int32", "Edm.Int64", "Edm.Boolean", "Edm.DateTimeOffset", "Edm.Decimal", "Edm.Double"];

/// An entity type: its name, its properties (name and Edm type), whether its set is mirrored.
type EntityType = (String, Vec<(String, &'static str)>, bool);

/// Entity types, each with distinct property names and an Edm type per property.
fn model() -> impl Strategy<Value = Vec<EntityType>> {
    prop::collection::btree_map(
        name(),
        (prop::collection::btree_map(name(), prop::sample::select(EDM), 1..8), any::<bool>()),
        1..6,
    )
    .prop_map(|types| {
        types.into_iter().map(|(name, (props, mirrored))| (name, props.into_iter().collect(), mirrored)).collect()
    })
}

/// The document in OData v4 CSDL or v3 EDMX form (the same types and sets), and the mirror
/// file naming the mirrored sets.
fn document(types: &[EntityType], alias: bool, v3: bool) -> (String, Mirror) {
    let prefix = if alias { "Self" } else { "Test.Model" };
    let mut xml = if v3 {
        String::from(
            r#"<?xml version="1.0" encoding="utf-8"?><edmx:Edmx Version="1.0" xmlns:edmx="http://schemas.microsoft.com/ado/2007/06/edmx"><edmx:DataServices>"#,
        )
    } else {
        String::from(
            r#"<?xml version="1.0" encoding="utf-8"?><edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx"><edmx:DataServices>"#,
        )
    };
    let edm =
        if v3 { "http://schemas.microsoft.com/ado/2009/11/edm" } else { "http://docs.oasis-open.org/odata/ns/edm" };
    xml.push_str(&format!(
        r#"<Schema Namespace="Test.Model" {} xmlns="{edm}">"#,
        if alias { r#"Alias="Self""# } else { "" }
    ));
    for (name, props, _) in types {
        xml.push_str(&format!(r#"<EntityType Name="{name}"><Key><PropertyRef Name="Id"/></Key><Property Name="Id" Type="Edm.Int64" Nullable="false"/>"#));
        for (prop, ty) in props {
            if prop != "Id" {
                xml.push_str(&format!(r#"<Property Name="{prop}" Type="{ty}"/>"#));
            }
        }
        xml.push_str("</EntityType>");
    }
    xml.push_str(r#"<EntityContainer Name="Container">"#);
    for (name, _, _) in types {
        xml.push_str(&format!(r#"<EntitySet Name="{name}Set" EntityType="{prefix}.{name}"/>"#));
    }
    xml.push_str("</EntityContainer></Schema></edmx:DataServices></edmx:Edmx>");
    let sets: Vec<MirroredSet> = types
        .iter()
        .filter(|(_, _, mirrored)| *mirrored)
        .map(|(name, _, _)| MirroredSet { name: format!("{name}Set"), expand: Vec::new() })
        .collect();
    let stages = vec![sets.iter().map(|set| set.name.clone()).collect()];
    (xml, Mirror { system_fields: Vec::new(), stages, sets })
}

proptest! {
    /// Every mirrored set of any such document, v3 or v4, is in the registry, with its
    /// type's every property (keys and all), and only the mirrored ones; aliases resolve
    /// like full names.
    #[test]
    fn the_registry_holds_every_mirrored_set_and_property(types in model(), alias in any::<bool>(), v3 in any::<bool>()) {
        let (xml, mirror) = document(&types, alias, v3);
        let mirrored: Vec<_> = types.iter().filter(|(_, _, m)| *m).collect();
        let registry = registry(&xml, "generated.xml", &mirror, "mirror.toml").unwrap();
        let sets: Vec<&str> = registry.entities.iter().map(|e| e.set.as_str()).collect();
        let expected: Vec<String> = mirrored.iter().map(|(name, _, _)| format!("{name}Set")).collect();
        prop_assert_eq!(sets, expected.iter().map(String::as_str).collect::<Vec<_>>());
        for ((_, props, _), entity) in mirrored.iter().zip(&registry.entities) {
            let schema = &registry.defs[&entity.type_key];
            let properties = schema["properties"].as_object().unwrap();
            prop_assert!(properties.contains_key("Id"));
            for (prop, _) in props {
                prop_assert!(properties.contains_key(prop), "{} lacks {}", entity.type_key, prop);
            }
        }
    }

    /// Text that is not CSDL is refused with an error, never a panic.
    #[test]
    fn anything_else_is_refused_not_a_panic(chars in prop::collection::vec(any::<char>(), 0..200)) {
        let text: String = chars.into_iter().collect();
        let sets = vec![MirroredSet { name: "Tags".into(), expand: Vec::new() }];
        let mirror = Mirror { system_fields: Vec::new(), stages: vec![vec!["Tags".into()]], sets };
        prop_assert!(registry(&text, "noise.xml", &mirror, "mirror.toml").is_err());
    }
}
