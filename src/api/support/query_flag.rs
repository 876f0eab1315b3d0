//! A boolean query parameter as clients send one: `true`/`false`, or `1`/`0` as PHP and HTML
//! forms do. Read as text, so that anything else is a 422 naming the parameter (dropshot's own
//! boolean would refuse `1` with a 400); documented as a boolean.

use schemars::JsonSchema;
use schemars::r#gen::SchemaGenerator;
use schemars::schema::Schema;
use serde::{Deserialize, Deserializer};

use crate::error::{ApiError, FieldErrors};

#[derive(Debug, Clone, Default)]
pub struct QueryFlag(Option<String>);

impl QueryFlag {
    /// The flag's value (`false` when absent), or a 422 naming `name`.
    pub fn value(&self, name: &str) -> Result<bool, ApiError> {
        match self.0.as_deref() {
            None | Some("false") | Some("0") => Ok(false),
            Some("true") | Some("1") => Ok(true),
            Some(_) => Err(ApiError::validation(FieldErrors::from([(
                name.to_string(),
                vec![format!("{name} is true, false, 1 or 0.")],
            )]))),
        }
    }
}

impl<'de> Deserialize<'de> for QueryFlag {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(|text| QueryFlag(Some(text)))
    }
}

impl JsonSchema for QueryFlag {
    fn schema_name() -> String {
        bool::schema_name()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        bool::json_schema(generator)
    }

    fn is_referenceable() -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn true_false_one_and_zero_are_read_anything_else_is_refused() {
        let flag = |text: &str| QueryFlag(Some(text.to_string())).value("store_pdf");
        assert!(flag("true").unwrap() && flag("1").unwrap());
        assert!(!flag("false").unwrap() && !flag("0").unwrap());
        assert!(!QueryFlag::default().value("store_pdf").unwrap());
        assert!(flag("yes").is_err() && flag("TRUE").is_err());
    }
}
