//! The service's HTTP API: one dropshot API trait, its implementation, and the document.
//!
//! Each handler parses the request, calls the area's domain code and maps the result to the
//! wire; the handlers of an area live in the area's module (`auth`, `operations`).

pub mod auth;
pub mod context;
pub mod docs_page;
pub mod documented;
pub mod erp;
pub mod fieldreport;
pub mod guard;
pub mod held_calls;
pub mod idempotency;
pub mod leasing;
pub mod leasing_schema;
pub mod openapi;
pub mod operations;
pub mod query_flag;

use dropshot::{
    Body, EndpointTagPolicy, Header, HttpResponseAccepted, HttpResponseCreated, HttpResponseOk,
    HttpResponseUpdatedNoContent, Path, Query, RequestContext, TypedBody,
};
use http::Response;

pub use context::ApiContext;

use crate::erp::pull::PullKind;
use crate::error::ApiError;
use auth::{CurrentUser, LoginRequest, LoginResponse};
use documented::Documented;
use idempotency::IdempotencyHeader;
use leasing::{
    ActionEnvelope, CalculateInstalment, CalculateInstalmentAndPeriod, ConfigurationEnvelope, ContractDocumentEnvelope,
    ContractDocumentQuery, FinancingIdPath, FlowEnvelope, FlowHealth, FlowRequest, InverseCalculationResult,
    RequestEnvelope, TestFlowEnvelope, WaitQuery,
};
use leasing_schema as schema;
use operations::{Health, Readiness};

/// Internal path of the document; the front maps `/{DOCS_PATH}/openapi.json` onto it.
pub const OPENAPI_INTERNAL_PATH: &str = "/__internal/docs/openapi.json";

#[dropshot::api_description {
    tag_config = {
        allow_other_tags = false,
        policy = EndpointTagPolicy::ExactlyOne,
        tags = {
            "auth" = { description = "Login, logout and the current user (personal access tokens)." },
            "erp" = { description = "The ERP's webhooks, the local mirror of its models, helper routes for sync tooling, and the ERP → field-report mapping." },
            "fieldreport" = { description = "The local mirror of the field-report system's 15 entity types; writes are forwarded to the upstream." },
            "leasing" = { description = "Financing requests at the leasing provider, the one-shot request flow, and lease calculations." },
            "operations" = { description = "Liveness and readiness probes and metrics for operators and orchestrators." },
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

    /// Create a financing request
    ///
    /// Validates the request (every bad field is named in one 422) and creates it at the
    /// provider. The answer is the submitted request completed with the provider's
    /// `FinancingId` and `State`. Unknown fields are passed to the provider untouched.
    ///
    /// With an `Idempotency-Key` header, a retry with the same key and body returns the first
    /// answer and creates nothing new; the same key with another body is refused (422).
    #[endpoint { method = POST, path = "/api/v1/leasing", tags = ["leasing"] }]
    async fn leasing_create(
        rqctx: RequestContext<Self::Context>,
        headers: Header<IdempotencyHeader>,
        body: TypedBody<Documented<schema::FinancingRequestPayload>>,
    ) -> Result<HttpResponseCreated<RequestEnvelope>, ApiError>;

    /// Run the one-shot request flow
    ///
    /// Up to eight actions in order: create; optionally patch the request and the lessee;
    /// wait until ReadyToSign (as `wait-ready-to-sign`); then e-signature configuration and
    /// start (mode `e_signature`) or cancel e-signature and switch to a paper contract (mode
    /// `cancel_e_signature`); optionally fetch the contract as base64 and a download link.
    /// Each run is recorded with its steps (`flowId`). Blocks for up to `max_attempts ×
    /// sleep_milliseconds`. Honours `Idempotency-Key` like create.
    #[endpoint { method = POST, path = "/__internal/leasing/request-flow", tags = ["leasing"] }]
    async fn leasing_request_flow(
        rqctx: RequestContext<Self::Context>,
        headers: Header<IdempotencyHeader>,
        body: TypedBody<FlowRequest>,
    ) -> Result<HttpResponseOk<FlowEnvelope>, ApiError>;

    /// Request flow health check
    #[endpoint { method = GET, path = "/__internal/leasing/request-flow", tags = ["leasing"] }]
    async fn leasing_request_flow_health(
        rqctx: RequestContext<Self::Context>,
    ) -> Result<HttpResponseOk<FlowHealth>, ApiError>;

    /// Store a contract PDF (test flow)
    ///
    /// Only fetches the contract of the financing request and saves it to storage as
    /// `contracts/<financingId>.pdf`.
    #[endpoint { method = GET, path = "/__internal/leasing/request-flow/test-flow/{financingId}", tags = ["leasing"] }]
    async fn leasing_test_flow(
        rqctx: RequestContext<Self::Context>,
        path: Path<FinancingIdPath>,
    ) -> Result<HttpResponseOk<TestFlowEnvelope>, ApiError>;

    /// Read a financing request
    ///
    /// The request as the provider reports it now, with its state in `meta`.
    #[endpoint { method = GET, path = "/api/v1/leasing/{financingId}", tags = ["leasing"] }]
    async fn leasing_show(
        rqctx: RequestContext<Self::Context>,
        path: Path<FinancingIdPath>,
    ) -> Result<HttpResponseOk<RequestEnvelope>, ApiError>;

    /// Change a financing request
    ///
    /// Changes calculation fields (not the lessee). The provider refuses changes in the states
    /// Contracted, Declined and Cancelled, and a change invalidates a running e-signature.
    #[endpoint { method = PATCH, path = "/api/v1/leasing/{financingId}", tags = ["leasing"] }]
    async fn leasing_patch(
        rqctx: RequestContext<Self::Context>,
        path: Path<FinancingIdPath>,
        body: TypedBody<Documented<schema::PatchRequestPayload>>,
    ) -> Result<HttpResponseOk<RequestEnvelope>, ApiError>;

    /// Change the lessee
    #[endpoint { method = PATCH, path = "/api/v1/leasing/{financingId}/lessee", tags = ["leasing"] }]
    async fn leasing_patch_lessee(
        rqctx: RequestContext<Self::Context>,
        path: Path<FinancingIdPath>,
        body: TypedBody<Documented<schema::PatchLesseePayload>>,
    ) -> Result<HttpResponseOk<RequestEnvelope>, ApiError>;

    /// Wait until ready to sign
    ///
    /// Reads the state; while it is not `ReadyToSign`, reads it again up to `max_attempts`
    /// times, `sleep_milliseconds` apart. `MissingInfo` sends the missing-info mail and fails
    /// (`missing_info`); `Declined`, `Cancelled` fail and abort (`declined`, `cancelled`);
    /// `RunningContract`, `ContractPrinted` fail as past signing (`already_past_signing`);
    /// attempts used up fail naming the last state (`not_ready_to_sign`). The call blocks for
    /// up to `max_attempts × sleep_milliseconds`: allow a client time-out at least that long.
    #[endpoint { method = GET, path = "/api/v1/leasing/{financingId}/wait-ready-to-sign", tags = ["leasing"] }]
    async fn leasing_wait_ready_to_sign(
        rqctx: RequestContext<Self::Context>,
        path: Path<FinancingIdPath>,
        query: Query<WaitQuery>,
    ) -> Result<HttpResponseOk<RequestEnvelope>, ApiError>;

    /// E-signature configuration
    ///
    /// How many customer and partner signees the provider accepts.
    #[endpoint { method = GET, path = "/api/v1/leasing/{financingId}/e-signature/configuration", tags = ["leasing"] }]
    async fn leasing_e_signature_configuration(
        rqctx: RequestContext<Self::Context>,
        path: Path<FinancingIdPath>,
    ) -> Result<HttpResponseOk<ConfigurationEnvelope>, ApiError>;

    /// Start the e-signature
    #[endpoint { method = POST, path = "/api/v1/leasing/{financingId}/e-signature", tags = ["leasing"] }]
    async fn leasing_start_e_signature(
        rqctx: RequestContext<Self::Context>,
        path: Path<FinancingIdPath>,
        body: TypedBody<Documented<schema::ESignaturePayload>>,
    ) -> Result<HttpResponseOk<ActionEnvelope>, ApiError>;

    /// Cancel the e-signature
    #[endpoint { method = PUT, path = "/api/v1/leasing/{financingId}/cancel-e-signature", tags = ["leasing"] }]
    async fn leasing_cancel_e_signature(
        rqctx: RequestContext<Self::Context>,
        path: Path<FinancingIdPath>,
    ) -> Result<HttpResponseOk<ActionEnvelope>, ApiError>;

    /// Switch to a paper contract
    #[endpoint { method = PUT, path = "/api/v1/leasing/{financingId}/switch-to-paper-contract", tags = ["leasing"] }]
    async fn leasing_switch_to_paper_contract(
        rqctx: RequestContext<Self::Context>,
        path: Path<FinancingIdPath>,
    ) -> Result<HttpResponseOk<ActionEnvelope>, ApiError>;

    /// Contract document (base64)
    ///
    /// The contract PDF as base64 in `data.Content`. With `store_pdf=true` the PDF is also
    /// saved to storage as `contracts/<financingId>.pdf` and `stored` says where, how large
    /// and with which SHA-256.
    #[endpoint { method = GET, path = "/api/v1/leasing/{financingId}/contractdocument/base64", tags = ["leasing"] }]
    async fn leasing_contract_document(
        rqctx: RequestContext<Self::Context>,
        path: Path<FinancingIdPath>,
        query: Query<ContractDocumentQuery>,
    ) -> Result<HttpResponseOk<ContractDocumentEnvelope>, ApiError>;

    /// Contract document download link
    #[endpoint { method = POST, path = "/api/v1/leasing/{financingId}/contractdocument/link", tags = ["leasing"] }]
    async fn leasing_contract_document_link(
        rqctx: RequestContext<Self::Context>,
        path: Path<FinancingIdPath>,
    ) -> Result<HttpResponseOk<ActionEnvelope>, ApiError>;

    /// Lease calculation at the provider
    ///
    /// Calls the provider's calculation with the validated body (`FinancingAmount` > 0;
    /// without `Period` the provider answers every period it offers).
    #[endpoint { method = POST, path = "/__internal/leasing/calculate", tags = ["leasing"] }]
    async fn leasing_provider_calculation(
        rqctx: RequestContext<Self::Context>,
        body: TypedBody<Documented<schema::CalculationPayload>>,
    ) -> Result<HttpResponseOk<ActionEnvelope>, ApiError>;

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

    /// Field-report entities
    ///
    /// The mirrored entity sets with their local record counts, last sync and cursor.
    #[endpoint { method = GET, path = "/api/v1/fieldreport/show", tags = ["fieldreport"] }]
    async fn fieldreport_show(
        rqctx: RequestContext<Self::Context>,
    ) -> Result<HttpResponseOk<fieldreport::EntitiesAnswer>, ApiError>;

    /// One field-report entity
    #[endpoint { method = GET, path = "/api/v1/fieldreport/show/{entity}", tags = ["fieldreport"] }]
    async fn fieldreport_show_entity(
        rqctx: RequestContext<Self::Context>,
        path: Path<fieldreport::EntityPath>,
    ) -> Result<HttpResponseOk<fieldreport::EntityAnswer>, ApiError>;

    /// Field-report records having a field
    ///
    /// Records of the local mirror whose top-level field is set (not null), at most 500.
    #[endpoint { method = GET, path = "/api/v1/fieldreport/show/{entity}/{attribute}", tags = ["fieldreport"] }]
    async fn fieldreport_show_having(
        rqctx: RequestContext<Self::Context>,
        path: Path<fieldreport::EntityAttributePath>,
    ) -> Result<HttpResponseOk<fieldreport::FoundRecords>, ApiError>;

    /// Find field-report records by a field
    ///
    /// Records of the local mirror whose top-level field equals the value (as text), at most 500.
    #[endpoint { method = GET, path = "/api/v1/fieldreport/show/{entity}/{attribute}/{value}", tags = ["fieldreport"] }]
    async fn fieldreport_show_records(
        rqctx: RequestContext<Self::Context>,
        path: Path<fieldreport::AttributePath>,
    ) -> Result<HttpResponseOk<fieldreport::FoundRecords>, ApiError>;

    /// Sync every field-report entity
    ///
    /// Pulls every entity set from the field-report system by OData into the mirror (records
    /// newer than each set's cursor, with the set's expand relations), one set after the
    /// other, without forwarding. Answers what each sync did. With `reconcile=true` each sync
    /// is followed by a reconciling: the set's Ids are read from the field-report system and
    /// local records it no longer has are removed (those with a local change waiting for it
    /// are kept and reported). Intended for internal tooling; `integration-service fieldreport
    /// sync [--reconcile]` does the same with a progress display.
    #[endpoint { method = GET, path = "/api/v1/fieldreport/sync", tags = ["fieldreport"] }]
    async fn fieldreport_sync_all(
        rqctx: RequestContext<Self::Context>,
        query: Query<fieldreport::SyncQuery>,
    ) -> Result<HttpResponseOk<fieldreport::SyncAnswer>, ApiError>;

    /// Sync one field-report entity
    ///
    /// As `/api/v1/fieldreport/sync` for one set. 409 while another sync of it runs (on any
    /// instance sharing the database).
    #[endpoint { method = GET, path = "/api/v1/fieldreport/sync/{entity}", tags = ["fieldreport"] }]
    async fn fieldreport_sync(
        rqctx: RequestContext<Self::Context>,
        path: Path<fieldreport::EntityPath>,
        query: Query<fieldreport::SyncQuery>,
    ) -> Result<HttpResponseOk<fieldreport::SyncAnswer>, ApiError>;

    /// Initial setup (all stages)
    ///
    /// Syncs every entity set, stage by stage: 1 reference data (itemTypes, itemUnits,
    /// costCenters, tags, qualifications, users), 2 companies, contacts, products,
    /// serviceObjects, 3 serviceRequests, items, documents, timeEvents, stepListTemplates.
    #[endpoint { method = GET, path = "/api/v1/fieldreport/setup", tags = ["fieldreport"] }]
    async fn fieldreport_setup_all(
        rqctx: RequestContext<Self::Context>,
    ) -> Result<HttpResponseOk<fieldreport::SyncAnswer>, ApiError>;

    /// Initial setup of one stage
    #[endpoint { method = GET, path = "/api/v1/fieldreport/setup/{stage}", tags = ["fieldreport"] }]
    async fn fieldreport_setup(
        rqctx: RequestContext<Self::Context>,
        path: Path<fieldreport::StagePath>,
    ) -> Result<HttpResponseOk<fieldreport::SyncAnswer>, ApiError>;

    /// Push internal writes (all)
    ///
    /// Sends the records written without forwarding (e.g. by ERP webhooks) to the field-report
    /// system: `create` ones by POST, `update` ones by PUT, local deletes by DELETE (a record
    /// the upstream no longer has counts as done). Each is marked as soon as the upstream
    /// accepted it, so a rerun sends nothing twice; refusals are reported per record and the
    /// batch goes on.
    #[endpoint { method = GET, path = "/api/v1/fieldreport/post", tags = ["fieldreport"] }]
    async fn fieldreport_post_all(
        rqctx: RequestContext<Self::Context>,
    ) -> Result<HttpResponseOk<fieldreport::PushAnswer>, ApiError>;

    /// Push internal writes of a stage
    #[endpoint { method = GET, path = "/api/v1/fieldreport/post/{stage}", tags = ["fieldreport"] }]
    async fn fieldreport_post_stage(
        rqctx: RequestContext<Self::Context>,
        path: Path<fieldreport::StagePath>,
    ) -> Result<HttpResponseOk<fieldreport::PushAnswer>, ApiError>;

    /// Push internal writes of a stage and type
    #[endpoint { method = GET, path = "/api/v1/fieldreport/post/{stage}/{type}", tags = ["fieldreport"] }]
    async fn fieldreport_post_type(
        rqctx: RequestContext<Self::Context>,
        path: Path<fieldreport::StageTypePath>,
    ) -> Result<HttpResponseOk<fieldreport::PushAnswer>, ApiError>;

    /// Push internal writes of one entity
    #[endpoint { method = GET, path = "/api/v1/fieldreport/post/{stage}/{type}/{entity}", tags = ["fieldreport"] }]
    async fn fieldreport_post(
        rqctx: RequestContext<Self::Context>,
        path: Path<fieldreport::StageTypeEntityPath>,
    ) -> Result<HttpResponseOk<fieldreport::PushAnswer>, ApiError>;

    /// Receive an ERP webhook (GET)
    ///
    /// The ERP calls this when a watched record is created, changed or deleted, with the entity
    /// name, the record id and the event in the query. Not token-guarded: only calls from an
    /// address in `ERP_WEBHOOK_ALLOWLIST` are admitted (403 otherwise; behind a proxy listed in
    /// `TRUSTED_PROXIES` the address comes from `X-Forwarded-For`), and with
    /// `ERP_WEBHOOK_SECRET` set the call must carry it as `?secret=` or `X-Webhook-Secret`
    /// (401 otherwise). The call is stored before the 202 answer and processed afterwards:
    /// the record is fetched from the ERP by id, the mirror updated (or the record removed),
    /// and mapped records (customer → companies, contact → contacts, article → products) are
    /// written to the field-report mirror without forwarding. Repeated deliveries change
    /// nothing; failed processing is retried with back-off (see `GET /api/v1/erp/show`).
    #[endpoint { method = GET, path = "/api/v1/erp/webhooks", tags = ["erp"] }]
    async fn erp_webhook_get(
        rqctx: RequestContext<Self::Context>,
        query: Query<erp::WebhookQuery>,
    ) -> Result<HttpResponseAccepted<erp::WebhookAccepted>, ApiError>;

    /// Receive an ERP webhook (POST)
    ///
    /// As the GET form, with the entity name, id and event in a JSON body
    /// (`{"entityName", "entityId", "type"}`; the variants `entity_name`, `id`, `entity.id`,
    /// `event`, `action` are accepted too).
    #[endpoint { method = POST, path = "/api/v1/erp/webhooks", tags = ["erp"] }]
    async fn erp_webhook_post(
        rqctx: RequestContext<Self::Context>,
        query: Query<erp::WebhookSecretQuery>,
        body: TypedBody<Documented<erp::WebhookPayload>>,
    ) -> Result<HttpResponseAccepted<erp::WebhookAccepted>, ApiError>;

    /// ERP mirror overview
    ///
    /// Every ERP model with its local record count, pull cursor and last complete pull, and
    /// the webhook inbox: counts by state and the calls not done yet (with their attempts and
    /// last error), then the newest processed ones.
    #[endpoint { method = GET, path = "/api/v1/erp/show", tags = ["erp"] }]
    async fn erp_show(rqctx: RequestContext<Self::Context>) -> Result<HttpResponseOk<erp::ErpOverview>, ApiError>;

    /// Mirrored records of an ERP model
    ///
    /// The model's records as stored locally, ordered by id, `per_page` (1 to 500, default
    /// 50) per page.
    #[endpoint { method = GET, path = "/api/v1/erp/show/{model}", tags = ["erp"] }]
    async fn erp_show_model(
        rqctx: RequestContext<Self::Context>,
        path: Path<erp::ModelPath>,
        query: Query<fieldreport::PageQuery>,
    ) -> Result<HttpResponseOk<erp::ErpRecordPage>, ApiError>;

    /// One mirrored ERP record
    #[endpoint { method = GET, path = "/api/v1/erp/show/{model}/{entity}", tags = ["erp"] }]
    async fn erp_show_record(
        rqctx: RequestContext<Self::Context>,
        path: Path<erp::ModelRecordPath>,
    ) -> Result<HttpResponseOk<serde_json::Map<String, serde_json::Value>>, ApiError>;

    /// Find mirrored ERP records by a field
    ///
    /// Records whose top-level field `entity` equals `value` (compared as text), at most 500.
    #[endpoint { method = GET, path = "/api/v1/erp/show/{model}/{entity}/{value}", tags = ["erp"] }]
    async fn erp_show_matching(
        rqctx: RequestContext<Self::Context>,
        path: Path<erp::ModelFieldValuePath>,
    ) -> Result<HttpResponseOk<erp::ErpRecords>, ApiError>;

    /// Full pull of every ERP model
    ///
    /// Pulls every record of every model of the registry (pages of 1000) into the mirror and
    /// removes local records the ERP no longer has. A model that fails is reported in its own
    /// entry and the others go on. `integration-service erp setup` does the same with a
    /// progress display.
    #[endpoint { method = GET, path = "/api/v1/erp/setup", tags = ["erp"] }]
    async fn erp_setup_all(rqctx: RequestContext<Self::Context>) -> Result<HttpResponseOk<erp::PullAnswer>, ApiError>;

    /// Full pull of one ERP model
    ///
    /// As `/api/v1/erp/setup` for one model. 409 while another pull of it runs.
    #[endpoint { method = GET, path = "/api/v1/erp/setup/{model}", tags = ["erp"] }]
    async fn erp_setup(
        rqctx: RequestContext<Self::Context>,
        path: Path<erp::ModelPath>,
    ) -> Result<HttpResponseOk<erp::PullAnswer>, ApiError>;

    /// Incremental pull of every ERP model
    ///
    /// Pulls the records of each model changed since its cursor (`lastModifiedDate-gt=`;
    /// everything on a model's first pull) and moves the cursor when the pull completes.
    /// `integration-service erp pull` does the same with a progress display.
    #[endpoint { method = GET, path = "/api/v1/erp/get", tags = ["erp"] }]
    async fn erp_get(rqctx: RequestContext<Self::Context>) -> Result<HttpResponseOk<erp::PullAnswer>, ApiError>;

    /// Refresh every mirrored ERP model
    ///
    /// Pulls every model that has local records completely again (removing records the ERP
    /// no longer has).
    #[endpoint { method = GET, path = "/api/v1/erp/update", tags = ["erp"] }]
    async fn erp_update_all(rqctx: RequestContext<Self::Context>) -> Result<HttpResponseOk<erp::PullAnswer>, ApiError>;

    /// Refresh one ERP model
    #[endpoint { method = GET, path = "/api/v1/erp/update/{model}", tags = ["erp"] }]
    async fn erp_update_model(
        rqctx: RequestContext<Self::Context>,
        path: Path<erp::ModelPath>,
    ) -> Result<HttpResponseOk<erp::PullAnswer>, ApiError>;

    /// Refresh one ERP record
    ///
    /// Fetches the record by id and stores it; removes it locally when the ERP no longer has
    /// it (404 when neither has it).
    #[endpoint { method = GET, path = "/api/v1/erp/update/{model}/{entity}", tags = ["erp"] }]
    async fn erp_update_record(
        rqctx: RequestContext<Self::Context>,
        path: Path<erp::ModelRecordPath>,
    ) -> Result<HttpResponseOk<erp::PullAnswer>, ApiError>;

    /// Refresh ERP records matching a field
    ///
    /// Fetches the model's records whose field `entity` equals `value` (`<entity>-eq=<value>`)
    /// and stores them.
    #[endpoint { method = GET, path = "/api/v1/erp/update/{model}/{entity}/{value}", tags = ["erp"] }]
    async fn erp_update_matching(
        rqctx: RequestContext<Self::Context>,
        path: Path<erp::ModelFieldValuePath>,
    ) -> Result<HttpResponseOk<erp::PullAnswer>, ApiError>;

    /// Pull custom attributes of an ERP model
    ///
    /// Pulls every `customAttributeDefinition` and the model's records (with their
    /// `customAttributes` values) into the mirror. Values changed locally and not pushed yet
    /// are kept.
    #[endpoint { method = GET, path = "/api/v1/erp/entityPullAttr/{model}", tags = ["erp"] }]
    async fn erp_pull_attributes(
        rqctx: RequestContext<Self::Context>,
        path: Path<erp::ModelPath>,
    ) -> Result<HttpResponseOk<erp::AttributePullAnswer>, ApiError>;

    /// Pull one custom attribute of an ERP model
    ///
    /// As `entityPullAttr/{model}`, counting the values of one definition (its
    /// `attributeKey` or id; 404 listing the model's keys when unknown).
    #[endpoint { method = GET, path = "/api/v1/erp/entityPullAttr/{model}/{attribute}", tags = ["erp"] }]
    async fn erp_pull_attribute(
        rqctx: RequestContext<Self::Context>,
        path: Path<erp::ModelAttributePath>,
    ) -> Result<HttpResponseOk<erp::AttributePullAnswer>, ApiError>;

    /// Push custom attributes of an ERP model
    ///
    /// Sends the locally changed custom attribute values of the model's records back to the
    /// ERP (`PUT /<model>/id/{id}?ignoreMissingProperties=true` with the mirrored `version`).
    /// A record changed in the ERP since it was pulled is refused by the ERP and reported as a
    /// conflict; its values stay pending.
    #[endpoint { method = GET, path = "/api/v1/erp/entityPushAttr/{model}", tags = ["erp"] }]
    async fn erp_push_attributes(
        rqctx: RequestContext<Self::Context>,
        path: Path<erp::ModelPath>,
    ) -> Result<HttpResponseOk<erp::AttributePushAnswer>, ApiError>;

    /// Push one custom attribute of an ERP model
    ///
    /// As `entityPushAttr/{model}`, for the records with a pending value of one definition.
    #[endpoint { method = GET, path = "/api/v1/erp/entityPushAttr/{model}/{attribute}", tags = ["erp"] }]
    async fn erp_push_attribute(
        rqctx: RequestContext<Self::Context>,
        path: Path<erp::ModelAttributePath>,
    ) -> Result<HttpResponseOk<erp::AttributePushAnswer>, ApiError>;

    /// Post mapped ERP records to the field-report system
    ///
    /// Runs the ERP → field-report mapping (customer → companies, contact → contacts,
    /// article → products) over the mirror and writes the records with forwarding: created
    /// upstream when new, updated when the mapping changes something. After a create the
    /// field-report Id is set on the ERP record's `fieldReportId` custom attribute (when the
    /// ERP defines it), pending `entityPushAttr`. Failures are reported per record.
    #[endpoint { method = GET, path = "/api/v1/erp/fieldReportPost", tags = ["erp"] }]
    async fn erp_field_report_post_all(
        rqctx: RequestContext<Self::Context>,
        query: Query<erp::PostQuery>,
    ) -> Result<HttpResponseOk<erp::PostAnswer>, ApiError>;

    /// Post one model's mapped records to the field-report system
    ///
    /// As `fieldReportPost` for one mapped model (`customer`, `contact`, `article`); with
    /// `?id=` for one record.
    #[endpoint { method = GET, path = "/api/v1/erp/fieldReportPost/{request}", tags = ["erp"] }]
    async fn erp_field_report_post(
        rqctx: RequestContext<Self::Context>,
        path: Path<erp::PostPath>,
        query: Query<erp::PostQuery>,
    ) -> Result<HttpResponseOk<erp::PostAnswer>, ApiError>;

    /// A constant answer, for `cargo xtask bench`'s baseline: the cost of the HTTP stack
    /// alone (front and dropshot), with no authentication and no database.
    #[endpoint { method = GET, path = "/bench/constant", tags = ["operations"], unpublished = true }]
    async fn bench_constant(rqctx: RequestContext<Self::Context>) -> Result<HttpResponseOk<Health>, ApiError>;

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

    /// Metrics
    ///
    /// The service's metrics in the Prometheus text exposition format (version 0.0.4):
    /// requests per operation and status, upstream calls per system and outcome (both with
    /// latency histograms), leasing flow outcomes by `error_code`, the ERP webhook inbox and
    /// the field-report push queue, database pool usage, start time and version. When the
    /// service sets `METRICS_TOKEN`, send it as `Authorization: Bearer <METRICS_TOKEN>`;
    /// otherwise the route is open.
    #[endpoint { method = GET, path = "/metrics", tags = ["operations"] }]
    async fn metrics(rqctx: RequestContext<Self::Context>) -> Result<Response<Body>, ApiError>;

    /// The API reference page (served at `/{DOCS_PATH}/`). Not an API operation: HTML for
    /// people, at a configurable path.
    #[endpoint { method = GET, path = "/__internal/docs/page/folder", tags = ["operations"], unpublished = true }]
    async fn docs_page(rqctx: RequestContext<Self::Context>) -> Result<Response<Body>, ApiError>;

    /// The API reference page (served at `/{DOCS_PATH}`).
    #[endpoint { method = GET, path = "/__internal/docs/page/bare", tags = ["operations"], unpublished = true }]
    async fn docs_page_bare(rqctx: RequestContext<Self::Context>) -> Result<Response<Body>, ApiError>;

    /// The reference page's scripts, styles and icon (served at `/{DOCS_PATH}/assets/{file}`).
    #[endpoint { method = GET, path = "/__internal/docs/assets/{file}", tags = ["operations"], unpublished = true }]
    async fn docs_asset(
        rqctx: RequestContext<Self::Context>,
        path: Path<docs_page::AssetPath>,
    ) -> Result<Response<Body>, ApiError>;
}

/// The implementation of [`IntegrationApi`]: each method delegates to its area's handler.
pub enum Service {}

impl IntegrationApi for Service {
    async fn erp_webhook_get(
        rqctx: RequestContext<ApiContext>,
        query: Query<erp::WebhookQuery>,
    ) -> Result<HttpResponseAccepted<erp::WebhookAccepted>, ApiError> {
        erp::webhook_get(&rqctx, query.into_inner()).await
    }

    async fn erp_webhook_post(
        rqctx: RequestContext<ApiContext>,
        query: Query<erp::WebhookSecretQuery>,
        body: TypedBody<Documented<erp::WebhookPayload>>,
    ) -> Result<HttpResponseAccepted<erp::WebhookAccepted>, ApiError> {
        erp::webhook_post(&rqctx, query.into_inner().secret, body.into_inner().into_inner()).await
    }

    async fn erp_show(rqctx: RequestContext<ApiContext>) -> Result<HttpResponseOk<erp::ErpOverview>, ApiError> {
        erp::show(&rqctx).await
    }

    async fn erp_show_model(
        rqctx: RequestContext<ApiContext>,
        path: Path<erp::ModelPath>,
        query: Query<fieldreport::PageQuery>,
    ) -> Result<HttpResponseOk<erp::ErpRecordPage>, ApiError> {
        erp::show_model(&rqctx, &path.into_inner().model, query.into_inner()).await
    }

    async fn erp_show_record(
        rqctx: RequestContext<ApiContext>,
        path: Path<erp::ModelRecordPath>,
    ) -> Result<HttpResponseOk<serde_json::Map<String, serde_json::Value>>, ApiError> {
        let path = path.into_inner();
        erp::show_record(&rqctx, &path.model, &path.entity).await
    }

    async fn erp_show_matching(
        rqctx: RequestContext<ApiContext>,
        path: Path<erp::ModelFieldValuePath>,
    ) -> Result<HttpResponseOk<erp::ErpRecords>, ApiError> {
        let path = path.into_inner();
        erp::show_matching(&rqctx, &path.model, &path.entity, &path.value).await
    }

    async fn erp_setup_all(rqctx: RequestContext<ApiContext>) -> Result<HttpResponseOk<erp::PullAnswer>, ApiError> {
        erp::pull(&rqctx, None, PullKind::Full).await
    }

    async fn erp_setup(
        rqctx: RequestContext<ApiContext>,
        path: Path<erp::ModelPath>,
    ) -> Result<HttpResponseOk<erp::PullAnswer>, ApiError> {
        erp::pull(&rqctx, Some(&path.into_inner().model), PullKind::Full).await
    }

    async fn erp_get(rqctx: RequestContext<ApiContext>) -> Result<HttpResponseOk<erp::PullAnswer>, ApiError> {
        erp::pull(&rqctx, None, PullKind::Incremental).await
    }

    async fn erp_update_all(rqctx: RequestContext<ApiContext>) -> Result<HttpResponseOk<erp::PullAnswer>, ApiError> {
        erp::update_mirrored(&rqctx).await
    }

    async fn erp_update_model(
        rqctx: RequestContext<ApiContext>,
        path: Path<erp::ModelPath>,
    ) -> Result<HttpResponseOk<erp::PullAnswer>, ApiError> {
        erp::pull(&rqctx, Some(&path.into_inner().model), PullKind::Full).await
    }

    async fn erp_update_record(
        rqctx: RequestContext<ApiContext>,
        path: Path<erp::ModelRecordPath>,
    ) -> Result<HttpResponseOk<erp::PullAnswer>, ApiError> {
        let path = path.into_inner();
        erp::update_record(&rqctx, &path.model, &path.entity).await
    }

    async fn erp_update_matching(
        rqctx: RequestContext<ApiContext>,
        path: Path<erp::ModelFieldValuePath>,
    ) -> Result<HttpResponseOk<erp::PullAnswer>, ApiError> {
        let path = path.into_inner();
        erp::pull(&rqctx, Some(&path.model), PullKind::Matching { field: path.entity, value: path.value }).await
    }

    async fn erp_pull_attributes(
        rqctx: RequestContext<ApiContext>,
        path: Path<erp::ModelPath>,
    ) -> Result<HttpResponseOk<erp::AttributePullAnswer>, ApiError> {
        erp::pull_attributes(&rqctx, &path.into_inner().model, None).await
    }

    async fn erp_pull_attribute(
        rqctx: RequestContext<ApiContext>,
        path: Path<erp::ModelAttributePath>,
    ) -> Result<HttpResponseOk<erp::AttributePullAnswer>, ApiError> {
        let path = path.into_inner();
        erp::pull_attributes(&rqctx, &path.model, Some(&path.attribute)).await
    }

    async fn erp_push_attributes(
        rqctx: RequestContext<ApiContext>,
        path: Path<erp::ModelPath>,
    ) -> Result<HttpResponseOk<erp::AttributePushAnswer>, ApiError> {
        erp::push_attributes(&rqctx, &path.into_inner().model, None).await
    }

    async fn erp_push_attribute(
        rqctx: RequestContext<ApiContext>,
        path: Path<erp::ModelAttributePath>,
    ) -> Result<HttpResponseOk<erp::AttributePushAnswer>, ApiError> {
        let path = path.into_inner();
        erp::push_attributes(&rqctx, &path.model, Some(&path.attribute)).await
    }

    async fn erp_field_report_post_all(
        rqctx: RequestContext<ApiContext>,
        query: Query<erp::PostQuery>,
    ) -> Result<HttpResponseOk<erp::PostAnswer>, ApiError> {
        erp::field_report_post(&rqctx, None, query.into_inner()).await
    }

    async fn erp_field_report_post(
        rqctx: RequestContext<ApiContext>,
        path: Path<erp::PostPath>,
        query: Query<erp::PostQuery>,
    ) -> Result<HttpResponseOk<erp::PostAnswer>, ApiError> {
        erp::field_report_post(&rqctx, Some(&path.into_inner().request), query.into_inner()).await
    }
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

    async fn leasing_create(
        rqctx: RequestContext<ApiContext>,
        headers: Header<IdempotencyHeader>,
        body: TypedBody<Documented<schema::FinancingRequestPayload>>,
    ) -> Result<HttpResponseCreated<RequestEnvelope>, ApiError> {
        leasing::create(&rqctx, headers.into_inner().idempotency_key, body.into_inner().into_inner()).await
    }

    async fn leasing_request_flow(
        rqctx: RequestContext<ApiContext>,
        headers: Header<IdempotencyHeader>,
        body: TypedBody<FlowRequest>,
    ) -> Result<HttpResponseOk<FlowEnvelope>, ApiError> {
        leasing::run_flow(&rqctx, headers.into_inner().idempotency_key, body.into_inner()).await
    }

    async fn leasing_request_flow_health(
        rqctx: RequestContext<ApiContext>,
    ) -> Result<HttpResponseOk<FlowHealth>, ApiError> {
        leasing::flow_health(&rqctx).await
    }

    async fn leasing_test_flow(
        rqctx: RequestContext<ApiContext>,
        path: Path<FinancingIdPath>,
    ) -> Result<HttpResponseOk<TestFlowEnvelope>, ApiError> {
        leasing::test_flow(&rqctx, &path.into_inner().financing_id).await
    }

    async fn leasing_show(
        rqctx: RequestContext<ApiContext>,
        path: Path<FinancingIdPath>,
    ) -> Result<HttpResponseOk<RequestEnvelope>, ApiError> {
        leasing::show(&rqctx, &path.into_inner().financing_id).await
    }

    async fn leasing_patch(
        rqctx: RequestContext<ApiContext>,
        path: Path<FinancingIdPath>,
        body: TypedBody<Documented<schema::PatchRequestPayload>>,
    ) -> Result<HttpResponseOk<RequestEnvelope>, ApiError> {
        leasing::patch_request(&rqctx, &path.into_inner().financing_id, body.into_inner().into_inner()).await
    }

    async fn leasing_patch_lessee(
        rqctx: RequestContext<ApiContext>,
        path: Path<FinancingIdPath>,
        body: TypedBody<Documented<schema::PatchLesseePayload>>,
    ) -> Result<HttpResponseOk<RequestEnvelope>, ApiError> {
        leasing::patch_lessee(&rqctx, &path.into_inner().financing_id, body.into_inner().into_inner()).await
    }

    // Not an `async fn`: the future of a held call is `leasing::wait_ready_to_sign`'s own,
    // without a wrapper around it holding the request context a second time.
    fn leasing_wait_ready_to_sign(
        rqctx: RequestContext<ApiContext>,
        path: Path<FinancingIdPath>,
        query: Query<WaitQuery>,
    ) -> impl Future<Output = Result<HttpResponseOk<RequestEnvelope>, ApiError>> + Send + 'static {
        leasing::wait_ready_to_sign(rqctx, path.into_inner().financing_id, query.into_inner())
    }

    async fn leasing_e_signature_configuration(
        rqctx: RequestContext<ApiContext>,
        path: Path<FinancingIdPath>,
    ) -> Result<HttpResponseOk<ConfigurationEnvelope>, ApiError> {
        leasing::e_signature_configuration(&rqctx, &path.into_inner().financing_id).await
    }

    async fn leasing_start_e_signature(
        rqctx: RequestContext<ApiContext>,
        path: Path<FinancingIdPath>,
        body: TypedBody<Documented<schema::ESignaturePayload>>,
    ) -> Result<HttpResponseOk<ActionEnvelope>, ApiError> {
        leasing::start_e_signature(&rqctx, &path.into_inner().financing_id, body.into_inner().into_inner()).await
    }

    async fn leasing_cancel_e_signature(
        rqctx: RequestContext<ApiContext>,
        path: Path<FinancingIdPath>,
    ) -> Result<HttpResponseOk<ActionEnvelope>, ApiError> {
        leasing::cancel_e_signature(&rqctx, &path.into_inner().financing_id).await
    }

    async fn leasing_switch_to_paper_contract(
        rqctx: RequestContext<ApiContext>,
        path: Path<FinancingIdPath>,
    ) -> Result<HttpResponseOk<ActionEnvelope>, ApiError> {
        leasing::switch_to_paper_contract(&rqctx, &path.into_inner().financing_id).await
    }

    async fn leasing_contract_document(
        rqctx: RequestContext<ApiContext>,
        path: Path<FinancingIdPath>,
        query: Query<ContractDocumentQuery>,
    ) -> Result<HttpResponseOk<ContractDocumentEnvelope>, ApiError> {
        let store_pdf = query.into_inner().store_pdf.value("store_pdf").map_err(ApiError::leasing)?;
        leasing::contract_document(&rqctx, &path.into_inner().financing_id, store_pdf).await
    }

    async fn leasing_contract_document_link(
        rqctx: RequestContext<ApiContext>,
        path: Path<FinancingIdPath>,
    ) -> Result<HttpResponseOk<ActionEnvelope>, ApiError> {
        leasing::contract_document_link(&rqctx, &path.into_inner().financing_id).await
    }

    async fn leasing_provider_calculation(
        rqctx: RequestContext<ApiContext>,
        body: TypedBody<Documented<schema::CalculationPayload>>,
    ) -> Result<HttpResponseOk<ActionEnvelope>, ApiError> {
        leasing::provider_calculation(&rqctx, body.into_inner().into_inner()).await
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

    async fn fieldreport_show(
        rqctx: RequestContext<ApiContext>,
    ) -> Result<HttpResponseOk<fieldreport::EntitiesAnswer>, ApiError> {
        fieldreport::show_entities(&rqctx).await
    }

    async fn fieldreport_show_entity(
        rqctx: RequestContext<ApiContext>,
        path: Path<fieldreport::EntityPath>,
    ) -> Result<HttpResponseOk<fieldreport::EntityAnswer>, ApiError> {
        fieldreport::show_entity(&rqctx, &path.into_inner().entity).await
    }

    async fn fieldreport_show_records(
        rqctx: RequestContext<ApiContext>,
        path: Path<fieldreport::AttributePath>,
    ) -> Result<HttpResponseOk<fieldreport::FoundRecords>, ApiError> {
        let path = path.into_inner();
        fieldreport::show_records(&rqctx, &path.entity, &path.attribute, Some(&path.value)).await
    }

    async fn fieldreport_show_having(
        rqctx: RequestContext<ApiContext>,
        path: Path<fieldreport::EntityAttributePath>,
    ) -> Result<HttpResponseOk<fieldreport::FoundRecords>, ApiError> {
        let path = path.into_inner();
        fieldreport::show_records(&rqctx, &path.entity, &path.attribute, None).await
    }

    async fn fieldreport_sync_all(
        rqctx: RequestContext<ApiContext>,
        query: Query<fieldreport::SyncQuery>,
    ) -> Result<HttpResponseOk<fieldreport::SyncAnswer>, ApiError> {
        fieldreport::sync(&rqctx, None, query.into_inner()).await
    }

    async fn fieldreport_sync(
        rqctx: RequestContext<ApiContext>,
        path: Path<fieldreport::EntityPath>,
        query: Query<fieldreport::SyncQuery>,
    ) -> Result<HttpResponseOk<fieldreport::SyncAnswer>, ApiError> {
        fieldreport::sync(&rqctx, Some(&path.into_inner().entity), query.into_inner()).await
    }

    async fn fieldreport_setup_all(
        rqctx: RequestContext<ApiContext>,
    ) -> Result<HttpResponseOk<fieldreport::SyncAnswer>, ApiError> {
        fieldreport::setup(&rqctx, None).await
    }

    async fn fieldreport_setup(
        rqctx: RequestContext<ApiContext>,
        path: Path<fieldreport::StagePath>,
    ) -> Result<HttpResponseOk<fieldreport::SyncAnswer>, ApiError> {
        fieldreport::setup(&rqctx, Some(&path.into_inner().stage)).await
    }

    async fn fieldreport_post_all(
        rqctx: RequestContext<ApiContext>,
    ) -> Result<HttpResponseOk<fieldreport::PushAnswer>, ApiError> {
        fieldreport::post(&rqctx, None, None, None).await
    }

    async fn fieldreport_post_stage(
        rqctx: RequestContext<ApiContext>,
        path: Path<fieldreport::StagePath>,
    ) -> Result<HttpResponseOk<fieldreport::PushAnswer>, ApiError> {
        fieldreport::post(&rqctx, Some(&path.into_inner().stage), None, None).await
    }

    async fn fieldreport_post_type(
        rqctx: RequestContext<ApiContext>,
        path: Path<fieldreport::StageTypePath>,
    ) -> Result<HttpResponseOk<fieldreport::PushAnswer>, ApiError> {
        let path = path.into_inner();
        fieldreport::post(&rqctx, Some(&path.stage), Some(&path.r#type), None).await
    }

    async fn fieldreport_post(
        rqctx: RequestContext<ApiContext>,
        path: Path<fieldreport::StageTypeEntityPath>,
    ) -> Result<HttpResponseOk<fieldreport::PushAnswer>, ApiError> {
        let path = path.into_inner();
        fieldreport::post(&rqctx, Some(&path.stage), Some(&path.r#type), Some(&path.entity)).await
    }

    async fn bench_constant(_rqctx: RequestContext<ApiContext>) -> Result<HttpResponseOk<Health>, ApiError> {
        Ok(HttpResponseOk(Health { status: "ok".into() }))
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

    async fn metrics(rqctx: RequestContext<ApiContext>) -> Result<Response<Body>, ApiError> {
        operations::metrics(&rqctx).await
    }

    async fn docs_page(rqctx: RequestContext<ApiContext>) -> Result<Response<Body>, ApiError> {
        docs_page::page(&rqctx, docs_page::PageForm::InFolder)
    }

    async fn docs_page_bare(rqctx: RequestContext<ApiContext>) -> Result<Response<Body>, ApiError> {
        docs_page::page(&rqctx, docs_page::PageForm::Bare)
    }

    async fn docs_asset(
        rqctx: RequestContext<ApiContext>,
        path: Path<docs_page::AssetPath>,
    ) -> Result<Response<Body>, ApiError> {
        docs_page::asset(&rqctx, &path.into_inner().file)
    }
}

/// The API wired to its implementation: the trait's endpoints plus the per-entity
/// field-report endpoints. The document is generated from this same description.
pub fn description() -> dropshot::ApiDescription<ApiContext> {
    let mut api = integration_api_mod::api_description::<Service>().expect("the API description is valid");
    fieldreport::register(&mut api).expect("the field-report endpoints register");
    api
}
