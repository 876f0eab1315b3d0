//! Handlers of the leasing area. Every leasing route requires a bearer token and answers
//! errors with `success: false` beside the common error fields.

use dropshot::{HttpResponseOk, RequestContext};
use rust_decimal::prelude::ToPrimitive;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ApiContext;
use super::guard::caller;
use crate::error::ApiError;

/// Public leasing paths that collide with `/api/v1/leasing/{financingId}` in dropshot's router,
/// and the internal paths they are served under (see `crate::front::rewrite`). Literal rows
/// come first.
pub const PATH_REWRITES: &[(&str, &str)] = &[
    ("/api/v1/leasing/calculate", "/__internal/leasing/calculate"),
    ("/api/v1/leasing/calculate/{monthlyInstalment}", "/__internal/leasing/calculate/{monthlyInstalment}"),
    (
        "/api/v1/leasing/calculate/{monthlyInstalment}/{period}",
        "/__internal/leasing/calculate/{monthlyInstalment}/{period}",
    ),
];

#[derive(Deserialize, JsonSchema)]
pub struct CalculateInstalment {
    /// Monthly instalment (net, up to two decimals, greater than 0), e.g. `299`.
    #[serde(rename = "monthlyInstalment")]
    pub monthly_instalment: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct CalculateInstalmentAndPeriod {
    /// Monthly instalment (net, up to two decimals, greater than 0), e.g. `299`.
    #[serde(rename = "monthlyInstalment")]
    pub monthly_instalment: String,
    /// Contract period in months: 48, 60, 72 or 84 by default.
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

/// Maps any error of a leasing route to the leasing error shape.
fn leasing_error(error: impl Into<ApiError>) -> ApiError {
    error.into().leasing()
}

pub async fn calculate(
    rqctx: &RequestContext<ApiContext>,
    monthly_instalment: Option<&str>,
    period: Option<&str>,
) -> Result<HttpResponseOk<InverseCalculationResult>, ApiError> {
    caller(rqctx).await.map_err(leasing_error)?;
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
