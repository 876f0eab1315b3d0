//! The `integration-service` command line.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::BufRead;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use integration_service::auth::Authenticator;
use integration_service::config::Config;
use integration_service::store::Store;
use integration_service::{api, sandbox, server, telemetry};

/// The settings each kind of command reads (from the environment, or in lower case from the
/// `--config` file), named at the end of its help; `serve` reads every one of
/// `config::SETTING_NAMES`. Their meaning and defaults: docs/configuration.md.
const DATABASE_SETTINGS: &str = "DATABASE_URL, WORK_LEASE_SECONDS";
const AUTH_SETTINGS: &str = "DATABASE_URL, WORK_LEASE_SECONDS, TOKEN_TTL_MINUTES";
const FIELDREPORT_SETTINGS: &str = "DATABASE_URL, WORK_LEASE_SECONDS, FIELDREPORT_BASE_URL, FIELDREPORT_USERNAME, \
     FIELDREPORT_PASSWORD, FIELDREPORT_TIMEOUT_SECONDS";
const ERP_SETTINGS: &str = "DATABASE_URL, WORK_LEASE_SECONDS, ERP_BASE_URL, ERP_API_KEY, ERP_TIMEOUT_SECONDS, \
     ERP_CONNECT_TIMEOUT_SECONDS, FIELDREPORT_BASE_URL, FIELDREPORT_USERNAME, FIELDREPORT_PASSWORD, \
     FIELDREPORT_TIMEOUT_SECONDS";
const SANDBOX_SETTINGS: &str = "LOG_FORMAT";

/// The help footer naming the environment variables a command reads.
fn reads(settings: &str) -> String {
    format!("Environment (or the --config file; see docs/configuration.md): {settings}")
}

#[derive(Parser)]
#[command(
    name = "integration-service",
    version,
    about = "One authenticated, documented HTTP API in front of a leasing provider, a field-report system and a cloud ERP",
    after_help = "Settings come from environment variables (or, in lower case, from the --config file); each \
                  command's --help names those it reads. All of them, with defaults: docs/configuration.md."
)]
struct Cli {
    /// TOML configuration file; environment variables override its settings.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP service (migrates the database first).
    Serve {
        // Read as text: the configuration checks BIND_ADDRESS first, so that a bad value stops
        // start-up with its one line naming the setting.
        /// Address to listen on.
        #[arg(long, value_name = "ADDR", env = "BIND_ADDRESS")]
        bind: Option<String>,
        /// Start in-process simulators of the upstream systems and use them.
        #[arg(long)]
        sandbox: bool,
    },
    /// Apply database migrations and exit.
    Migrate,
    /// Manage users.
    #[command(subcommand)]
    User(UserCommand),
    /// Manage personal access tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Print the service's OpenAPI document.
    Openapi,
    /// Field-report tooling.
    #[command(subcommand)]
    Fieldreport(FieldreportCommand),
    /// ERP mirror tooling.
    #[command(subcommand)]
    Erp(ErpCommand),
    /// For `cargo xtask bench`: insert the mirrored documents of a field-report entity into a
    /// scratch table (or, with `--into-mirror`, into the mirror as a set of their own) with a
    /// plain batched loop and print the rate.
    #[cfg(feature = "bench-support")]
    #[command(hide = true)]
    BenchInsertBaseline {
        entity: String,
        #[arg(long)]
        into_mirror: bool,
    },
    /// For `cargo xtask bench`: forget a mirrored field-report set (its records and its sync
    /// cursor), so that the next sync inserts every record again.
    #[cfg(feature = "bench-support")]
    #[command(hide = true)]
    BenchForgetSet { entity: String },
    /// Run only the upstream simulators (for trying clients against them).
    Sandbox {
        /// Address of the leasing simulator (default: a free loopback port).
        #[arg(long, value_name = "ADDR")]
        bind: Option<SocketAddr>,
    },
}

#[derive(Subcommand)]
enum UserCommand {
    /// Create a user; the password is read from the first line of standard input.
    Create {
        #[arg(long)]
        email: String,
        #[arg(long)]
        name: Option<String>,
        /// Read the password from standard input (required: passwords never go on the command line).
        #[arg(long, required = true)]
        password_stdin: bool,
    },
    /// List users.
    List,
    /// Delete a user and every token of theirs.
    Delete {
        #[arg(long)]
        email: String,
    },
}

#[derive(Subcommand)]
enum FieldreportCommand {
    /// Pull one entity set (route or set name) or all of them from the field-report system.
    Sync {
        entity: Option<String>,
        /// Then remove the local records the field-report system no longer has (reads every Id
        /// of the set; records with a local change waiting are kept and reported).
        #[arg(long)]
        reconcile: bool,
    },
    /// Initial pull of a stage (1, 2 or 3) or of every stage in order.
    Setup { stage: Option<String> },
    /// Push records written without forwarding: of a stage, a type (create|update|delete), an entity.
    Post { stage: Option<String>, r#type: Option<String>, entity: Option<String> },
}

#[derive(Subcommand)]
enum ErpCommand {
    /// Full pull of one model (the ERP's name, e.g. customer) or of every model.
    Setup { model: Option<String> },
    /// Incremental pull of every model since its cursor.
    Pull,
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Revoke every token of a user.
    Revoke {
        #[arg(long)]
        email: String,
    },
}

/// mimalloc asks the kernel for transparent huge pages on its arenas. Where THP is on (even
/// in `madvise` mode), a partly used 2 MiB page is resident whole: 10,000 held requests cost
/// about 100 MB more (`cargo xtask bench --scenario waiting-flows`: 433 MB, 334 MB without).
/// Nothing the service does gains measurably from huge pages.
#[cfg(target_os = "linux")]
fn without_transparent_huge_pages() {
    // SAFETY: prctl(PR_SET_THP_DISABLE) takes plain integers and sets a flag of this process.
    if unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) } != 0 {
        eprintln!("warning: transparent huge pages stay on: {}", std::io::Error::last_os_error());
    }
}

#[cfg(not(target_os = "linux"))]
fn without_transparent_huge_pages() {}

/// mimalloc's `purge_delay` option (index 15 of `mi_option_t` in mimalloc.h, v2 and v3 alike;
/// the crate names no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long mimalloc keeps memory it no longer uses before handing it back to the kernel:
/// mimalloc v2's default. v3's is a second, long enough for a burst of connections to find the
/// memory of the previous burst's requests still resident (`cargo xtask bench --scenario
/// waiting-flows`: 10,000 held calls peaked at 302 MB, 293 MB with this; the idle service at
/// 40 MB, 32 MB with this; no throughput change measurable in the other scenarios).
const ALLOCATOR_PURGE_DELAY_MS: std::ffi::c_long = 10;

/// Raises the soft limit on open files to the hard one: each client connection holds one, and
/// distributions start processes at 1,024. The figure reached, for the log.
#[cfg(unix)]
fn raise_open_files_limit() -> std::io::Result<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit read and write the plain struct passed by pointer.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(limit.rlim_cur)
}

fn tune_allocator() {
    without_transparent_huge_pages();
    // SAFETY: mi_option_set takes an option index and a plain integer; options may be set at
    // any time.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, ALLOCATOR_PURGE_DELAY_MS) };
}

/// Parses the command line with each command's help naming the settings it reads.
fn parse_command_line() -> Cli {
    let every_setting = integration_service::config::SETTING_NAMES.join(", ");
    let command = Cli::command()
        .mut_subcommand("serve", |c| c.after_help(reads(&every_setting)))
        .mut_subcommand("migrate", |c| c.after_help(reads(DATABASE_SETTINGS)))
        .mut_subcommand("user", |c| with_footer(c, AUTH_SETTINGS))
        .mut_subcommand("token", |c| with_footer(c, AUTH_SETTINGS))
        .mut_subcommand("fieldreport", |c| with_footer(c, FIELDREPORT_SETTINGS))
        .mut_subcommand("erp", |c| with_footer(c, ERP_SETTINGS))
        .mut_subcommand("sandbox", |c| c.after_help(reads(SANDBOX_SETTINGS)))
        .mut_subcommand("openapi", |c| c.after_help("Reads no settings."));
    Cli::from_arg_matches(&command.get_matches()).unwrap_or_else(|error| error.exit())
}

/// A command group and each of its subcommands get the same footer.
fn with_footer(group: clap::Command, settings: &str) -> clap::Command {
    let names: Vec<String> = group.get_subcommands().map(|c| c.get_name().to_string()).collect();
    let footer = reads(settings);
    names.iter().fold(group.after_help(footer.clone()), |group, name| {
        group.mut_subcommand(name, |c| c.after_help(footer.clone()))
    })
}

fn main() -> ExitCode {
    tune_allocator();
    let cli = parse_command_line();
    if let Command::Openapi = cli.command {
        print!("{}", api::openapi::document());
        return ExitCode::SUCCESS;
    }
    let config = match Config::load(cli.config.as_deref()) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    match runtime.block_on(run(cli.command, config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if is_interrupted(&error) => {
            eprintln!("{error:#}");
            eprintln!("interrupted: what was done is kept; run the same command again to resume");
            ExitCode::from(130)
        }
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn is_interrupted(error: &anyhow::Error) -> bool {
    use integration_service::erp::ErpError;
    use integration_service::fieldreport::service::FieldReportError;
    matches!(error.downcast_ref::<FieldReportError>(), Some(FieldReportError::Interrupted))
        || matches!(error.downcast_ref::<ErpError>(), Some(ErpError::FieldReport(FieldReportError::Interrupted)))
}

/// Long command-line work stops after its current page or record on Ctrl-C or SIGTERM,
/// releasing what it holds, so that running the command again resumes it.
fn stop_on_signal(service: &integration_service::fieldreport::service::FieldReportService) {
    let service = service.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        eprintln!("stopping after the current page…");
        service.request_stop();
    });
}

async fn run(command: Command, mut config: Config) -> anyhow::Result<()> {
    match command {
        Command::Serve { bind, sandbox } => {
            if let Some(bind) = bind {
                config.bind_address = bind.parse().map_err(|e| anyhow::anyhow!("--bind {bind:?}: {e}"))?;
            }
            serve(config, sandbox).await
        }
        Command::Migrate => {
            let store = Store::open(&config.database_url).await?.with_work_lease(config.work_lease);
            store.close().await;
            println!("migrations applied to {}", config.database_url.redacted());
            Ok(())
        }
        Command::User(command) => {
            let auth = authenticator(&config).await?;
            match command {
                UserCommand::Create { email, name, password_stdin: _ } => {
                    let mut password = String::new();
                    std::io::stdin().lock().read_line(&mut password)?;
                    let password = password.trim_end_matches(['\r', '\n']);
                    let user = auth.create_user(&email, name.as_deref(), password).await.map_err(describe)?;
                    println!("created user {} <{}> (id {})", user.name, user.email, user.id);
                }
                UserCommand::List => {
                    for user in auth.list_users().await.map_err(describe)? {
                        println!("{}\t{}\t{}", user.id, user.email, user.name);
                    }
                }
                UserCommand::Delete { email } => {
                    auth.delete_user(&email).await.map_err(describe)?;
                    println!("deleted user {email} and their tokens");
                }
            }
            Ok(())
        }
        Command::Token(TokenCommand::Revoke { email }) => {
            let auth = authenticator(&config).await?;
            let count = auth.revoke_all(&email).await.map_err(describe)?;
            println!("revoked {count} token(s) of {email}");
            Ok(())
        }
        Command::Sandbox { bind } => {
            let (log, _log_guard) = telemetry::init(config.log_format);
            let stop = shutdown_signal();
            let sandboxes = sandbox::start(bind, &log).await?;
            println!("leasing provider simulator: {}", sandboxes.leasing_base_url());
            println!(
                "field-report simulator: {} (Basic {}:{})",
                sandboxes.fieldreport_base_url(),
                sandbox::fieldreport::USERNAME,
                sandbox::fieldreport::PASSWORD
            );
            println!("ERP simulator: {} (AuthenticationToken {})", sandboxes.erp_base_url(), sandbox::erp::API_KEY);
            stop.await;
            Ok(())
        }
        Command::Fieldreport(FieldreportCommand::Sync { entity, reconcile }) => {
            let entities = match entity.as_deref() {
                Some(name) => vec![integration_service::fieldreport::service::entity_named(name)?],
                None => generated::fieldreport::ENTITIES.iter().collect(),
            };
            fieldreport_sync(&config, entities, reconcile).await
        }
        Command::Fieldreport(FieldreportCommand::Setup { stage }) => {
            let entities = integration_service::fieldreport::push::stage_entities(stage.as_deref())?;
            fieldreport_sync(&config, entities, false).await
        }
        Command::Erp(ErpCommand::Setup { model }) => {
            let models = match model {
                Some(name) => vec![integration_service::erp::model_named(&name)?],
                None => integration_service::erp::ErpService::all_models(),
            };
            erp_pull(&config, models, integration_service::erp::pull::PullKind::Full).await
        }
        #[cfg(feature = "bench-support")]
        Command::BenchInsertBaseline { entity, into_mirror } => {
            use integration_service::store::bench::BaselineTable;
            let store = Store::open(&config.database_url).await?.with_work_lease(config.work_lease);
            let table = if into_mirror { BaselineTable::Mirror } else { BaselineTable::Scratch };
            let (count, elapsed) = store.bench_insert_baseline(&entity, table).await?;
            store.close().await;
            println!("inserted {count} documents in {:.3} s", elapsed.as_secs_f64());
            Ok(())
        }
        #[cfg(feature = "bench-support")]
        Command::BenchForgetSet { entity } => {
            let store = Store::open(&config.database_url).await?.with_work_lease(config.work_lease);
            let removed = store.bench_forget_set(&entity).await;
            store.close().await;
            println!("removed {} records", removed?);
            Ok(())
        }
        Command::Erp(ErpCommand::Pull) => {
            let models = integration_service::erp::ErpService::all_models();
            erp_pull(&config, models, integration_service::erp::pull::PullKind::Incremental).await
        }
        Command::Fieldreport(FieldreportCommand::Post { stage, r#type, entity }) => {
            fieldreport_post(&config, stage.as_deref(), r#type.as_deref(), entity.as_deref()).await
        }
        Command::Openapi => unreachable!("handled before configuration is loaded"),
    }
}

/// Turns validation errors into readable lines for the terminal.
fn describe(error: integration_service::auth::AuthError) -> anyhow::Error {
    match error {
        integration_service::auth::AuthError::Invalid(fields) => {
            let lines: Vec<String> =
                fields.iter().flat_map(|(f, ms)| ms.iter().map(move |m| format!("{f}: {m}"))).collect();
            anyhow::anyhow!(lines.join("; "))
        }
        other => anyhow::anyhow!(other),
    }
}

/// `fieldreport sync` and `setup`: a progress bar on a terminal, a line per page otherwise.
async fn fieldreport_sync(
    config: &Config,
    entities: Vec<&'static generated::fieldreport::EntityInfo>,
    reconcile: bool,
) -> anyhow::Result<()> {
    use integration_service::fieldreport::service::FieldReportService;
    use integration_service::upstream::fieldreport::FieldReportClient;
    use std::io::IsTerminal;

    let store = Store::open(&config.database_url).await?.with_work_lease(config.work_lease);
    let service = FieldReportService::new(store.clone(), FieldReportClient::from_config(&config.fieldreport));
    stop_on_signal(&service);
    let terminal = std::io::stderr().is_terminal();
    for info in entities {
        let bar = indicatif::ProgressBar::new_spinner();
        if terminal {
            bar.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {prefix}: {msg} [{elapsed}]")
                    .expect("a valid template"),
            );
            bar.set_prefix(info.route);
        } else {
            bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
        let progress = |report: &integration_service::fieldreport::sync::SyncReport| {
            let rate = report.fetched as f64 / report.seconds.max(0.001);
            let line = format!("{} fetched, {} pages, {rate:.0} records/s", report.fetched, report.pages);
            if terminal {
                bar.set_message(line);
                bar.tick();
            } else {
                eprintln!("{}: {line}", report.entity);
            }
        };
        let report = service.sync(info, &progress).await.map_err(|e| anyhow::Error::new(e).context(info.route))?;
        bar.finish_and_clear();
        println!(
            "{}: fetched {}, inserted {}, updated {}, unchanged {}, skipped {}, pages {}, {:.1} s",
            report.entity,
            report.fetched,
            report.inserted,
            report.updated,
            report.unchanged,
            report.skipped,
            report.pages,
            report.seconds
        );
        if reconcile {
            let reconciled = service.reconcile(info).await.map_err(|e| anyhow::Error::new(e).context(info.route))?;
            println!(
                "{}: reconciled: {} upstream, {} checked, {} removed, {} kept with local changes waiting{}",
                reconciled.entity,
                reconciled.upstream,
                reconciled.checked,
                reconciled.removed,
                reconciled.kept_pending,
                if reconciled.kept_pending_ids.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", reconciled.kept_pending_ids.join(", "))
                }
            );
        }
    }
    store.close().await;
    Ok(())
}

/// `erp setup` and `erp pull`: a progress bar over the models on a terminal (records fetched
/// and rate of the current one), plain lines otherwise; one summary line per model.
async fn erp_pull(
    config: &Config,
    models: Vec<&'static generated::erp::ModelInfo>,
    kind: integration_service::erp::pull::PullKind,
) -> anyhow::Result<()> {
    use integration_service::erp::ErpService;
    use integration_service::erp::webhook::WebhookGuard;
    use integration_service::fieldreport::service::FieldReportService;
    use integration_service::upstream::erp::ErpClient;
    use integration_service::upstream::fieldreport::FieldReportClient;
    use std::io::IsTerminal;

    let store = Store::open(&config.database_url).await?.with_work_lease(config.work_lease);
    let client = ErpClient::from_config(&config.erp).map_err(|e| anyhow::anyhow!("{e}"))?;
    let fieldreport = FieldReportService::new(store.clone(), FieldReportClient::from_config(&config.fieldreport));
    stop_on_signal(&fieldreport);
    let guard = WebhookGuard { allowlist: Vec::new(), secret: None };
    let service = ErpService::new(store.clone(), Ok(client), fieldreport, guard);
    let terminal = std::io::stderr().is_terminal();
    let bar = indicatif::ProgressBar::new(models.len() as u64);
    if terminal {
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} models [{elapsed}] {prefix}: {msg}")
                .expect("a valid template"),
        );
    } else {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let say = |line: String| if terminal { bar.println(line) } else { println!("{line}") };
    let (mut failed, mut fetched) = (0, 0);
    for info in models {
        bar.set_prefix(info.name);
        let started = std::time::Instant::now();
        let progress = |n: u64| {
            let line = format!("{n} fetched, {:.0} records/s", n as f64 / started.elapsed().as_secs_f64().max(0.001));
            if terminal {
                bar.set_message(line);
            } else {
                eprintln!("{}: {line}", info.name);
            }
        };
        match service.pull(info, &kind, &progress).await {
            Ok(report) => {
                fetched += report.fetched;
                say(format!(
                    "{}: fetched {}, inserted {}, updated {}, unchanged {}, removed {}, pages {}, {:.1} s",
                    report.model,
                    report.fetched,
                    report.inserted,
                    report.updated,
                    report.unchanged,
                    report.removed,
                    report.pages,
                    started.elapsed().as_secs_f64()
                ));
            }
            Err(
                error @ integration_service::erp::ErpError::FieldReport(
                    integration_service::fieldreport::service::FieldReportError::Interrupted,
                ),
            ) => {
                bar.finish_and_clear();
                store.close().await;
                return Err(anyhow::Error::new(error).context(info.name));
            }
            Err(error) => {
                failed += 1;
                say(format!("{}: failed: {error}", info.name));
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    println!("{fetched} records fetched; {failed} models failed");
    store.close().await;
    anyhow::ensure!(failed == 0, "{failed} models failed");
    Ok(())
}

/// `fieldreport post`: pushes internal writes and prints one line per entity and type.
async fn fieldreport_post(
    config: &Config,
    stage: Option<&str>,
    kind: Option<&str>,
    entity: Option<&str>,
) -> anyhow::Result<()> {
    use integration_service::fieldreport::push::{push_kinds, stage_entities};
    use integration_service::fieldreport::service::FieldReportService;
    use integration_service::upstream::fieldreport::FieldReportClient;
    use std::io::IsTerminal;

    let kinds = push_kinds(kind)?;
    let mut entities = stage_entities(stage)?;
    if let Some(name) = entity {
        entities.retain(|e| e.route == name || e.set == name);
        anyhow::ensure!(!entities.is_empty(), "{name} is not an entity of this stage");
    }
    let store = Store::open(&config.database_url).await?.with_work_lease(config.work_lease);
    let service = FieldReportService::new(store.clone(), FieldReportClient::from_config(&config.fieldreport));
    stop_on_signal(&service);
    let terminal = std::io::stderr().is_terminal();
    let mut failed = 0;
    for info in entities {
        for kind in &kinds {
            let bar = indicatif::ProgressBar::new(0);
            if terminal {
                bar.set_style(
                    indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {prefix} [{elapsed}] {msg}")
                        .expect("a valid template"),
                );
                bar.set_prefix(format!("{} {kind}", info.route));
            } else {
                bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
            }
            let started = std::time::Instant::now();
            let last_line = std::sync::Mutex::new(std::time::Instant::now());
            let progress = |report: &integration_service::fieldreport::push::PushReport, total: usize| {
                let done = report.pushed + report.recovered + report.skipped + report.failed;
                let rate = done as f64 / started.elapsed().as_secs_f64().max(0.001);
                let line = format!("{done}/{total} records, {} failed, {rate:.0} records/s", report.failed);
                if terminal {
                    bar.set_length(total as u64);
                    bar.set_position(done);
                    bar.set_message(format!("{rate:.0} records/s"));
                } else {
                    let mut last = last_line.lock().expect("progress lock");
                    if last.elapsed() >= std::time::Duration::from_secs(2) || done as usize == total {
                        *last = std::time::Instant::now();
                        eprintln!("{} {kind}: {line}", info.route);
                    }
                }
            };
            let report = service
                .push_with_progress(info, kind, &progress)
                .await
                .map_err(|e| anyhow::Error::new(e).context(format!("{} {kind}", info.route)))?;
            bar.finish_and_clear();
            println!(
                "{} {}: pushed {}, recovered {}, skipped {}, failed {}",
                report.entity, report.kind, report.pushed, report.recovered, report.skipped, report.failed
            );
            for failure in &report.failures {
                println!("  {}: {}", failure.id, failure.message);
            }
            failed += report.failed;
        }
    }
    store.close().await;
    anyhow::ensure!(failed == 0, "{failed} record(s) were refused and stay pending");
    Ok(())
}

async fn authenticator(config: &Config) -> anyhow::Result<Authenticator> {
    let store = Store::open(&config.database_url).await?.with_work_lease(config.work_lease);
    Ok(Authenticator::new(store, config.token_ttl)?)
}

async fn serve(mut config: Config, sandbox: bool) -> anyhow::Result<()> {
    let (log, _log_guard) = telemetry::init(config.log_format);
    slog::info!(log, "starting"; "database" => config.database_url.redacted(), "bind" => %config.bind_address);
    match raise_open_files_limit() {
        Ok(open_files) => slog::info!(log, "open files limit"; "open_files" => open_files,
            "max_connections" => config.max_connections, "max_connections_per_address" => config.max_connections_per_address),
        Err(error) => slog::warn!(log, "the open files limit could not be raised"; "error" => %error),
    }
    if sandbox {
        let sandboxes = sandbox::start(None, &log).await?;
        config.leasing.base_url = Some(sandboxes.leasing_base_url().parse()?);
        config.fieldreport.base_url = Some(sandboxes.fieldreport_base_url().parse()?);
        config.fieldreport.username = Some(sandbox::fieldreport::USERNAME.to_string());
        config.fieldreport.password = Some(sandbox::fieldreport::PASSWORD.to_string().into());
        config.erp.base_url = Some(sandboxes.erp_base_url().parse()?);
        config.erp.api_key = Some(sandbox::erp::API_KEY.to_string().into());
        println!("sandbox: leasing provider simulator at {}", sandboxes.leasing_base_url());
        println!("sandbox: field-report simulator at {}", sandboxes.fieldreport_base_url());
        println!("sandbox: ERP simulator at {}", sandboxes.erp_base_url());
        // The simulator calls the webhook from loopback; a secret is made up unless configured.
        if config.erp.webhook_allowlist.is_empty() {
            config.erp.webhook_allowlist = vec!["127.0.0.0/8".parse()?, "::1/128".parse()?];
        }
        if config.erp.webhook_secret.is_none() {
            config.erp.webhook_secret = Some(uuid::Uuid::new_v4().simple().to_string().into());
        }
    }
    let stop = shutdown_signal();
    let service = server::start(&config, &log).await?;
    if sandbox {
        register_sandbox_webhooks(&config, &service.url()).await?;
    }
    slog::info!(log, "listening"; "address" => service.url(), "docs" => format!("{}/{}", service.url(), config.docs_path));
    println!("integration-service listening on {}", service.url());
    println!("API reference: {}/{}", service.url(), config.docs_path);
    stop.await;
    slog::info!(log, "shutting down: finishing in-flight requests");
    service.shutdown().await;
    slog::info!(log, "stopped");
    Ok(())
}

/// Registers the service's webhook URL at the ERP simulator for the mapped models, so a change
/// made through the simulator reaches the service as it would from the real ERP.
async fn register_sandbox_webhooks(config: &Config, service_url: &str) -> anyhow::Result<()> {
    use integration_service::upstream::erp::ErpClient;
    use secrecy::ExposeSecret;
    let client = ErpClient::from_config(&config.erp).map_err(|e| anyhow::anyhow!("{e}"))?;
    let secret = config.erp.webhook_secret.as_ref().map(|s| s.expose_secret().to_string()).unwrap_or_default();
    let url = format!("{service_url}/api/v1/erp/webhooks?secret={secret}");
    for mapping in integration_service::erp::mapping::MAPPINGS {
        let webhook = serde_json::json!({
            "entityName": mapping.model, "atCreate": true, "atUpdate": true, "atDelete": true,
            "requestMethod": "POST", "url": url,
        });
        client
            .create("webhook", &webhook)
            .await
            .map_err(|e| anyhow::anyhow!("registering the sandbox webhook: {e}"))?;
    }
    println!("sandbox: ERP webhooks for customer, contact and article registered");
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM. The handlers are installed when this is called, not when
/// the future is first polled: a signal sent right after the service said it listens must not
/// find the default action (the process killed without a clean stop).
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt()).expect("SIGINT handler");
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = term.recv() => {}
        }
    }
}
