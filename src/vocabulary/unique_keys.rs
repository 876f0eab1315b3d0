//! JSON values whose objects name each key once. A body that travels as a `serde_json::Value`
//! kept the last of two equal keys, while the typed bodies and the query strings refuse the
//! second one: `{"Name": "a", "Name": "b"}` was `b` here, and `a` to a proxy or firewall
//! that reads the first. A key named twice is refused instead, at any depth, in the typed
//! bodies' words (`duplicate field`).

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// A JSON value in which no object names a key twice.
pub struct UniqueKeys(pub Value);

impl<'de> Deserialize<'de> for UniqueKeys {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UniqueKeysVisitor).map(UniqueKeys)
    }
}

struct UniqueKeysVisitor;

impl<'de> Visitor<'de> for UniqueKeysVisitor {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        // As serde_json's own `Value` does: a number that is no finite f64 is null.
        Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_string()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        UniqueKeys::deserialize(deserializer).map(|UniqueKeys(value)| value)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut values = Vec::new();
        while let Some(UniqueKeys(value)) = seq.next_element()? {
            values.push(value);
        }
        Ok(Value::Array(values))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut values = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if values.contains_key(&key) {
                return Err(de::Error::custom(format_args!("duplicate field `{key}`")));
            }
            let UniqueKeys(value) = map.next_value()?;
            values.insert(key, value);
        }
        Ok(Value::Object(values))
    }
}

#[cfg(test)]
mod tests {
    use super::UniqueKeys;
    use serde_json::json;

    fn parse(text: &str) -> Result<serde_json::Value, String> {
        serde_json::from_str::<UniqueKeys>(text).map(|UniqueKeys(value)| value).map_err(|e| e.to_string())
    }

    #[test]
    fn values_read_as_serde_json_reads_them() {
        let text = r#"{"a": [1, -2, 3.5, 18446744073709551615, true, null, "x"], "b": {"c": {}}, "d": []}"#;
        assert_eq!(parse(text).unwrap(), serde_json::from_str::<serde_json::Value>(text).unwrap());
        assert_eq!(
            parse("1e400").unwrap_err(),
            serde_json::from_str::<serde_json::Value>("1e400").unwrap_err().to_string()
        );
    }

    #[test]
    fn a_key_named_twice_is_refused_at_any_depth() {
        assert!(parse(r#"{"Name": "a", "Name": "b"}"#).unwrap_err().contains("duplicate field `Name`"));
        assert!(parse(r#"{"x": [{"y": 1, "y": 1}]}"#).unwrap_err().contains("duplicate field `y`"));
        assert_eq!(parse(r#"{"a": {"k": 1}, "b": {"k": 1}}"#).unwrap(), json!({"a": {"k": 1}, "b": {"k": 1}}));
    }
}
