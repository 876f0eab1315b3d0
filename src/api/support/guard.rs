//! What guarded handlers need from a request: the bearer token, and the client's address as
//! the front determined it.
//!
//! A handler that needs a token says so in its signature: it takes a [`BearerToken`] right
//! after the request context, naming the ability it needs (`BearerToken<needs::Leasing>`). The
//! document reads the same facts from the endpoint's parameters (the `Authorization` header
//! the extractor declares; see `crate::api::support::openapi`), so there is no list of guarded or public
//! operations, or of their abilities, to keep in step.

use std::marker::PhantomData;
use std::net::IpAddr;

use async_trait::async_trait;
use dropshot::{
    ApiEndpointBodyContentType, ClientErrorStatusCode, ExtractorMetadata, Header, HttpError, RequestContext,
    ServerContext, SharedExtractor,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::api::ApiContext;
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
/// header, for an operation that needs the ability `A` names (see [`needs`]); whether the token
/// is valid and holds it is [`BearerToken::caller`]'s to decide.
///
/// As a shared extractor it is taken before the body: a request without a well-formed token is
/// answered 401 `unauthenticated` before its body is read, so a malformed body never hides a
/// missing token.
pub struct BearerToken<A: needs::Need>(String, PhantomData<A>);

/// What an operation needs of its caller's token, named in the operation's signature:
/// `token: BearerToken<needs::FieldreportRead>`. The document states it too (see
/// `crate::api::support::openapi`), read from the `Authorization` parameter's description, which
/// [`BearerToken`] ends with [`ABILITY_NOTE`] and the ability's name in backticks.
pub mod needs {
    use crate::auth::ability::Ability;

    /// An ability an operation needs; `None`: any valid token will do.
    pub trait Need: Send + Sync + 'static {
        const ABILITY: Option<Ability>;
    }

    macro_rules! need {
        ($($(#[$doc:meta])* $name:ident => $ability:expr;)*) => {$(
            $(#[$doc])*
            pub struct $name;
            impl Need for $name {
                const ABILITY: Option<Ability> = $ability;
            }
        )*};
    }

    need! {
        /// Any valid token (the caller's own account: who am I, log out).
        AnyToken => None;
        /// `leasing`.
        Leasing => Some(Ability::Leasing);
        /// `fieldreport:read`.
        FieldreportRead => Some(Ability::FieldreportRead);
        /// `fieldreport:write`.
        FieldreportWrite => Some(Ability::FieldreportWrite);
        /// `fieldreport:tools`.
        FieldreportTools => Some(Ability::FieldreportTools);
        /// `erp`.
        Erp => Some(Ability::Erp);
        /// `jobs`.
        Jobs => Some(Ability::Jobs);
    }
}

/// How the `Authorization` parameter's description names the ability an operation needs:
/// this text, then the ability's name in backticks.
pub const ABILITY_NOTE: &str = "The token needs the ability ";

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
impl<A: needs::Need> SharedExtractor for BearerToken<A> {
    async fn from_request<Context: ServerContext>(rqctx: &RequestContext<Context>) -> Result<Self, HttpError> {
        well_formed_token(rqctx.request.headers()).map(|token| BearerToken(token.to_string(), PhantomData)).ok_or_else(
            || {
                HttpError::for_client_error(
                    Some("unauthenticated".into()),
                    ClientErrorStatusCode::UNAUTHORIZED,
                    "Unauthenticated.".into(),
                )
            },
        )
    }

    fn metadata(body_content_type: ApiEndpointBodyContentType) -> ExtractorMetadata {
        let mut metadata = <Header<AuthorizationHeader> as SharedExtractor>::metadata(body_content_type);
        if let Some(ability) = A::ABILITY {
            for parameter in &mut metadata.parameters {
                let described = parameter.description.take().unwrap_or_default();
                parameter.description = Some(format!("{described} {ABILITY_NOTE}`{ability}`.").trim().to_string());
            }
        }
        metadata
    }
}

impl<A: needs::Need> BearerToken<A> {
    /// The caller behind the token, or 401 `Unauthenticated.`; 403 `missing_ability` when the
    /// token lacks the ability the operation needs.
    ///
    /// The check is boxed: it runs before the handler's own work, and inline it would enlarge
    /// every handler's future for the whole request (a held `wait-ready-to-sign` keeps its
    /// future for minutes, thousands at once).
    pub async fn caller(&self, rqctx: &RequestContext<ApiContext>) -> Result<Caller, ApiError> {
        let caller = Box::pin(rqctx.context().auth.authenticate(&self.0)).await?;
        Ok(match A::ABILITY {
            Some(needed) => caller.allowed(needed)?,
            None => caller,
        })
    }
}

/// The client's address: the front, which alone decides whether `X-Forwarded-For` is
/// believed, hands it to dropshot as the request's remote address.
pub fn client_address(rqctx: &RequestContext<ApiContext>) -> IpAddr {
    rqctx.request.remote_addr().ip()
}
