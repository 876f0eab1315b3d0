//! JSON bodies that pass through untouched but are documented with a schema.
//!
//! Provider-shaped payloads keep every field a client sends (unknown ones included) and are
//! validated by the domain with messages per field, so they travel as `serde_json::Value`;
//! [`Documented<T>`] gives such a value the schema of `T` in the OpenAPI document. A key named
//! twice in an object is refused, as a typed body refuses it ([`UniqueKeys`]).

use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::vocabulary::unique_keys::UniqueKeys;

pub struct Documented<T>(pub Value, PhantomData<fn() -> T>);

impl<T> Documented<T> {
    pub fn new(value: Value) -> Self {
        Documented(value, PhantomData)
    }

    pub fn into_inner(self) -> Value {
        self.0
    }
}

impl<'de, T> Deserialize<'de> for Documented<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        UniqueKeys::deserialize(deserializer).map(|UniqueKeys(value)| Documented::new(value))
    }
}

impl<T> Serialize for Documented<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<T: JsonSchema> JsonSchema for Documented<T> {
    fn schema_name() -> String {
        T::schema_name()
    }

    /// The same id as `T`, so that `Documented<T>` and `T` share one schema in the document
    /// (otherwise schemars sees two types of one name and calls the second `<Name>2`).
    fn schema_id() -> std::borrow::Cow<'static, str> {
        T::schema_id()
    }

    fn json_schema(generator: &mut schemars::r#gen::SchemaGenerator) -> schemars::schema::Schema {
        T::json_schema(generator)
    }
}
