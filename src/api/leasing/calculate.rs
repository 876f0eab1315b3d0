//! The lease calculations: the provider's (`POST /api/v1/leasing/calculate`) and the
//! inverse one from the configured factors (`GET /api/v1/leasing/calculate…`).

use dropshot::{HttpResponseOk, Path, RequestContext, TypedBody};
use rust_decimal::prelude::ToPrimitive;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::authorize;
use super::requests::{ActionEnvelope, action};
use crate::api::ApiContext;
use crate::api::leasing::schema;
use crate::api::support::documented::Documented;
use crate::api::support::guard::{BearerToken, needs};
use crate::error::ApiError;

#[derive(Deserialize, JsonSchema)]
pub struct CalculateInstalment {
    /// Monthly instalment (net, up to two decimals, greater than 0), e.g. `299`.
    #[serde(rename = "monthlyInstalment")]
    #[schemars(regex(pattern = r"^([1-9][0-9]{0,11}(\.[0-9]{1,2})?|0\.(0[1-9]|[1-9][0-9]?))$"))]
    pub monthly_instalment: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct CalculateInstalmentAndPeriod {
    /// Monthly instalment (net, up to two decimals, greater than 0), e.g. `299`.
    #[serde(rename = "monthlyInstalment")]
    #[schemars(regex(pattern = r"^([1-9][0-9]{0,11}(\.[0-9]{1,2})?|0\.(0[1-9]|[1-9][0-9]?))$"))]
    pub monthly_instalment: String,
    /// Contract period in months: 48, 60, 72 or 84 by default (`LEASING_FACTORS`).
    #[schemars(regex(pattern = r"^[1-9][0-9]{0,3}$"))]
    pub period: String,
}

/// The amount that can be financed.
#[derive(Serialize, JsonSchema)]
#[schemars(example = "InverseCalculationResult::example")]
pub struct InverseCalculationResult {
    /// The financing amount, rounded half away from zero to cents.
    pub data: f64,
    /// The monthly instalment used.
    #[serde(rename = "monthlyInstalment")]
    pub monthly_instalment: f64,
    /// The period in months used.
    pub period: u32,
}

impl InverseCalculationResult {
    fn example() -> serde_json::Value {
        serde_json::json!({"data": 20340.14, "monthlyInstalment": 299, "period": 84})
    }
}

/// Lease calculation at the provider
///
/// Calls the provider's calculation with the validated body (`FinancingAmount` > 0;
/// without `Period` the provider answers every period it offers).
#[dropshot::endpoint { method = POST, path = "/api/v1/leasing/calculate", tags = ["leasing"] }]
pub async fn leasing_provider_calculation(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    body: TypedBody<Documented<schema::CalculationPayload>>,
) -> Result<HttpResponseOk<ActionEnvelope>, ApiError> {
    authorize(&rqctx, &token).await?;
    let body = body.into_inner().into_inner();
    Ok(action(rqctx.context().leasing.calculate(&body).await?))
}

/// Inverse lease calculation (defaults)
///
/// The amount that can be financed for a monthly instalment of 299 over 84 months:
/// `financingAmount = monthlyInstalment × 100 / factor(period)`, rounded half away from
/// zero to cents. Same as `/api/v1/leasing/calculate/299/84`.
#[dropshot::endpoint { method = GET, path = "/api/v1/leasing/calculate", tags = ["leasing"] }]
pub async fn leasing_calculate_default(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
) -> Result<HttpResponseOk<InverseCalculationResult>, ApiError> {
    calculate(&rqctx, &token, None, None).await
}

/// Inverse lease calculation (instalment)
///
/// The amount that can be financed for this monthly instalment over 84 months.
#[dropshot::endpoint { method = GET, path = "/api/v1/leasing/calculate/{monthlyInstalment}", tags = ["leasing"] }]
pub async fn leasing_calculate_instalment(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<CalculateInstalment>,
) -> Result<HttpResponseOk<InverseCalculationResult>, ApiError> {
    let path = path.into_inner();
    calculate(&rqctx, &token, Some(&path.monthly_instalment), None).await
}

/// Inverse lease calculation
///
/// The amount that can be financed for this monthly instalment over this period. The
/// periods supported by default are 48, 60, 72 and 84 months (factors 2.31, 1.91, 1.64,
/// 1.47; configurable with `LEASING_FACTORS`); others answer 422.
#[dropshot::endpoint {
    method = GET,
    path = "/api/v1/leasing/calculate/{monthlyInstalment}/{period}",
    tags = ["leasing"],
}]
pub async fn leasing_calculate(
    rqctx: RequestContext<ApiContext>,
    token: BearerToken<needs::Leasing>,
    path: Path<CalculateInstalmentAndPeriod>,
) -> Result<HttpResponseOk<InverseCalculationResult>, ApiError> {
    let path = path.into_inner();
    calculate(&rqctx, &token, Some(&path.monthly_instalment), Some(&path.period)).await
}

/// The inverse calculation of the three `leasing_calculate` endpoints; without an instalment
/// or a period, the defaults.
async fn calculate(
    rqctx: &RequestContext<ApiContext>,
    token: &BearerToken<needs::Leasing>,
    monthly_instalment: Option<&str>,
    period: Option<&str>,
) -> Result<HttpResponseOk<InverseCalculationResult>, ApiError> {
    authorize(rqctx, token).await?;
    let result = rqctx
        .context()
        .leasing_factors
        .inverse(monthly_instalment, period)
        .map_err(|errors| ApiError::validation(errors).leasing())?;
    Ok(HttpResponseOk(InverseCalculationResult {
        data: result.financing_amount.to_f64().unwrap_or_default(),
        monthly_instalment: result.monthly_instalment.to_f64().unwrap_or_default(),
        period: result.period,
    }))
}
