//! Convergence under any history: long random histories of everything that happens to the
//! field-report mirror and the ERP mirror, with faults and a killed process, then the documented
//! convergence steps (drain the webhook inbox, `post`, `sync --reconcile`), then the invariants,
//! each checked on its own:
//!
//! - the mirror equals the upstream, record for record (Id, Version, the fields we write);
//! - no acknowledged write is lost (the upstream holds the acknowledged value or a later one);
//! - no acknowledged delete is undone (absent upstream and locally);
//! - nothing is stuck (every record accepts a write);
//! - the ERP mirror equals the ERP simulator.
//!
//! A history mixes API creates, updates and deletes (a failed one is sent again at once, and
//! that retry must succeed without a sync), edits and deletes made at the field-report
//! simulator by another client, ERP changes with their webhooks (create, update, delete), syncs
//! (incremental and reconciling), posts, injected faults on the next field-report call (an
//! error before applying, an answer lost after applying, a cut connection) and SIGKILLs of the
//! service (between steps, or while a write waits for the upstream), each followed by a restart.
//! And what a real upstream's timing does to a sync: slow pages, records changed by another
//! client while a sync pages, stamps of whole seconds and changes committed after their stamp
//! (within the overlap window). After every sync that completed, the clause of the sync's
//! guarantee (docs/reliability.md) that applies is checked: after an incremental one, every
//! record the upstream has is in the mirror at the upstream's version; after a reconciling one,
//! the mirror also holds nothing else; records with a local change waiting aside.
//!
//! After every step, a consumer that copied both mirrors at the start and follows their change
//! feeds holds what the mirrors hold (`histories/consumer.rs`).
//!
//! The histories come from proptest with a fixed seed (`HISTORY_SEED` picks another), 2 of
//! `HISTORY_STEPS` (default 500) steps per database; a failing history is shrunk to a short
//! one, printed with the seed.

mod consumer;
mod convergence;
mod steps;

use crate::common::Api;
use crate::common::contract::Checked;
use std::collections::{HashMap, HashSet};

use crate::common::process::{Instance, WEBHOOK_SECRET, odata_root, upstream_records};
use crate::common::{Db, add_fault, seed};
use integration_service::store::Store;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use serde_json::{Value, json};

use convergence::{check, converge};
use steps::run_step;

const DEFAULT_SEED: u64 = 20_261_127;
const DEFAULT_STEPS: usize = 500;
const CASES: u32 = 2;
const ERP_KEY: &str = "sandbox-erp-key";
/// The longest a late commit comes after its stamp: well within the sync's overlap window
/// (`FIELDREPORT_SYNC_OVERLAP_SECONDS`, 300 by default).
const LATENESS_SECONDS: u8 = 60;

/// A fault on the next call to the field-report system's companies.
#[derive(Debug, Clone, Copy)]
enum FaultKind {
    /// 500, the call not carried out.
    BeforeApplying,
    /// Carried out, answered after the service's 1 s time-out.
    LostAnswer,
    /// The connection dropped, the call not carried out.
    Cut,
}

#[derive(Debug, Clone)]
enum Step {
    Create,
    Update {
        pick: u16,
    },
    Delete {
        pick: u16,
    },
    OtherEdit {
        pick: u16,
    },
    OtherDelete {
        pick: u16,
    },
    ErpCreate,
    ErpUpdate {
        pick: u16,
    },
    ErpDelete {
        pick: u16,
    },
    Sync {
        reconcile: bool,
    },
    /// A sync while another client changes records once its first page is served.
    SyncWhileEdited {
        picks: (u16, u16),
    },
    /// A sync whose pages the field-report system answers late.
    SlowSync,
    /// Stamps in whole seconds (`true`) or microseconds.
    CoarseStamps(bool),
    /// A change by another client committed `seconds` after its stamp (a record created when
    /// `pick` is `None`).
    LateCommit {
        pick: Option<u16>,
        seconds: u8,
    },
    Post,
    Fault(FaultKind),
    Kill {
        during_write: bool,
        pick: u16,
    },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        10 => Just(Step::Create),
        14 => any::<u16>().prop_map(|pick| Step::Update { pick }),
        5 => any::<u16>().prop_map(|pick| Step::Delete { pick }),
        7 => any::<u16>().prop_map(|pick| Step::OtherEdit { pick }),
        2 => any::<u16>().prop_map(|pick| Step::OtherDelete { pick }),
        4 => Just(Step::ErpCreate),
        6 => any::<u16>().prop_map(|pick| Step::ErpUpdate { pick }),
        2 => any::<u16>().prop_map(|pick| Step::ErpDelete { pick }),
        5 => any::<bool>().prop_map(|reconcile| Step::Sync { reconcile }),
        3 => (any::<u16>(), any::<u16>()).prop_map(|picks| Step::SyncWhileEdited { picks }),
        1 => Just(Step::SlowSync),
        1 => any::<bool>().prop_map(Step::CoarseStamps),
        3 => (proptest::option::of(any::<u16>()), 1..LATENESS_SECONDS).prop_map(|(pick, seconds)| Step::LateCommit { pick, seconds }),
        4 => Just(Step::Post),
        3 => prop_oneof![Just(FaultKind::BeforeApplying), Just(FaultKind::LostAnswer), Just(FaultKind::Cut)]
            .prop_map(Step::Fault),
        1 => (any::<bool>(), any::<u16>()).prop_map(|(during_write, pick)| Step::Kill { during_write, pick }),
    ]
}

/// What the history's callers were told, and what they may rely on.
#[derive(Default)]
struct Model {
    /// Companies that may exist: seeded and created through the API.
    companies: Vec<String>,
    /// The last acknowledged write of each company: its Name and Version.
    acknowledged: HashMap<String, (String, i64)>,
    /// Companies whose delete through the API was acknowledged.
    deleted: HashSet<String>,
    /// Companies another client deleted at the upstream.
    deleted_elsewhere: HashSet<String>,
    /// Companies whose delete through the API was asked for and not acknowledged: its outcome
    /// may be unknown, and `post` then completes it.
    delete_asked: HashSet<String>,
    /// ERP customers that exist.
    customers: Vec<String>,
}

fn pick(list: &[String], pick: u16) -> Option<String> {
    (!list.is_empty()).then(|| list[usize::from(pick) % list.len()].clone())
}

/// A request sent with the JSON body when given: the status and the JSON answer (`Null` when it
/// is none); `Err` when no answer came.
async fn answer(request: reqwest::RequestBuilder, body: Option<Value>) -> reqwest::Result<(u16, Value)> {
    let request = match body {
        Some(body) => request.json(&body),
        None => request,
    };
    let answer = request.checked().await?;
    let status = answer.status().as_u16();
    Ok((status, answer.json().await.unwrap_or(Value::Null)))
}

/// The service, its simulators and the test's own view of the database.
struct World {
    instance: Instance,
    /// The simulators run as long as the world does.
    _sandboxes: integration_service::sandbox::Sandboxes,
    store: Store,
    token: String,
    odata: String,
    erp: String,
}

impl World {
    async fn start(db: Db) -> World {
        let settings = [("FIELDREPORT_TIMEOUT_SECONDS", "1"), ("ERP_WEBHOOK_ALLOWLIST", "127.0.0.1/32")];
        let (instance, sandboxes, store) = Instance::start(db, &settings).await;
        let token = instance.token().await;
        let odata = odata_root(&sandboxes);
        let erp = sandboxes.erp_base_url();
        World { instance, _sandboxes: sandboxes, store, token, odata, erp }
    }

    fn client(&self) -> &reqwest::Client {
        &self.instance.client
    }

    async fn api(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let request = self.client().request(method, self.instance.url(path)).bearer_auth(&self.token);
        answer(request, body).await.unwrap_or_else(|error| panic!("{path}: the service did not answer: {error}"))
    }

    async fn upstream(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let request = self
            .client()
            .request(method, format!("{}/odata/{path}", self.odata))
            .basic_auth("sandbox", Some("sandbox-password"));
        // Another client meets the injected faults too: a dropped connection is status 0.
        answer(request, body).await.unwrap_or((0, Value::Null))
    }

    async fn erp(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let request =
            self.client().request(method, format!("{}{path}", self.erp)).header("AuthenticationToken", ERP_KEY);
        answer(request, body).await.unwrap()
    }

    /// A webhook call as the ERP sends it.
    async fn webhook(&self, customer: &str, kind: &str) {
        let call = json!({"entityName": "customer", "entityId": customer, "type": kind});
        let answer = self
            .client()
            .post(self.instance.url("/api/v1/erp/webhooks"))
            .header("X-Webhook-Secret", WEBHOOK_SECRET)
            .json(&call)
            .checked()
            .await
            .unwrap();
        assert_eq!(answer.status(), 202, "the webhook call is stored");
    }

    async fn fault(&self, kind: FaultKind) {
        let rule = match kind {
            FaultKind::BeforeApplying => json!({"path_prefix": "/odata/Companies", "status": 500}),
            FaultKind::LostAnswer => json!({"path_prefix": "/odata/Companies", "status": 200, "answer_delay_ms": 1500}),
            FaultKind::Cut => json!({"path_prefix": "/odata/Companies", "status": 0}),
        };
        add_fault(self.client(), &self.odata, rule).await;
    }

    /// A control call to the field-report simulator (`/__sandbox/<path>`); its answer.
    async fn simulator(&self, path: &str, body: Value) -> Value {
        let (status, answer) = self.simulator_call(path, body).await;
        assert_eq!(status, 200, "{path}: {answer}");
        answer
    }

    /// A control call to the field-report simulator, with its status.
    async fn simulator_call(&self, path: &str, body: Value) -> (u16, Value) {
        let answer =
            self.client().post(format!("{}/__sandbox/{path}", self.odata)).json(&body).checked().await.unwrap();
        (answer.status().as_u16(), answer.json().await.unwrap_or(Value::Null))
    }

    fn restart(&mut self) {
        self.instance.kill();
        self.instance.restart();
    }
}

async fn history(db: Db, steps: &[Step]) -> Result<(), String> {
    let mut world = World::start(db).await;
    seed(world.client(), &world.odata, "Companies", 5).await;
    let (status, _) = world.api(reqwest::Method::GET, "/api/v1/fieldreport/sync/companies", None).await;
    assert_eq!(status, 200);
    let (status, _) = world.api(reqwest::Method::GET, "/api/v1/erp/setup/customer", None).await;
    assert_eq!(status, 200);
    let mut model = Model {
        companies: upstream_records(world.client(), &world.odata, "Companies").await.into_keys().collect(),
        customers: world.store.erp_all("customer").await.unwrap().into_iter().map(|c| c.id).collect(),
        ..Model::default()
    };
    let mut outcome = Ok(());
    let mut consumer = match consumer::Consumer::start(&world).await {
        Ok(consumer) => Some(consumer),
        Err(failure) => {
            outcome = Err(format!("copying the mirrors: {failure}"));
            None
        }
    };
    for (n, step) in steps.iter().enumerate() {
        let Some(consumer) = consumer.as_mut() else { break };
        let mut ran = run_step(&mut world, &mut model, n, step).await;
        if ran.is_ok() {
            ran = consumer.follow(&world).await.map_err(|failure| format!("step {n}: {failure}"));
        }
        if let Err(failure) = ran {
            outcome = Err(failure);
            break;
        }
    }
    if outcome.is_ok() {
        outcome = converge(&world).await;
    }
    if outcome.is_ok() {
        outcome = check(&world, &model).await;
    }
    world.instance.stop(&[]).await;
    outcome
}

fn setting<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|value| value.parse().ok()).unwrap_or(default)
}

/// One history; a panic in it (a broken expectation of the harness) is its failure too.
fn run_one(runtime: &tokio::runtime::Runtime, db: Db, steps: &[Step]) -> Result<(), String> {
    let run = std::panic::AssertUnwindSafe(|| runtime.block_on(history(db, steps)));
    std::panic::catch_unwind(run).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(format!("panicked: {message}"))
    })
}

/// Most attempts at shortening a failing history (each runs a history).
const SHRINK_ATTEMPTS: usize = 40;

/// A failing history shortened: runs of steps are removed (halves, then quarters, …) as long as
/// the history still fails; the shortest found and its failure.
fn without_needless_steps(
    runtime: &tokio::runtime::Runtime,
    db: Db,
    mut steps: Vec<Step>,
    mut reason: String,
) -> (Vec<Step>, String) {
    let mut attempts = 0;
    let mut run = steps.len() / 2;
    while run >= 1 && attempts < SHRINK_ATTEMPTS {
        let mut start = 0;
        while start < steps.len() && attempts < SHRINK_ATTEMPTS {
            let mut shorter = steps.clone();
            shorter.drain(start..(start + run).min(steps.len()));
            attempts += 1;
            match run_one(runtime, db, &shorter) {
                Err(failure) => {
                    steps = shorter;
                    reason = failure;
                }
                Ok(()) => start += run,
            }
        }
        run /= 2;
    }
    (steps, reason)
}

fn run_histories(db: Db) {
    let seed: u64 = setting("HISTORY_SEED", DEFAULT_SEED);
    let steps: usize = setting("HISTORY_STEPS", DEFAULT_STEPS);
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    // proptest draws the histories; they are shrunk below by removing steps, which its own
    // shrinking of a vector of fixed length cannot do.
    let config = Config { cases: CASES, max_shrink_iters: 0, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes));
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let strategy = proptest::collection::vec(step(), steps);
    let result = runner.run(&strategy, |steps| run_one(&runtime, db, &steps).map_err(TestCaseError::fail));
    match result {
        Ok(()) => {}
        Err(TestError::Fail(reason, failing)) => {
            let (shrunk, reason) = without_needless_steps(&runtime, db, failing, reason.to_string());
            panic!(
                "a history of {db:?} broke an invariant (seed {seed}; HISTORY_SEED={seed} HISTORY_STEPS={steps} \
             repeats it):\n{reason}\nshrunk to {} steps: {shrunk:#?}",
                shrunk.len()
            )
        }
        Err(TestError::Abort(reason)) => panic!("histories of {db:?} aborted (seed {seed}): {reason}"),
    }
}

#[test]
fn histories_converge_on_sqlite() {
    run_histories(Db::Sqlite);
}

#[test]
fn histories_converge_on_postgres() {
    if std::env::var("TEST_POSTGRES_URL").is_err() {
        eprintln!("skipped: TEST_POSTGRES_URL is not set");
        return;
    }
    run_histories(Db::Postgres);
}
