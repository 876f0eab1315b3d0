//! The path that names a financing request, and the caller of a route with one, once it is known
//! that they may reach that request (see [`crate::leasing::watch::owners`]): another user's
//! request answers 404 before anything is asked of the provider.

use dropshot::{Path, RequestContext};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::api::ApiContext;
use crate::api::support::guard::{BearerToken, needs};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::vocabulary::owner::Viewer;

#[derive(Deserialize, JsonSchema)]
pub struct FinancingIdPath {
    /// The provider's identifier of the financing request (letters, digits and `-`, at most 64).
    #[serde(rename = "financingId")]
    #[schemars(regex(pattern = r"^[A-Za-z0-9-]{1,64}$"))]
    pub financing_id: String,
}

/// The caller behind the token and the financing id of the path, spelled as the service knows
/// the request ([`crate::leasing::watch::Watcher::reach`]), when the caller may reach that
/// request; the leasing-shaped 401 or 404 otherwise.
pub(super) async fn reach(
    rqctx: &RequestContext<ApiContext>,
    token: &BearerToken<needs::Leasing>,
    path: Path<FinancingIdPath>,
) -> Result<(Caller, String), ApiError> {
    let caller = token.caller(rqctx).await.map_err(ApiError::leasing)?;
    let viewer = Viewer { user_id: caller.user.id, operator: caller.user.operator };
    let id = rqctx.context().leasing.watcher().reach(&path.into_inner().financing_id, viewer).await?;
    Ok((caller, id))
}
