//! The service's HTTP API: its endpoints, the description that registers them, and the
//! document.
//!
//! A route lives in one place: one `#[dropshot::endpoint]` function in its area's module or
//! folder (`auth`, `leasing/`, `fieldreport/`, `erp/`, `jobs`, `operations`, `docs_page/`), with the public path
//! in its attribute, its doc comment as the document's summary (first line) and description
//! (the rest), and the handler body; plus one line in [`description`]. A route that needs a
//! bearer token says so in its signature: it takes a [`support::guard::BearerToken`] right after the
//! request context, and the document's `security` follows from that (see [`support::openapi`]).
//! Functions that several endpoints share (`erp::pull::pull`, `fieldreport::tools::post`,
//! `leasing::calculate::calculate`, …) stay helpers of the module. What the routes of every area
//! share, and no route of its own, is in [`support`].
//!
//! They are free functions rather than the methods of a dropshot API trait because such a
//! trait cannot be split across files (every method sits in the one trait definition), and
//! the `ApiDescription` it builds cannot be merged with another; the per-entity field-report
//! endpoints ([`fieldreport::entities::register`]) have to join the same description anyway.

pub mod auth;
pub mod docs_page;
pub mod erp;
pub mod fieldreport;
pub mod jobs;
pub mod leasing;
pub mod operations;
pub mod support;

use dropshot::{ApiDescription, ApiEndpoint, EndpointTagPolicy, TagConfig, TagDetails};

pub use support::context::ApiContext;

/// Internal path of the document; the front maps `/{DOCS_PATH}/openapi.json` onto it.
pub const OPENAPI_INTERNAL_PATH: &str = "/__internal/docs/openapi.json";

/// The tags of the document: every operation has exactly one of them.
const TAGS: &[(&str, &str)] = &[
    ("auth", "Login, logout and the current user (personal access tokens)."),
    (
        "erp",
        "The ERP's webhooks, the local mirror of its models, helper routes for sync tooling, and the ERP → field-report mapping.",
    ),
    (
        "fieldreport",
        "The local mirror of the field-report system's 15 entity types; writes are forwarded to the upstream.",
    ),
    (
        "jobs",
        "Long work (field-report syncs, setups, posts; ERP pulls) queued and followed by id, with progress, history and cancellation.",
    ),
    ("leasing", "Financing requests at the leasing provider, the one-shot request flow, and lease calculations."),
    ("operations", "Liveness and readiness probes and metrics for operators and orchestrators."),
];

/// The API: every endpoint, plus the per-entity field-report endpoints. The document is
/// generated from this same description.
pub fn description() -> ApiDescription<ApiContext> {
    let tags = TAGS
        .iter()
        .map(|(name, description)| {
            (name.to_string(), TagDetails { description: Some(description.to_string()), external_docs: None })
        })
        .collect();
    let mut api = ApiDescription::new().tag_config(TagConfig {
        allow_other_tags: false,
        policy: EndpointTagPolicy::ExactlyOne,
        tags,
    });
    let endpoints: Vec<ApiEndpoint<ApiContext>> = vec![
        auth::login.into(),
        auth::logout.into(),
        auth::current_user.into(),
        leasing::requests::leasing_create.into(),
        leasing::flow::leasing_request_flow.into(),
        leasing::flow::leasing_request_flow_health.into(),
        leasing::flow::leasing_request_flow_show.into(),
        leasing::flow::leasing_test_flow.into(),
        leasing::requests::leasing_show.into(),
        leasing::requests::leasing_patch.into(),
        leasing::requests::leasing_patch_lessee.into(),
        leasing::requests::leasing_wait_ready_to_sign.into(),
        leasing::requests::leasing_e_signature_configuration.into(),
        leasing::requests::leasing_start_e_signature.into(),
        leasing::requests::leasing_cancel_e_signature.into(),
        leasing::requests::leasing_switch_to_paper_contract.into(),
        leasing::requests::leasing_contract_document.into(),
        leasing::requests::leasing_contract_document_link.into(),
        leasing::calculate::leasing_provider_calculation.into(),
        leasing::calculate::leasing_calculate_default.into(),
        leasing::calculate::leasing_calculate_instalment.into(),
        leasing::calculate::leasing_calculate.into(),
        leasing::watch::leasing_subscription_create.into(),
        leasing::watch::leasing_subscription_list.into(),
        leasing::watch::leasing_subscription_show.into(),
        leasing::watch::leasing_subscription_delete.into(),
        leasing::watch::leasing_subscription_rotate_secret.into(),
        leasing::deliveries::leasing_subscription_deliveries.into(),
        leasing::deliveries::leasing_subscription_delivery_retry.into(),
        leasing::watch::leasing_watch.into(),
        fieldreport::tools::fieldreport_show.into(),
        fieldreport::tools::fieldreport_show_entity.into(),
        fieldreport::tools::fieldreport_show_having.into(),
        fieldreport::tools::fieldreport_show_records.into(),
        fieldreport::tools::fieldreport_sync_all.into(),
        fieldreport::tools::fieldreport_sync.into(),
        fieldreport::tools::fieldreport_setup_all.into(),
        fieldreport::tools::fieldreport_setup.into(),
        fieldreport::tools::fieldreport_post_all.into(),
        fieldreport::tools::fieldreport_post_stage.into(),
        fieldreport::tools::fieldreport_post_type.into(),
        fieldreport::tools::fieldreport_post.into(),
        erp::webhooks::erp_webhook_get.into(),
        erp::webhooks::erp_webhook_post.into(),
        erp::mirror::erp_show.into(),
        erp::mirror::erp_show_model.into(),
        erp::mirror::erp_show_record.into(),
        erp::mirror::erp_show_matching.into(),
        erp::pull::erp_setup_all.into(),
        erp::pull::erp_setup.into(),
        erp::pull::erp_get.into(),
        erp::pull::erp_update_all.into(),
        erp::pull::erp_update_model.into(),
        erp::pull::erp_update_record.into(),
        erp::pull::erp_update_matching.into(),
        erp::pull::erp_pull_attributes.into(),
        erp::pull::erp_pull_one_attribute.into(),
        erp::pull::erp_push_attributes.into(),
        erp::pull::erp_push_one_attribute.into(),
        erp::post::erp_field_report_post_all.into(),
        erp::post::erp_field_report_post.into(),
        erp::feed::erp_changes.into(),
        erp::feed::erp_export.into(),
        jobs::jobs_create.into(),
        jobs::jobs_list.into(),
        jobs::jobs_show.into(),
        jobs::jobs_cancel.into(),
        operations::bench_constant.into(),
        operations::healthz.into(),
        operations::readyz.into(),
        operations::openapi_document.into(),
        operations::metrics.into(),
        docs_page::docs_page.into(),
        docs_page::docs_page_bare.into(),
        docs_page::docs_asset.into(),
    ];
    for endpoint in endpoints {
        api.register(endpoint).expect("the API description is valid");
    }
    fieldreport::entities::register(&mut api).expect("the field-report endpoints register");
    fieldreport::feed::register(&mut api).expect("the field-report feeds register");
    api
}
