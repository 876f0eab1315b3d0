//! What guarded handlers need from a request: the caller behind the bearer token, and the
//! client's address as the front determined it.

use std::net::IpAddr;

use dropshot::RequestContext;

use super::ApiContext;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::front::CLIENT_ADDRESS_HEADER;

/// The token of an `Authorization: Bearer <token>` header (see
/// [`crate::auth::token::from_authorization`]).
pub fn bearer_token(headers: &http::HeaderMap) -> Option<&str> {
    crate::auth::token::from_authorization(headers.get(http::header::AUTHORIZATION)?.to_str().ok()?)
}

/// The caller of a guarded route, or 401 `Unauthenticated.`.
///
/// The check is boxed: it runs before the handler's own work, and inline it would enlarge
/// every handler's future for the whole request (a held `wait-ready-to-sign` keeps its
/// future for minutes, thousands at once).
pub async fn caller(rqctx: &RequestContext<ApiContext>) -> Result<Caller, ApiError> {
    let token = bearer_token(rqctx.request.headers()).ok_or_else(ApiError::unauthenticated)?;
    Ok(Box::pin(rqctx.context().auth.authenticate(token)).await?)
}

/// The client's address: set by the front (which alone decides whether `X-Forwarded-For` is
/// believed), else the direct peer.
pub fn client_address(rqctx: &RequestContext<ApiContext>) -> IpAddr {
    rqctx
        .request
        .headers()
        .get(CLIENT_ADDRESS_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| rqctx.request.remote_addr().ip())
}
