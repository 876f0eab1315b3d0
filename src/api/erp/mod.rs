//! The ERP area's endpoints: the webhook receiver, the mirror and its pulls, the helper
//! routes for sync tooling, the ERP → field-report posts, and the change feed.

pub mod feed;
pub mod mirror;
pub mod post;
pub mod pull;
pub mod webhooks;

use schemars::JsonSchema;
use serde::Deserialize;

// The paths that name a model, shared by the mirror's, the pulls' and the feed's routes.

#[derive(Deserialize, JsonSchema)]
pub struct ModelPath {
    /// The ERP's name of the model, e.g. `customer`, `salesOrder`.
    pub model: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct ModelRecordPath {
    /// The ERP's name of the model, e.g. `customer`.
    pub model: String,
    /// The id of one record (letters, digits and `-`, at most 64).
    #[schemars(regex(pattern = "^[A-Za-z0-9-]{1,64}$"))]
    pub entity: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct ModelFieldValuePath {
    /// The ERP's name of the model, e.g. `customer`.
    pub model: String,
    /// A top-level field of the model, e.g. `customerNumber` (letters and digits, at most 64).
    #[schemars(regex(pattern = "^[A-Za-z0-9]{1,64}$"))]
    pub entity: String,
    /// The value the field must equal.
    pub value: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct ModelAttributePath {
    /// The ERP's name of the model, e.g. `customer`.
    pub model: String,
    /// A custom attribute definition: its `attributeKey` or id.
    pub attribute: String,
}
