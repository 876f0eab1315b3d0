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
}
