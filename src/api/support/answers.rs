//! The error answers an operation can give, derived from the domain errors its handler can
//! return: every variant of each such error type is made up once and turned into its answer by
//! the one mapping the service uses (`crate::error`), so the document's statuses and
//! `error_code`s follow that mapping instead of a list kept by hand.
//!
//! What is stated by hand is which error types an operation's handler returns ([`sources`]), at
//! the granularity of its area; the statuses and codes come from the types.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::api::support::idempotency;
use crate::auth::AuthError;
use crate::auth::ability::Ability;
use crate::erp::ErpError;
use crate::erp::webhook::WebhookRefusal;
use crate::error::{ApiError, FieldErrors};
use crate::feed::FeedError;
use crate::fieldreport::service::FieldReportError;
use crate::jobs::JobError;
use crate::leasing::service::LeasingError;
use crate::leasing::watch::WatchError;
use crate::stop::Stop;
use crate::store::StoreError;
use crate::upstream::UpstreamError;
use crate::vocabulary::calls::System;

/// A domain error type a handler can return (some narrowed to the variants a local read meets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    /// The database, met by every route that reads or writes it.
    Store,
    /// The bearer token's check (and the routes that only revoke or read the caller's token).
    Guard,
    /// The login.
    Login,
    /// A leasing route that calls the provider (`success: false` answers).
    Leasing,
    /// A leasing route that creates a financing request: its place under the user's rate.
    LeasingCreate,
    /// The leasing state subscriptions.
    Watch,
    /// A field-report write or tool, which calls the field-report system.
    FieldReport,
    /// A field-report read: the local mirror only.
    FieldReportLocal,
    /// An ERP route that calls the ERP (or, posting, the field-report system).
    Erp,
    /// An ERP route on the local mirror or the webhooks.
    ErpLocal,
    /// The jobs routes.
    Job,
    /// The mirrors' change feeds and exports.
    Feed,
    /// The readiness probe: the database's answer, nothing else.
    Probe,
    /// A leasing route that checks its input itself (the inverse calculations).
    LeasingInput,
    /// A held call (a wait, a one-shot flow): its place under the user's cap.
    HeldCall,
    /// A route that takes an `Idempotency-Key`.
    IdempotencyKey,
    /// An export: its place under the user's cap.
    Export,
    /// A delivery sent again on request: the user's rate of them.
    DeliveryRetry,
}

impl Source {
    /// Every source, so that a test can walk every answer the service can give
    /// (`tests/integration/edge/python_client.rs` sends each through a generated client).
    pub const ALL: [Source; 18] = [
        Source::Store,
        Source::Guard,
        Source::Login,
        Source::Leasing,
        Source::LeasingCreate,
        Source::Watch,
        Source::FieldReport,
        Source::FieldReportLocal,
        Source::Erp,
        Source::ErpLocal,
        Source::Job,
        Source::Probe,
        Source::Feed,
        Source::LeasingInput,
        Source::HeldCall,
        Source::IdempotencyKey,
        Source::Export,
        Source::DeliveryRetry,
    ];
}

/// Every answer any handler's error types can give, through the service's one mapping.
pub fn every_answer() -> BTreeSet<Answer> {
    answers(&Source::ALL.into_iter().collect())
}

/// One answer: its status and `error_code`.
pub type Answer = (u16, String);

impl Source {
    /// Every answer an error of this source can give, one per variant (and nested variant).
    pub fn answers(self) -> BTreeSet<Answer> {
        let answer = |error: ApiError| (error.status().as_u16(), error.error_code.clone());
        crate::telemetry::quietly(|| match self {
            Source::Store => answers_of(store_errors(), |_| true),
            Source::Guard => answers_of(auth_errors(), |e| {
                matches!(e, AuthError::Unauthenticated | AuthError::MissingAbility(_) | AuthError::Store(_))
            }),
            Source::Login => answers_of(auth_errors(), |e| {
                use AuthError::*;
                matches!(e, Invalid(_) | Throttled { .. } | InvalidCredentials | Store(_) | Hashing(_))
            }),
            Source::Leasing => answers_of(leasing_errors(), |e| !matches!(e, LeasingError::TooManyCreates { .. })),
            Source::LeasingCreate => answers_of(leasing_errors(), |e| matches!(e, LeasingError::TooManyCreates { .. })),
            Source::Watch => answers_of(watch_errors(), |e| !matches!(e, WatchError::TooManyRetries { .. })),
            Source::DeliveryRetry => answers_of(watch_errors(), |e| matches!(e, WatchError::TooManyRetries { .. })),
            Source::FieldReport => answers_of(fieldreport_errors(), |_| true),
            Source::FieldReportLocal => answers_of(fieldreport_errors(), |e| {
                !matches!(e, FieldReportError::Upstream(_)) && !is_upstream_outcome(e)
            }),
            Source::Erp => answers_of(erp_errors(), |_| true),
            Source::ErpLocal => {
                answers_of(erp_errors(), |e| !matches!(e, ErpError::Upstream(_) | ErpError::FieldReport(_)))
            }
            Source::Job => answers_of(job_errors(), |_| true),
            Source::Feed => answers_of(feed_errors(), |_| true),
            Source::Probe => [answer(ApiError::unavailable("made up"))].into(),
            Source::LeasingInput => [answer(ApiError::validation(field_errors()))].into(),
            Source::HeldCall => [answer(ApiError::too_many_held_calls(1))].into(),
            Source::IdempotencyKey => idempotency::refusals().into_iter().map(answer).collect(),
            Source::Export => [answer(ApiError::too_many_exports(1))].into(),
        })
    }
}

/// The answers of the `errors` (of one type) that `keep` keeps, through the service's mapping.
fn answers_of<E: Into<ApiError>>(errors: Vec<E>, keep: impl Fn(&E) -> bool) -> BTreeSet<Answer> {
    errors
        .into_iter()
        .filter(|error| keep(error))
        .map(Into::into)
        .map(|error: ApiError| (error.status().as_u16(), error.error_code.clone()))
        .collect()
}

/// The outcomes of a forwarded write, which a read of the mirror never meets.
fn is_upstream_outcome(error: &FieldReportError) -> bool {
    use FieldReportError::*;
    matches!(error, Interrupted | OutcomeUnknown(_) | UpstreamConflict(_) | NotApplied { .. })
}

/// The error types the handler of an operation can return, by its area (tag) and id;
/// `guarded` when it takes a bearer token.
pub fn sources(op_id: &str, tags: &[String], guarded: bool) -> BTreeSet<Source> {
    let tagged = |tag: &str| tags.iter().any(|t| t == tag);
    let mut sources = BTreeSet::new();
    if guarded {
        sources.insert(Source::Guard);
    }
    if op_id == "login" {
        sources.insert(Source::Login);
    }
    // A mirror's change feed and export read the mirror alone.
    let feed = op_id.ends_with("_changes") || op_id.ends_with("_export") || op_id.starts_with("erp_changes");
    if feed {
        sources.insert(Source::Feed);
    }
    if op_id.ends_with("_export") {
        sources.insert(Source::Export);
    }
    if tagged("leasing") {
        sources.insert(Source::Store);
        if op_id.starts_with("leasing_subscription_") {
            sources.insert(Source::Watch);
            if op_id == "leasing_subscription_delivery_retry" {
                sources.insert(Source::DeliveryRetry);
            }
        } else if !LOCAL_LEASING_OPERATIONS.contains(&op_id) {
            sources.insert(Source::Leasing);
        }
    } else if tagged("fieldreport") {
        let reads =
            feed || op_id.ends_with("_list") || op_id.ends_with("_show") || op_id.starts_with("fieldreport_show");
        sources.insert(if reads { Source::FieldReportLocal } else { Source::FieldReport });
    } else if tagged("erp") {
        let upstream = ERP_UPSTREAM_OPERATION_PREFIXES.iter().any(|prefix| op_id.starts_with(prefix));
        sources.insert(if upstream { Source::Erp } else { Source::ErpLocal });
    } else if tagged("jobs") {
        sources.insert(Source::Job);
    } else if op_id == "readyz" {
        sources.insert(Source::Probe);
    }
    if op_id.starts_with("leasing_calculate") {
        sources.insert(Source::LeasingInput);
    }
    if HELD_OPERATIONS.contains(&op_id) {
        sources.insert(Source::HeldCall);
    }
    if IDEMPOTENT_OPERATIONS.contains(&op_id) {
        sources.insert(Source::IdempotencyKey);
    }
    if CREATING_OPERATIONS.contains(&op_id) {
        sources.insert(Source::LeasingCreate);
    }
    sources
}

/// The held calls (`crate::front::departure::holds` names their paths).
const HELD_OPERATIONS: &[&str] = &["leasing_wait_ready_to_sign", "leasing_request_flow"];

/// The operations that take an `Idempotency-Key` (a test checks the document's parameters).
pub const IDEMPOTENT_OPERATIONS: &[&str] = &["leasing_create", "leasing_request_flow"];

/// The operations that create a financing request (`LEASING_CREATES_PER_MINUTE_PER_USER`).
const CREATING_OPERATIONS: &[&str] = &["leasing_create", "leasing_request_flow"];

/// Every answer of an operation whose handler returns errors of `sources`.
pub fn answers(sources: &BTreeSet<Source>) -> BTreeSet<Answer> {
    sources.iter().flat_map(|source| source.answers()).collect()
}

/// Leasing operations that never call the provider (so never answer its failures).
const LOCAL_LEASING_OPERATIONS: &[&str] = &[
    "leasing_calculate_default",
    "leasing_calculate_instalment",
    "leasing_calculate",
    "leasing_request_flow_health",
    "leasing_request_flow_show",
];

/// ERP operations that call the ERP (or, `fieldReportPost`, the field-report system).
const ERP_UPSTREAM_OPERATION_PREFIXES: &[&str] = &[
    "erp_setup",
    "erp_get",
    "erp_update",
    "erp_pull_attribute",
    "erp_push_attribute",
    "erp_pull_one_attribute",
    "erp_push_one_attribute",
    "erp_field_report_post",
];

/// Every variant of an error type, made up: each line pairs a pattern with the errors of that
/// variant, and the patterns must match every variant (a new variant fails to compile here
/// until it has a line).
macro_rules! every_variant {
    ($($pattern:pat => $errors:expr),+ $(,)?) => {{
        let all: Vec<_> = [$($errors),+].into_iter().flatten().collect();
        for error in &all {
            match error {
                $($pattern => {})+
            }
        }
        all
    }};
}

fn text() -> String {
    "made up".to_string()
}

fn field_errors() -> FieldErrors {
    FieldErrors::from([("field".to_string(), vec![text()])])
}

fn store_errors() -> Vec<StoreError> {
    every_variant! {
        StoreError::Unavailable(_) => vec![StoreError::Unavailable(text())],
        StoreError::Duplicate(_) => vec![StoreError::Duplicate(text())],
        StoreError::Migration(_) => vec![StoreError::Migration(text())],
        StoreError::Query(_) => vec![StoreError::Query(text())],
        StoreError::Unstorable(_) => vec![StoreError::Unstorable(text())],
    }
}

fn upstream_errors() -> Vec<UpstreamError> {
    let system = System::Erp;
    every_variant! {
        UpstreamError::NotConfigured { .. } => vec![UpstreamError::NotConfigured { system, setting: "SETTING" }],
        UpstreamError::Timeout { .. } => vec![UpstreamError::Timeout { system }],
        UpstreamError::Unreachable { .. } => vec![UpstreamError::Unreachable { system, detail: text() }],
        // The mappings tell a refusal's status apart: a conflict, another client error, a server
        // error, and one that asked for a wait (a 503 in maintenance).
        UpstreamError::Refused { .. } => {
            Vec::from([(409, None), (404, None), (500, None), (503, Some(Duration::from_secs(1)))]
                .map(|(status, retry_after)| UpstreamError::Refused { system, status, message: text(), retry_after }))
        },
        UpstreamError::Throttled { .. } => vec![UpstreamError::Throttled { system, retry_after: None }],
        UpstreamError::Malformed { .. } => vec![UpstreamError::Malformed { system, detail: text() }],
        UpstreamError::Unnamed { .. } => vec![UpstreamError::Unnamed { system, status: 202, detail: text() }],
        UpstreamError::Client { .. } => vec![UpstreamError::Client { system, detail: text() }],
    }
}

fn auth_errors() -> Vec<AuthError> {
    every_variant! {
        AuthError::InvalidCredentials => vec![AuthError::InvalidCredentials],
        AuthError::Throttled { .. } => vec![AuthError::Throttled { retry_after: Duration::from_secs(1) }],
        AuthError::Unauthenticated => vec![AuthError::Unauthenticated],
        AuthError::Invalid(_) => vec![AuthError::Invalid(field_errors())],
        AuthError::UnknownUser(_) => vec![AuthError::UnknownUser(text())],
        AuthError::DuplicateEmail(_) => vec![AuthError::DuplicateEmail(text())],
        AuthError::MissingAbility(_) => vec![AuthError::MissingAbility(Ability::Leasing)],
        AuthError::DuplicateTokenName(_) => vec![AuthError::DuplicateTokenName(text())],
        AuthError::UnknownToken { .. } => vec![AuthError::UnknownToken { email: text(), name: text() }],
        AuthError::Store(_) => store_errors().into_iter().map(AuthError::Store).collect(),
        AuthError::Hashing(_) => vec![AuthError::Hashing(text())],
    }
}

fn leasing_errors() -> Vec<LeasingError> {
    every_variant! {
        LeasingError::Invalid(_) => vec![LeasingError::Invalid(field_errors())],
        LeasingError::Upstream(_) => upstream_errors().into_iter().map(LeasingError::Upstream).collect(),
        LeasingError::Declined => vec![LeasingError::Declined],
        LeasingError::Cancelled => vec![LeasingError::Cancelled],
        LeasingError::MissingInfo { .. } => vec![LeasingError::MissingInfo { mail: text() }],
        LeasingError::PastSigning(_) => vec![LeasingError::PastSigning(text())],
        LeasingError::NotReadyToSign { .. } => vec![LeasingError::NotReadyToSign { state: text(), attempts: 1 }],
        LeasingError::Storage(_) => vec![LeasingError::Storage(text())],
        LeasingError::TooManyCreates { .. } => vec![LeasingError::TooManyCreates { most: 60, retry_after_seconds: 1 }],
        LeasingError::Unavailable(_) => vec![LeasingError::Unavailable(text())],
        // A client that went away reads no answer (499 is for the log).
        LeasingError::Stopped(_) => vec![LeasingError::Stopped(Stop::ShuttingDown)],
    }
}

fn watch_errors() -> Vec<WatchError> {
    every_variant! {
        WatchError::Invalid(_) => vec![WatchError::Invalid(field_errors())],
        WatchError::SubscriptionNotFound(_) => vec![WatchError::SubscriptionNotFound(text())],
        WatchError::RequestNotFound(_) => vec![WatchError::RequestNotFound(text())],
        WatchError::DeliveryNotFound(_) => vec![WatchError::DeliveryNotFound(1)],
        WatchError::TooManySubscriptions(_) => vec![WatchError::TooManySubscriptions(100)],
        WatchError::TooManyRetries { .. } => vec![WatchError::TooManyRetries { most: 60, retry_after_seconds: 1 }],
        WatchError::Store(_) => store_errors().into_iter().map(WatchError::Store).collect(),
    }
}

fn fieldreport_errors() -> Vec<FieldReportError> {
    every_variant! {
        FieldReportError::Invalid(_) => vec![FieldReportError::Invalid(field_errors())],
        FieldReportError::UnknownEntity(_) => vec![FieldReportError::UnknownEntity(text())],
        FieldReportError::NotFound { .. } => vec![FieldReportError::NotFound { entity: text(), id: text() }],
        FieldReportError::Conflict(_) => vec![FieldReportError::Conflict(text())],
        FieldReportError::Interrupted => vec![FieldReportError::Interrupted],
        FieldReportError::Upstream(_) => upstream_errors().into_iter().map(FieldReportError::Upstream).collect(),
        FieldReportError::Store(_) => store_errors().into_iter().map(FieldReportError::Store).collect(),
        FieldReportError::OutcomeUnknown(_) => vec![FieldReportError::OutcomeUnknown(text())],
        FieldReportError::UpstreamConflict(_) => vec![FieldReportError::UpstreamConflict(text())],
        FieldReportError::NotApplied { .. } => Vec::from([(false, None), (true, None), (false, Some(Duration::from_secs(1)))]
            .map(|(timed_out, retry_after)| FieldReportError::NotApplied { message: text(), timed_out, retry_after })),
        FieldReportError::Internal(_) => vec![FieldReportError::Internal(text())],
    }
}

fn erp_errors() -> Vec<ErpError> {
    let refusals = every_variant! {
        WebhookRefusal::Forbidden => vec![WebhookRefusal::Forbidden],
        WebhookRefusal::BadSecret => vec![WebhookRefusal::BadSecret],
        WebhookRefusal::Invalid(_) => vec![WebhookRefusal::Invalid(text())],
    };
    every_variant! {
        ErpError::UnknownModel(_) => vec![ErpError::UnknownModel(text())],
        ErpError::NotFound { .. } => vec![ErpError::NotFound { model: text(), id: text() }],
        ErpError::Invalid { .. } => vec![ErpError::Invalid { field: text(), message: text() }],
        ErpError::Busy(_) => vec![ErpError::Busy(text())],
        ErpError::Webhook(_) => refusals.iter().cloned().map(ErpError::Webhook).collect(),
        ErpError::Upstream(_) => upstream_errors().into_iter().map(ErpError::Upstream).collect(),
        ErpError::FieldReport(_) => fieldreport_errors().into_iter().map(ErpError::FieldReport).collect(),
        ErpError::Store(_) => store_errors().into_iter().map(ErpError::Store).collect(),
    }
}

fn job_errors() -> Vec<JobError> {
    every_variant! {
        JobError::Invalid(_) => vec![JobError::Invalid(field_errors())],
        JobError::NotFound(_) => vec![JobError::NotFound(1)],
        JobError::Active { .. } => vec![JobError::Active { id: 1, kind: text(), target: text(), status: text() }],
        JobError::Ended { .. } => vec![JobError::Ended { id: 1, status: text() }],
        JobError::NotYours(_) => vec![JobError::NotYours(1)],
        JobError::TooManyActive(_) => vec![JobError::TooManyActive(10)],
        JobError::TooFast { .. } => vec![JobError::TooFast { most: 60, retry_after_seconds: 1 }],
        JobError::Store(_) => store_errors().into_iter().map(JobError::Store).collect(),
    }
}

fn feed_errors() -> Vec<FeedError> {
    every_variant! {
        FeedError::Expired { .. } => vec![FeedError::Expired { entity: text(), since: 1 }],
        FeedError::Unknown { .. } => vec![FeedError::Unknown { entity: text(), since: 2, last: 1 }],
        FeedError::OtherHistory { .. } => vec![FeedError::OtherHistory { entity: text() }],
        FeedError::Invalid(_) => vec![FeedError::Invalid(field_errors())],
        FeedError::Store(_) => store_errors().into_iter().map(FeedError::Store).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answers the issue named: a field-report stop on the ERP update routes is 503
    /// `interrupted`, and the database's failure is 500 `internal_error` wherever it is met.
    /// `Source::ALL` names every source: a new one fails to compile here until it is listed.
    #[test]
    fn all_sources_are_listed() {
        for source in Source::ALL {
            match source {
                Source::Store
                | Source::Guard
                | Source::Login
                | Source::Leasing
                | Source::LeasingCreate
                | Source::Watch
                | Source::FieldReport
                | Source::FieldReportLocal
                | Source::Erp
                | Source::ErpLocal
                | Source::Job
                | Source::Feed
                | Source::Probe
                | Source::LeasingInput
                | Source::HeldCall
                | Source::IdempotencyKey
                | Source::Export
                | Source::DeliveryRetry => {}
            }
        }
        let distinct: BTreeSet<Source> = Source::ALL.into_iter().collect();
        assert_eq!(distinct.len(), Source::ALL.len());
    }

    #[test]
    fn answers_follow_the_mapping() {
        let erp = Source::Erp.answers();
        assert!(erp.contains(&(503, "interrupted".to_string())), "{erp:?}");
        assert!(erp.contains(&(504, "upstream_outcome_unknown".to_string())), "{erp:?}");
        for source in
            [Source::Store, Source::Guard, Source::Login, Source::Watch, Source::FieldReportLocal, Source::Job]
        {
            assert!(source.answers().contains(&(500, "internal_error".to_string())), "{source:?}");
        }
        let leasing = Source::Leasing.answers();
        assert!(leasing.contains(&(500, "declined".to_string())), "{leasing:?}");
        assert!(leasing.contains(&(503, "shutting_down".to_string())), "{leasing:?}");
        assert!(!leasing.iter().any(|(status, _)| *status == 429), "only the creating routes have a rate: {leasing:?}");
        let creates = Source::LeasingCreate.answers();
        assert_eq!(creates, [(429, "too_many_financing_requests".to_string())].into());
        let local = Source::FieldReportLocal.answers();
        assert!(local.iter().all(|(status, code)| ![502, 504].contains(status) && code != "interrupted"), "{local:?}");
    }
}
