//! The ERP → field-report mapping's posts (`fieldReportPost`).

use dropshot::{HttpResponseOk, Path, Query, RequestContext};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::ApiContext;
use crate::api::support::guard::{BearerToken, needs};
use crate::erp::ErpError;
use crate::erp::post::PostReport;
use crate::error::ApiError;

/// What each mapping's post did.
#[derive(Serialize, JsonSchema)]
pub struct PostAnswer {
    pub data: Vec<PostReport>,
}

#[derive(Deserialize, JsonSchema)]
pub struct PostQuery {
    /// Only the record with this ERP id (needs a model in the path).
    pub id: Option<String>,
}

/// Post mapped ERP records to the field-report system
///
/// Runs the ERP → field-report mapping (customer → companies, contact → contacts,
/// article → products) over the mirror and writes the records with forwarding: created
/// upstream when new, updated when the mapping changes something. After a create the
/// field-report Id is set on the ERP record's `fieldReportId` custom attribute (when the
/// ERP defines it), pending `entityPushAttr`. Failures are reported per record.
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/fieldReportPost", tags = ["erp"] }]
pub async fn erp_field_report_post_all(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Erp>,
    query: Query<PostQuery>,
) -> Result<HttpResponseOk<PostAnswer>, ApiError> {
    field_report_post(&rqctx, &token, None, query.into_inner()).await
}

/// Post one model's mapped records to the field-report system
///
/// As `fieldReportPost` for one mapped model (`customer`, `contact`, `article`); with
/// `?id=` for one record.
#[dropshot::endpoint { method = GET, path = "/api/v1/erp/fieldReportPost/{request}", tags = ["erp"] }]
pub async fn erp_field_report_post(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Erp>,
    path: Path<PostPath>,
    query: Query<PostQuery>,
) -> Result<HttpResponseOk<PostAnswer>, ApiError> {
    field_report_post(&rqctx, &token, Some(&path.into_inner().request), query.into_inner()).await
}

/// Posts the mapped records of one model or, without one, of every mapped model.
async fn field_report_post(
    rqctx: &RequestContext<ApiContext>,
    token: &BearerToken<needs::Erp>,
    model: Option<&str>,
    query: PostQuery,
) -> Result<HttpResponseOk<PostAnswer>, ApiError> {
    token.caller(rqctx).await?;
    if model.is_none() && query.id.is_some() {
        return Err(ErpError::Invalid {
            field: "id".into(),
            message: "an id needs a model: /fieldReportPost/{model}?id=…".into(),
        }
        .into());
    }
    let data = rqctx.context().erp.post_to_field_report(model, query.id.as_deref()).await?;
    Ok(HttpResponseOk(PostAnswer { data }))
}

#[derive(Deserialize, JsonSchema)]
pub struct PostPath {
    /// A mapped ERP model: `customer`, `contact` or `article`.
    pub request: String,
}
