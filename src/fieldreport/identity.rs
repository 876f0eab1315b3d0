//! One shape for a record's identity, read or written: `Id` a string and `Version` an integer,
//! the types the write bodies take. OData JSON may write an `Edm.Int64` either way (v3 and
//! v4 with IEEE754Compatible as a string, v4 as a number), so a record from the field-report
//! system is normalized on the way in, with the records expanded inside it: a numeric `Id`
//! becomes its digits, a `Version` of digits a number. A record read from this API can so be
//! sent back to its update route as it is.

use serde_json::Value;

/// Whether `text` (a record as the upstream sent it) may hold an `Id` that is a number or a
/// `Version` that is a string: a cheap look that never misses one written with unescaped
/// keys, so that a record already in shape is not parsed.
pub fn may_need_normalizing(text: &str) -> bool {
    values_of(text, "\"Id\"").any(|v| v.starts_with(|c: char| c.is_ascii_digit() || c == '-'))
        || values_of(text, "\"Version\"").any(|v| v.starts_with('"'))
}

/// What follows each `key:` in `text`, from the value on.
fn values_of<'a>(text: &'a str, key: &'a str) -> impl Iterator<Item = &'a str> {
    text.match_indices(key)
        .filter_map(move |(at, _)| text[at + key.len()..].trim_start().strip_prefix(':'))
        .map(str::trim_start)
}

/// Normalizes `Id` and `Version` of `record` and of every record inside it; true when it
/// changed anything.
pub fn normalize(record: &mut Value) -> bool {
    match record {
        Value::Object(fields) => {
            let mut changed = false;
            if let Some(id) = fields.get_mut("Id")
                && let Value::Number(number) = id
            {
                *id = Value::String(number.to_string());
                changed = true;
            }
            if let Some(version) = fields.get_mut("Version")
                && let Some(number) = version.as_str().and_then(|text| text.parse::<i64>().ok())
            {
                *version = Value::from(number);
                changed = true;
            }
            fields.values_mut().fold(changed, |changed, value| normalize(value) | changed)
        }
        Value::Array(items) => items.iter_mut().fold(false, |changed, item| normalize(item) | changed),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn ids_become_strings_and_versions_numbers_inside_too() {
        let mut record = json!({"Id": 17, "Version": "3", "Name": "x", "MainContact": {"Id": 5, "Version": "1"},
                                "Contacts": [{"Id": "6", "Version": 2}], "CostCenterId": 9});
        assert!(super::normalize(&mut record));
        assert_eq!(
            record,
            json!({"Id": "17", "Version": 3, "Name": "x", "MainContact": {"Id": "5", "Version": 1},
                   "Contacts": [{"Id": "6", "Version": 2}], "CostCenterId": 9})
        );
        assert!(!super::normalize(&mut record), "already in shape");
    }

    #[test]
    fn the_cheap_look_finds_every_record_to_normalize() {
        assert!(super::may_need_normalizing(r#"{"Id": 17, "Version": 1}"#));
        assert!(super::may_need_normalizing(r#"{"Id":"17","Version" : "1"}"#));
        assert!(super::may_need_normalizing(r#"{"Id":"1","Tags":[{"Id":-2}]}"#));
        assert!(!super::may_need_normalizing(r#"{"Id": "17", "Version": 1, "Note": "Id 5"}"#));
    }
}
