//! The auth area's endpoints: login, logout and the current user.

use dropshot::{HttpResponseOk, HttpResponseUpdatedNoContent, RequestContext, TypedBody};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::ApiContext;
use crate::api::support::guard::{BearerToken, client_address, needs};
use crate::auth::User;
use crate::error::ApiError;
use crate::vocabulary::address_group::AddressGroup;

/// Credentials of a user.
#[derive(Deserialize, JsonSchema)]
#[schemars(example = "LoginRequest::example")]
pub struct LoginRequest {
    /// The user's email address.
    #[schemars(regex(pattern = r"\S"), length(max = 254))]
    pub email: String,
    /// The user's password.
    #[schemars(length(min = 1, max = 4096))]
    pub password: String,
}

impl LoginRequest {
    fn example() -> serde_json::Value {
        serde_json::json!({"email": "ops@example.com", "password": "correct horse battery staple"})
    }
}

/// A new personal access token.
#[derive(Serialize, JsonSchema)]
#[schemars(example = "LoginResponse::example")]
pub struct LoginResponse {
    /// The token, `<id>|<40 characters>`; send it as `Authorization: Bearer <access_token>`.
    pub access_token: String,
    /// Always `Bearer`.
    #[schemars(schema_with = "crate::vocabulary::closed_set::of::bearer")]
    pub token_type: String,
}

impl LoginResponse {
    fn example() -> serde_json::Value {
        serde_json::json!({"access_token": "7|Xq3b9ZkP0aLm2Vt8Rr1Yc6Wn4Ue5Oi7Hs0Jd2Fg", "token_type": "Bearer"})
    }
}

/// The user who owns the presented token.
#[derive(Serialize, JsonSchema)]
#[schemars(example = "CurrentUser::example")]
pub struct CurrentUser {
    pub id: i64,
    pub name: String,
    pub email: String,
    /// When the user was created (RFC 3339, UTC).
    pub created_at: String,
}

impl CurrentUser {
    fn example() -> serde_json::Value {
        serde_json::json!({"id": 1, "name": "Ops", "email": "ops@example.com", "created_at": "2026-11-21T09:30:00.000Z"})
    }
}

impl From<User> for CurrentUser {
    fn from(user: User) -> Self {
        let created_at = chrono::DateTime::from_timestamp_millis(user.created_at)
            .unwrap_or_default()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        CurrentUser { id: user.id, name: user.name, email: user.email, created_at }
    }
}

/// Log in
///
/// Exchanges an email and password for a personal access token. Send it as
/// `Authorization: Bearer <access_token>` on every guarded route. Tokens do not expire
/// unless the service sets `TOKEN_TTL_MINUTES`; a user keeps at most
/// `LOGIN_TOKENS_PER_USER` (100) login tokens, and a login beyond them revokes those used
/// longest ago. After five failed attempts for one email
/// from one address within a minute, further attempts are refused with 429 until the
/// oldest failure is a minute old.
#[dropshot::endpoint { method = POST, path = "/api/v1/login", tags = ["auth"] }]
pub async fn login(
    rqctx: RequestContext<ApiContext>,
    body: TypedBody<LoginRequest>,
) -> Result<HttpResponseOk<LoginResponse>, ApiError> {
    let body = body.into_inner();
    let address = AddressGroup::of(client_address(&rqctx));
    let token = rqctx.context().auth.login(&body.email, &body.password, address).await?;
    Ok(HttpResponseOk(LoginResponse { access_token: token, token_type: "Bearer".into() }))
}

/// Log out
///
/// Revokes the token presented with this request; it stops working at once.
#[dropshot::endpoint { method = POST, path = "/api/v1/logout", tags = ["auth"] }]
pub async fn logout(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::AnyToken>,
) -> Result<HttpResponseUpdatedNoContent, ApiError> {
    let caller = token.caller(&rqctx).await?;
    rqctx.context().auth.revoke(caller.token_id).await?;
    Ok(HttpResponseUpdatedNoContent())
}

/// Current user
///
/// The user who owns the presented token.
#[dropshot::endpoint { method = GET, path = "/api/v1/user", tags = ["auth"] }]
pub async fn current_user(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::AnyToken>,
) -> Result<HttpResponseOk<CurrentUser>, ApiError> {
    let caller = token.caller(&rqctx).await?;
    Ok(HttpResponseOk(caller.user.into()))
}
