//! The service's HTTP API: one dropshot API trait, its implementation, and the document.
//!
//! Each handler parses the request, calls the area's domain code and maps the result to the
//! wire; the handlers of an area live in the area's module (`auth`, `operations`).

pub mod auth;
pub mod context;
pub mod guard;
pub mod leasing;
pub mod openapi;
pub mod operations;

use dropshot::{
    Body, EndpointTagPolicy, HttpResponseOk, HttpResponseUpdatedNoContent, Path, RequestContext, TypedBody,
};
use http::Response;

pub use context::ApiContext;

use crate::error::ApiError;
use auth::{CurrentUser, LoginRequest, LoginResponse};
use leasing::{CalculateInstalment, CalculateInstalmentAndPeriod, InverseCalculationResult};
use operations::{Health, Readiness};

/// Internal path of the document; the front maps `/{DOCS_PATH}/openapi.json` onto it.
pub const OPENAPI_INTERNAL_PATH: &str = "/__internal/docs/openapi.json";

#[dropshot::api_description {
    tag_config = {
        allow_other_tags = false,
        policy = EndpointTagPolicy::ExactlyOne,
        tags = {
            "auth" = { description = "Login, logout and the current user (personal access tokens)." },
            "leasing" = { description = "Financing requests at the leasing provider, the one-shot request flow, and lease calculations." },
            "operations" = { description = "Liveness and readiness probes for operators and orchestrators." },
        },
    },
}]
pub trait IntegrationApi {
    type Context;

    /// Log in
    ///
    /// Exchanges an email and password for a personal access token. Send it as
    /// `Authorization: Bearer <access_token>` on every guarded route. Tokens do not expire
    /// unless the service sets `TOKEN_TTL_MINUTES`. After five failed attempts for one email
    /// from one address within a minute, further attempts are refused with 429 until the
    /// oldest failure is a minute old.
    #[endpoint { method = POST, path = "/api/v1/login", tags = ["auth"] }]
    async fn login(
        rqctx: RequestContext<Self::Context>,
        body: TypedBody<LoginRequest>,
    ) -> Result<HttpResponseOk<LoginResponse>, ApiError>;

    /// Log out
    ///
    /// Revokes the token presented with this request; it stops working at once.
    #[endpoint { method = POST, path = "/api/v1/logout", tags = ["auth"] }]
    async fn logout(rqctx: RequestContext<Self::Context>) -> Result<HttpResponseUpdatedNoContent, ApiError>;

    /// Current user
    ///
    /// The user who owns the presented token.
    #[endpoint { method = GET, path = "/api/v1/user", tags = ["auth"] }]
    async fn current_user(rqctx: RequestContext<Self::Context>) -> Result<HttpResponseOk<CurrentUser>, ApiError>;

    /// Inverse lease calculation (defaults)
    ///
    /// The amount that can be financed for a monthly instalment of 299 over 84 months:
    /// `financingAmount = monthlyInstalment × 100 / factor(period)`, rounded half away from
    /// zero to cents. Same as `/api/v1/leasing/calculate/299/84`.
    #[endpoint { method = GET, path = "/__internal/leasing/calculate", tags = ["leasing"] }]
    async fn leasing_calculate_default(
        rqctx: RequestContext<Self::Context>,
    ) -> Result<HttpResponseOk<InverseCalculationResult>, ApiError>;

    /// Inverse lease calculation (instalment)
    ///
    /// The amount that can be financed for this monthly instalment over 84 months.
    #[endpoint { method = GET, path = "/__internal/leasing/calculate/{monthlyInstalment}", tags = ["leasing"] }]
    async fn leasing_calculate_instalment(
        rqctx: RequestContext<Self::Context>,
        path: Path<CalculateInstalment>,
    ) -> Result<HttpResponseOk<InverseCalculationResult>, ApiError>;

    /// Inverse lease calculation
    ///
    /// The amount that can be financed for this monthly instalment over this period. The
    /// periods supported by default are 48, 60, 72 and 84 months (factors 2.31, 1.91, 1.64,
    /// 1.47; configurable with `LEASING_FACTORS`); others answer 422.
    #[endpoint { method = GET, path = "/__internal/leasing/calculate/{monthlyInstalment}/{period}", tags = ["leasing"] }]
    async fn leasing_calculate(
        rqctx: RequestContext<Self::Context>,
        path: Path<CalculateInstalmentAndPeriod>,
    ) -> Result<HttpResponseOk<InverseCalculationResult>, ApiError>;

    /// Liveness
    ///
    /// Answers 200 while the process is up; it does not touch the database.
    #[endpoint { method = GET, path = "/healthz", tags = ["operations"] }]
    async fn healthz(rqctx: RequestContext<Self::Context>) -> Result<HttpResponseOk<Health>, ApiError>;

    /// Readiness
    ///
    /// Answers 200 when the database answers, 503 otherwise.
    #[endpoint { method = GET, path = "/readyz", tags = ["operations"] }]
    async fn readyz(rqctx: RequestContext<Self::Context>) -> Result<HttpResponseOk<Readiness>, ApiError>;

    /// The OpenAPI document of this service (served at `/{DOCS_PATH}/openapi.json`).
    #[endpoint { method = GET, path = "/__internal/docs/openapi.json", tags = ["operations"], unpublished = true }]
    async fn openapi_document(rqctx: RequestContext<Self::Context>) -> Result<Response<Body>, ApiError>;
}

/// The implementation of [`IntegrationApi`]: each method delegates to its area's handler.
pub enum Service {}

impl IntegrationApi for Service {
    type Context = ApiContext;

    async fn login(
        rqctx: RequestContext<ApiContext>,
        body: TypedBody<LoginRequest>,
    ) -> Result<HttpResponseOk<LoginResponse>, ApiError> {
        auth::login(&rqctx, body.into_inner()).await
    }

    async fn logout(rqctx: RequestContext<ApiContext>) -> Result<HttpResponseUpdatedNoContent, ApiError> {
        auth::logout(&rqctx).await
    }

    async fn current_user(rqctx: RequestContext<ApiContext>) -> Result<HttpResponseOk<CurrentUser>, ApiError> {
        auth::current_user(&rqctx).await
    }

    async fn leasing_calculate_default(
        rqctx: RequestContext<ApiContext>,
    ) -> Result<HttpResponseOk<InverseCalculationResult>, ApiError> {
        leasing::calculate(&rqctx, None, None).await
    }

    async fn leasing_calculate_instalment(
        rqctx: RequestContext<ApiContext>,
        path: Path<CalculateInstalment>,
    ) -> Result<HttpResponseOk<InverseCalculationResult>, ApiError> {
        let path = path.into_inner();
        leasing::calculate(&rqctx, Some(&path.monthly_instalment), None).await
    }

    async fn leasing_calculate(
        rqctx: RequestContext<ApiContext>,
        path: Path<CalculateInstalmentAndPeriod>,
    ) -> Result<HttpResponseOk<InverseCalculationResult>, ApiError> {
        let path = path.into_inner();
        leasing::calculate(&rqctx, Some(&path.monthly_instalment), Some(&path.period)).await
    }

    async fn healthz(_rqctx: RequestContext<ApiContext>) -> Result<HttpResponseOk<Health>, ApiError> {
        Ok(HttpResponseOk(Health { status: "ok".into() }))
    }

    async fn readyz(rqctx: RequestContext<ApiContext>) -> Result<HttpResponseOk<Readiness>, ApiError> {
        operations::readyz(&rqctx).await
    }

    async fn openapi_document(rqctx: RequestContext<ApiContext>) -> Result<Response<Body>, ApiError> {
        operations::openapi_document(&rqctx)
    }
}

/// The API wired to its implementation, for the server.
pub fn description() -> dropshot::ApiDescription<ApiContext> {
    integration_api_mod::api_description::<Service>().expect("the API description is valid")
}
