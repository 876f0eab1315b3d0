//! What guarded handlers need from a request: the bearer token, and the client's address as
//! the front determined it.
//!
//! A handler that needs a token says so in its signature: it takes a [`BearerToken`] right
//! after the request context. The document reads the same fact from the endpoint's parameters
//! (the `Authorization` header the extractor declares; see `super::openapi`), so there is no
//! list of guarded or public operations to keep in step.

use std::net::IpAddr;

use async_trait::async_trait;
use dropshot::{
    ApiEndpointBodyContentType, ClientErrorStatusCode, ExtractorMetadata, Header, HttpError, RequestContext,
    ServerContext, SharedExtractor,
};
use schemars::JsonSchema;
use serde::Deserialize;

use super::ApiContext;
use crate::auth::Caller;
use crate::error::ApiError;

/// The token of an `Authorization: Bearer <token>` header (see
/// [`crate::auth::token::from_authorization`]).
pub fn bearer_token(headers: &http::HeaderMap) -> Option<&str> {
    crate::auth::token::from_authorization(headers.get(http::header::AUTHORIZATION)?.to_str().ok()?)
}

/// The token of an `Authorization: Bearer <token>` header when it is well-formed (whether it
/// is valid is the authenticator's to say). The front asks this too, to answer an unknown
/// `/api/v1` path as a guarded one would.
pub fn well_formed_token(headers: &http::HeaderMap) -> Option<&str> {
    bearer_token(headers).filter(|token| crate::auth::token::parse(token).is_some())
}

/// A well-formed personal access token from the request's `Authorization: Bearer <token>`
/// header; whether it is valid is [`BearerToken::caller`]'s to decide.
///
/// As a shared extractor it is taken before the body: a request without a well-formed token is
/// answered 401 `unauthenticated` before its body is read, so a malformed body never hides a
/// missing token.
pub struct BearerToken(String);

/// The header [`BearerToken`] reads, as the document states it.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct AuthorizationHeader {
    /// `Bearer <token>`, with a personal access token from `POST /api/v1/login`
    /// (`<id>|<40 characters>`).
    #[serde(rename = "Authorization")]
    authorization: String,
}

#[async_trait]
impl SharedExtractor for BearerToken {
    async fn from_request<Context: ServerContext>(rqctx: &RequestContext<Context>) -> Result<Self, HttpError> {
        well_formed_token(rqctx.request.headers()).map(|token| BearerToken(token.to_string())).ok_or_else(|| {
            HttpError::for_client_error(
                Some("unauthenticated".into()),
                ClientErrorStatusCode::UNAUTHORIZED,
                "Unauthenticated.".into(),
            )
        })
    }

    fn metadata(body_content_type: ApiEndpointBodyContentType) -> ExtractorMetadata {
        <Header<AuthorizationHeader> as SharedExtractor>::metadata(body_content_type)
    }
}

impl BearerToken {
    /// The caller behind the token, or 401 `Unauthenticated.`.
    ///
    /// The check is boxed: it runs before the handler's own work, and inline it would enlarge
    /// every handler's future for the whole request (a held `wait-ready-to-sign` keeps its
    /// future for minutes, thousands at once).
    pub async fn caller(&self, rqctx: &RequestContext<ApiContext>) -> Result<Caller, ApiError> {
        Ok(Box::pin(rqctx.context().auth.authenticate(&self.0)).await?)
    }
}

/// The client's address: the front, which alone decides whether `X-Forwarded-For` is
/// believed, hands it to dropshot as the request's remote address.
pub fn client_address(rqctx: &RequestContext<ApiContext>) -> IpAddr {
    rqctx.request.remote_addr().ip()
}
