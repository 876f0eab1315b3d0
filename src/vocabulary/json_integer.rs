//! An integer as upstreams write one in JSON: a number, or the same number as text (OData v3
//! JSON light writes every Edm.Int64 so; the ERP writes `version` and its stamps either way).

use serde_json::Value;

/// `value` as an integer when it is a JSON integer or the text of one.
pub fn json_integer(value: &Value) -> Option<i64> {
    value.as_i64().or_else(|| value.as_str()?.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::json_integer;
    use serde_json::json;

    #[test]
    fn a_number_or_its_text_is_an_integer() {
        assert_eq!(json_integer(&json!(3)), Some(3));
        assert_eq!(json_integer(&json!("1700000000000")), Some(1_700_000_000_000));
        for other in [json!(1.5), json!("x"), json!(null), json!([1])] {
            assert_eq!(json_integer(&other), None, "{other}");
        }
    }
}
