//! Closed sets of words in the OpenAPI document.
//!
//! A string property whose value is always one of a few words the service writes (a status, a
//! mode, a kind) is declared an `enum` of them, so that a client generator makes a union of
//! the words instead of a plain string. The field's doc comment still describes each word: it
//! is the schema's description.

use schemars::schema::Schema;

/// The schema of a string that is one of `words`.
pub fn closed_set(words: &[&str]) -> Schema {
    serde_json::from_value(serde_json::json!({"type": "string", "enum": words})).expect("a valid schema")
}

/// `schema_with` functions, one per closed set, named after the property they type.
pub mod of {
    use schemars::r#gen::SchemaGenerator;
    use schemars::schema::Schema;

    use super::closed_set;

    pub fn delivery_status(_: &mut SchemaGenerator) -> Schema {
        closed_set(&["pending", "delivered", "failed"])
    }

    pub fn subscription_status(_: &mut SchemaGenerator) -> Schema {
        closed_set(&["active", "disabled"])
    }

    pub fn flow_mode(_: &mut SchemaGenerator) -> Schema {
        closed_set(&["e_signature", "cancel_e_signature"])
    }

    pub fn flow_status(_: &mut SchemaGenerator) -> Schema {
        closed_set(&["running", "succeeded", "failed", "abandoned", "interrupted"])
    }

    pub fn flow_step_action(_: &mut SchemaGenerator) -> Schema {
        closed_set(&[
            "create",
            "patch_request",
            "patch_lessee",
            "wait_ready_to_sign",
            "e_signature_configuration",
            "start_e_signature",
            "cancel_e_signature",
            "switch_to_paper_contract",
            "contract_document_base64",
            "contract_document_link",
        ])
    }

    pub fn flow_step_outcome(_: &mut SchemaGenerator) -> Schema {
        closed_set(&["succeeded", "failed"])
    }

    pub fn webhook_event(_: &mut SchemaGenerator) -> Schema {
        closed_set(&["created", "updated", "deleted"])
    }

    pub fn bearer(_: &mut SchemaGenerator) -> Schema {
        closed_set(&["Bearer"])
    }

    pub fn inbox_state(_: &mut SchemaGenerator) -> Schema {
        closed_set(&["pending", "done", "failed"])
    }

    pub fn push_kind(_: &mut SchemaGenerator) -> Schema {
        closed_set(&["create", "update", "delete"])
    }

    pub fn ok(_: &mut SchemaGenerator) -> Schema {
        closed_set(&["ok"])
    }

    pub fn ready(_: &mut SchemaGenerator) -> Schema {
        closed_set(&["ready"])
    }
}
