//! The leasing area's endpoints. Every leasing route requires a bearer token and answers
//! errors with `success: false` beside the common error fields.
//!
//! The request flow and the calculations sit at their public paths beside
//! `/api/v1/leasing/{financingId}` (`/api/v1/leasing/calculate`,
//! `/api/v1/leasing/leasing/request-flow`): the vendored dropshot prefers a literal path
//! segment to a variable one beside it.

pub mod calculate;
pub mod deliveries;
pub mod event;
pub mod flow;
pub mod owner;
pub mod requests;
pub mod schema;
pub mod watch;

use dropshot::RequestContext;

use crate::api::ApiContext;
use crate::api::support::guard::{BearerToken, needs};
use crate::auth::Caller;
use crate::error::ApiError;

/// The caller behind the token, or the leasing-shaped 401.
async fn authorize(
    rqctx: &RequestContext<ApiContext>,
    token: &BearerToken<needs::Leasing>,
) -> Result<Caller, ApiError> {
    token.caller(rqctx).await.map_err(ApiError::leasing)
}

/// A held call's place under its user's cap, and what it stops on (see
/// [`crate::api::support::held_calls`]).
fn hold(
    rqctx: &RequestContext<ApiContext>,
    user_id: i64,
) -> Result<(crate::api::support::held_calls::HeldCall, crate::stop::StopSignal), ApiError> {
    let calls = &rqctx.context().held_calls;
    let place = calls.take(user_id).ok_or_else(|| ApiError::too_many_held_calls(calls.per_user()).leasing())?;
    let key = rqctx
        .request
        .headers()
        .get(crate::stop::HELD_CALL_HEADER)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse().ok());
    Ok((place, calls.stop_signal(key)))
}
