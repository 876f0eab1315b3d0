//! The deep merge of an update over a stored record: objects merge recursively, arrays and
//! scalars replace.

use serde_json::Value;

pub fn deep_merge(base: &mut Value, patch: &Value) {
    match (base, patch) {
        (Value::Object(base), Value::Object(patch)) => {
            for (key, value) in patch {
                match base.get_mut(key) {
                    Some(existing) if existing.is_object() && value.is_object() => deep_merge(existing, value),
                    _ => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (base, patch) => *base = patch.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::deep_merge;
    use serde_json::json;

    #[test]
    fn objects_merge_and_the_rest_replaces() {
        let mut base =
            json!({"Name": "A", "Location": {"City": "Berlin", "Postal": "10115"}, "Tags": [1, 2], "Keep": true});
        deep_merge(&mut base, &json!({"Name": "B", "Location": {"City": "Hamburg"}, "Tags": [3], "New": null}));
        assert_eq!(
            base,
            json!({"Name": "B", "Location": {"City": "Hamburg", "Postal": "10115"}, "Tags": [3], "Keep": true, "New": null})
        );
        let mut scalar = json!(1);
        deep_merge(&mut scalar, &json!({"a": 1}));
        assert_eq!(scalar, json!({"a": 1}));
    }

    mod properties {
        use super::deep_merge;
        use proptest::prelude::*;
        use serde_json::{Map, Value};

        /// Any JSON value, objects nested a few levels deep over a small set of keys (so that
        /// base and patch share keys often).
        fn json_value() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(Value::from),
                prop::sample::select(vec!["", "a", "Berlin", "ÄÖÜ"]).prop_map(Value::from),
            ];
            leaf.prop_recursive(4, 64, 6, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                    prop::collection::btree_map(prop::sample::select(vec!["a", "b", "c", "d"]), inner, 0..4).prop_map(
                        |m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect::<Map<_, _>>())
                    ),
                ]
            })
        }

        fn merged(base: &Value, patch: &Value) -> Value {
            let mut result = base.clone();
            deep_merge(&mut result, patch);
            result
        }

        proptest! {
            /// Merging the same patch twice changes nothing more.
            #[test]
            fn merging_is_idempotent(base in json_value(), patch in json_value()) {
                let once = merged(&base, &patch);
                prop_assert_eq!(merged(&once, &patch), once);
            }

            /// An empty object changes nothing; a non-object patch replaces the whole value.
            #[test]
            fn empty_patches_keep_and_scalars_replace(base in json_value(), patch in json_value()) {
                if base.is_object() {
                    prop_assert_eq!(merged(&base, &Value::Object(Map::new())), base.clone());
                }
                if !patch.is_object() {
                    prop_assert_eq!(merged(&base, &patch), patch);
                }
            }

            /// Between objects: every patched key reads as the patch says (recursively for
            /// objects met by objects), and every key the patch does not name is untouched.
            #[test]
            fn object_merges_touch_only_patched_keys(base in json_value(), patch in json_value()) {
                let (Value::Object(b), Value::Object(p)) = (&base, &patch) else { return Ok(()) };
                let result = merged(&base, &patch);
                let r = result.as_object().unwrap();
                for (key, value) in b {
                    if !p.contains_key(key) {
                        prop_assert_eq!(&r[key], value);
                    }
                }
                for (key, value) in p {
                    match b.get(key) {
                        Some(old) if old.is_object() && value.is_object() => prop_assert_eq!(&r[key], &merged(old, value)),
                        _ => prop_assert_eq!(&r[key], value),
                    }
                }
                prop_assert_eq!(r.len(), b.keys().chain(p.keys()).collect::<std::collections::BTreeSet<_>>().len());
            }
        }
    }
}
