//! The service's HTTP API: its endpoints, the description that registers them, and the
//! document.
//!
//! A route lives in one place: one `#[dropshot::endpoint]` function in its area's module
//! (`auth`, `leasing`, `fieldreport`, `erp`, `jobs`, `operations`, `docs_page`), with the public path
//! in its attribute, its doc comment as the document's summary (first line) and description
//! (the rest), and the handler body; plus one line in [`description`]. A route that needs a
//! bearer token says so in its signature: it takes a [`guard::BearerToken`] right after the
//! request context, and the document's `security` follows from that (see [`openapi`]).
//! Functions that several endpoints share (`erp::pull`, `fieldreport_tools::post`,
//! `leasing::calculate`, …) stay helpers of the module.
//!
//! They are free functions rather than the methods of a dropshot API trait because such a
//! trait cannot be split across files (every method sits in the one trait definition), and
//! the `ApiDescription` it builds cannot be merged with another; the per-entity field-report
//! endpoints ([`fieldreport::register`]) have to join the same description anyway.

pub mod answers;
pub mod auth;
pub mod config;
pub mod context;
pub mod docs_page;
pub mod documented;
pub mod erp;
pub mod erp_feed;
pub mod feed;
pub mod fieldreport;
pub mod fieldreport_feed;
pub mod fieldreport_tools;
pub mod guard;
pub mod held_calls;
pub mod idempotency;
pub mod jobs;
pub mod leasing;
pub mod leasing_owner;
pub mod leasing_schema;
pub mod leasing_watch;
pub mod openapi;
pub mod operations;
pub mod paging;
pub mod query_flag;

use dropshot::{ApiDescription, ApiEndpoint, EndpointTagPolicy, TagConfig, TagDetails};

pub use context::ApiContext;

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
        leasing::leasing_create.into(),
        leasing::leasing_request_flow.into(),
        leasing::leasing_request_flow_health.into(),
        leasing::leasing_request_flow_show.into(),
        leasing::leasing_test_flow.into(),
        leasing::leasing_show.into(),
        leasing::leasing_patch.into(),
        leasing::leasing_patch_lessee.into(),
        leasing::leasing_wait_ready_to_sign.into(),
        leasing::leasing_e_signature_configuration.into(),
        leasing::leasing_start_e_signature.into(),
        leasing::leasing_cancel_e_signature.into(),
        leasing::leasing_switch_to_paper_contract.into(),
        leasing::leasing_contract_document.into(),
        leasing::leasing_contract_document_link.into(),
        leasing::leasing_provider_calculation.into(),
        leasing::leasing_calculate_default.into(),
        leasing::leasing_calculate_instalment.into(),
        leasing::leasing_calculate.into(),
        leasing_watch::leasing_subscription_create.into(),
        leasing_watch::leasing_subscription_list.into(),
        leasing_watch::leasing_subscription_show.into(),
        leasing_watch::leasing_subscription_delete.into(),
        leasing_watch::leasing_subscription_rotate_secret.into(),
        leasing_watch::leasing_subscription_deliveries.into(),
        leasing_watch::leasing_subscription_delivery_retry.into(),
        leasing_watch::leasing_watch.into(),
        fieldreport_tools::fieldreport_show.into(),
        fieldreport_tools::fieldreport_show_entity.into(),
        fieldreport_tools::fieldreport_show_having.into(),
        fieldreport_tools::fieldreport_show_records.into(),
        fieldreport_tools::fieldreport_sync_all.into(),
        fieldreport_tools::fieldreport_sync.into(),
        fieldreport_tools::fieldreport_setup_all.into(),
        fieldreport_tools::fieldreport_setup.into(),
        fieldreport_tools::fieldreport_post_all.into(),
        fieldreport_tools::fieldreport_post_stage.into(),
        fieldreport_tools::fieldreport_post_type.into(),
        fieldreport_tools::fieldreport_post.into(),
        erp::erp_webhook_get.into(),
        erp::erp_webhook_post.into(),
        erp::erp_show.into(),
        erp::erp_show_model.into(),
        erp::erp_show_record.into(),
        erp::erp_show_matching.into(),
        erp::erp_setup_all.into(),
        erp::erp_setup.into(),
        erp::erp_get.into(),
        erp::erp_update_all.into(),
        erp::erp_update_model.into(),
        erp::erp_update_record.into(),
        erp::erp_update_matching.into(),
        erp::erp_pull_attributes.into(),
        erp::erp_pull_one_attribute.into(),
        erp::erp_push_attributes.into(),
        erp::erp_push_one_attribute.into(),
        erp::erp_field_report_post_all.into(),
        erp::erp_field_report_post.into(),
        erp_feed::erp_changes.into(),
        erp_feed::erp_export.into(),
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
    fieldreport::register(&mut api).expect("the field-report endpoints register");
    fieldreport_feed::register(&mut api).expect("the field-report feeds register");
    api
}
