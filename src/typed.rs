//! Reading a JSON document into a typed model while naming the field that does not fit, for
//! validation messages per field (`FinancingObjects[0].Quantity`, or `body` for the document
//! itself).

use serde::de::DeserializeOwned;
use serde_json::Value;

/// A field that does not fit the model: its path and serde's message.
#[derive(Debug)]
pub struct FieldMismatch {
    pub field: String,
    pub message: String,
}

pub fn from_json<T: DeserializeOwned>(value: &Value) -> Result<T, FieldMismatch> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let field = if path.is_empty() || path == "." { "body".to_string() } else { path };
        FieldMismatch { field, message: error.into_inner().to_string() }
    })
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct Item {
        #[serde(rename = "Quantity")]
        quantity: Option<i32>,
    }

    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct Order {
        #[serde(rename = "Items")]
        items: Vec<Item>,
    }

    #[test]
    fn the_field_that_does_not_fit_is_named_by_its_path() {
        let error =
            super::from_json::<Order>(&json!({"Items": [{"Quantity": 1}, {"Quantity": 4294967294u64}]})).unwrap_err();
        assert_eq!(error.field, "Items[1].Quantity");
        assert!(error.message.contains("4294967294"), "{}", error.message);
        assert_eq!(super::from_json::<Order>(&json!("an order")).unwrap_err().field, "body");
    }
}
