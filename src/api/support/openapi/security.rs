//! Which operations need a bearer token, and which ability: read from the `Authorization`
//! header parameter that [`crate::api::support::guard::BearerToken`] declares.

use serde_json::{Value, json};

/// Whether the operation takes a bearer token, and the ability the token needs (see
/// [`crate::api::support::guard::needs`]): removes the `Authorization` header parameter that
/// [`crate::api::support::guard::BearerToken`] declares (and `parameters` when it was the only one).
pub(super) fn take_bearer_token_parameter(op: &mut Value) -> Option<Option<String>> {
    let parameters = op.get_mut("parameters").and_then(Value::as_array_mut)?;
    let position = parameters.iter().position(is_authorization_parameter)?;
    let parameter = parameters.remove(position);
    if parameters.is_empty() {
        op.as_object_mut().expect("an operation is an object").remove("parameters");
    }
    let description = parameter["description"].as_str().unwrap_or_default();
    let ability = description
        .split_once(crate::api::support::guard::ABILITY_NOTE)
        .and_then(|(_, rest)| rest.strip_prefix('`'))
        .and_then(|rest| rest.split_once('`'))
        .map(|(ability, _)| ability.to_string());
    Some(ability)
}

/// States the ability an operation's token needs: in its description, as `x-ability`, and with
/// the 403 a token without it gets. (OpenAPI 3.0 allows scopes in a security requirement only
/// for OAuth 2 and OpenID Connect schemes, so `security` stays `bearerAuth: []`.)
pub(super) fn state_ability(op: &mut Value, ability: &str) {
    let note = format!("Needs a token with the ability `{ability}` (login tokens hold every ability, `*`).");
    op["description"] = match op["description"].as_str() {
        Some(description) if !description.is_empty() => json!(format!("{description}\n\n{note}")),
        _ => json!(note),
    };
    op["x-ability"] = json!(ability);
    op["responses"]["403"] = json!({"$ref": "#/components/responses/MissingAbility"});
}

pub(super) fn is_authorization_parameter(parameter: &Value) -> bool {
    parameter["in"] == "header" && parameter["name"].as_str().is_some_and(|n| n.eq_ignore_ascii_case("authorization"))
}
