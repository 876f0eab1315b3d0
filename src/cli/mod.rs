//! The `integration-service` command line: the subcommands' definitions and their dispatch.
//! Each command gets its services from the same assembly as `serve` ([`crate::assembly`]).

mod backup;
mod erp;
mod fieldreport;
mod jobs;
mod process;
mod ready;
mod serve;
mod signals;
mod users;
mod webhooks;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::assembly::Services;
use crate::config::Config;
use crate::store::Store;
use crate::{api, sandbox, telemetry};
use users::{TokenCommand, UserCommand};

/// The settings each kind of command reads (from the environment, or in lower case from the
/// `--config` file), named at the end of its help; `serve` reads every one of
/// `config::SETTING_NAMES`. Their meaning and defaults: docs/configuration.md.
const DATABASE_SETTINGS: &str = "DATABASE_URL, WORK_LEASE_SECONDS";
const BACKUP_SETTINGS: &str = "DATABASE_URL";
const AUTH_SETTINGS: &str = "DATABASE_URL, WORK_LEASE_SECONDS, TOKEN_TTL_MINUTES, LOGIN_TOKENS_PER_USER";
const FIELDREPORT_SETTINGS: &str = "DATABASE_URL, WORK_LEASE_SECONDS, FIELDREPORT_BASE_URL, FIELDREPORT_USERNAME, \
     FIELDREPORT_PASSWORD, FIELDREPORT_TIMEOUT_SECONDS, FIELDREPORT_SYNC_OVERLAP_SECONDS";
const ERP_SETTINGS: &str = "DATABASE_URL, WORK_LEASE_SECONDS, ERP_BASE_URL, ERP_API_KEY, ERP_TIMEOUT_SECONDS, \
     ERP_CONNECT_TIMEOUT_SECONDS, ERP_PULL_OVERLAP_SECONDS, FIELDREPORT_BASE_URL, FIELDREPORT_USERNAME, \
     FIELDREPORT_PASSWORD, FIELDREPORT_TIMEOUT_SECONDS, FIELDREPORT_SYNC_OVERLAP_SECONDS";
const WEBHOOK_SETTINGS: &str = "ERP_BASE_URL, ERP_API_KEY, ERP_TIMEOUT_SECONDS, ERP_CONNECT_TIMEOUT_SECONDS, \
     ERP_WEBHOOK_SECRET, ERP_WEBHOOK_ALLOWLIST";
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
    /// Copy the SQLite database into a new file while the service runs (Postgres: pg_dump; see
    /// docs/operations.md, "Backups").
    Backup {
        /// The backup file to write; it must not exist.
        #[arg(long, value_name = "PATH")]
        to: PathBuf,
    },
    /// Replace the SQLite database with a backup; refused while a service or command has the
    /// database open. The replaced file is kept beside it.
    Restore {
        /// The backup file to restore.
        #[arg(long, value_name = "PATH")]
        from: PathBuf,
    },
    /// Ask the service on this host whether it is ready (GET /readyz at BIND_ADDRESS, on
    /// loopback when it listens on every interface): exit 0 when it answers 200, else 1. For a
    /// container's health check.
    Ready {
        /// Another URL to ask instead.
        #[arg(long, value_name = "URL")]
        url: Option<String>,
    },
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
    /// Queue long work as a job (run by a serving instance) and follow it; list, show, cancel.
    #[command(subcommand)]
    Jobs(jobs::JobsCommand),
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
    /// For `cargo xtask bench`: read every record of a mirrored set (`fieldreport` or `erp`)
    /// straight from the database in key order and print the rate.
    #[cfg(feature = "bench-support")]
    #[command(hide = true)]
    BenchReadSet { mirror: String, set: String },
    /// Run only the upstream simulators (for trying clients against them).
    Sandbox {
        /// Address of the leasing simulator (default: a free loopback port).
        #[arg(long, value_name = "ADDR")]
        bind: Option<SocketAddr>,
    },
}

#[derive(Subcommand)]
enum FieldreportCommand {
    /// Pull one entity set (route or set name) or all of them from the field-report system.
    Sync {
        entity: Option<String>,
        /// Then reconcile both ways: read every Id and Version of the set, fetch what the mirror
        /// lacks or holds stale, remove what the field-report system no longer has (records
        /// with a local change waiting are kept and reported).
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
    /// Incremental pull of every model since the overlap before its cursor.
    Pull,
    /// The service's webhook registrations at the ERP (its own webhook API).
    #[command(subcommand)]
    Webhooks(WebhooksCommand),
}

#[derive(Subcommand)]
enum WebhooksCommand {
    /// Register the service's webhook URL at the ERP for every model the mapping handles
    /// (customer, contact, article); registrations already there for the URL are kept.
    Register {
        /// The service's public address (the webhook route's path is added), e.g.
        /// https://integration.example.com; the secret comes from ERP_WEBHOOK_SECRET.
        #[arg(long, value_name = "URL")]
        url: String,
    },
    /// List every webhook registered at the ERP (secrets hidden).
    List,
    /// Remove the registrations of the service's webhook URL; other webhooks stay.
    Unregister {
        /// The service's public address, as given to `register`.
        #[arg(long, value_name = "URL")]
        url: String,
    },
}

/// Parses the command line with each command's help naming the settings it reads.
fn parse_command_line() -> Cli {
    let every_setting = crate::config::SETTING_NAMES.join(", ");
    let command = Cli::command()
        .mut_subcommand("serve", |c| c.after_help(reads(&every_setting)))
        .mut_subcommand("migrate", |c| c.after_help(reads(DATABASE_SETTINGS)))
        .mut_subcommand("backup", |c| c.after_help(reads(BACKUP_SETTINGS)))
        .mut_subcommand("restore", |c| c.after_help(reads(BACKUP_SETTINGS)))
        .mut_subcommand("ready", |c| c.after_help(reads("BIND_ADDRESS")))
        .mut_subcommand("user", |c| with_footer(c, AUTH_SETTINGS))
        .mut_subcommand("token", |c| with_footer(c, AUTH_SETTINGS))
        .mut_subcommand("fieldreport", |c| with_footer(c, FIELDREPORT_SETTINGS))
        .mut_subcommand("erp", |c| {
            with_footer(c, ERP_SETTINGS).mut_subcommand("webhooks", |c| with_footer(c, WEBHOOK_SETTINGS))
        })
        .mut_subcommand("jobs", |c| with_footer(c, DATABASE_SETTINGS))
        .mut_subcommand("sandbox", |c| c.after_help(reads(SANDBOX_SETTINGS)))
        .mut_subcommand("openapi", |c| c.after_help("Reads no settings."));
    Cli::from_arg_matches(&command.get_matches()).unwrap_or_else(|error| error.exit())
}

/// A command group and each of its subcommands, at any depth, get the same footer.
fn with_footer(group: clap::Command, settings: &str) -> clap::Command {
    let names: Vec<String> = group.get_subcommands().map(|c| c.get_name().to_string()).collect();
    names
        .iter()
        .fold(group.after_help(reads(settings)), |group, name| group.mut_subcommand(name, |c| with_footer(c, settings)))
}

/// Runs the command line: the binary's `main`.
pub fn main() -> ExitCode {
    process::tune_allocator();
    let cli = parse_command_line();
    if let Command::Openapi = cli.command {
        print!("{}", api::support::openapi::document());
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
    use crate::erp::ErpError;
    use crate::fieldreport::service::FieldReportError;
    matches!(error.downcast_ref::<FieldReportError>(), Some(FieldReportError::Interrupted))
        || matches!(error.downcast_ref::<ErpError>(), Some(ErpError::FieldReport(FieldReportError::Interrupted)))
}

async fn run(command: Command, mut config: Config) -> anyhow::Result<()> {
    match command {
        Command::Serve { bind, sandbox } => {
            if let Some(bind) = bind {
                config.front.bind_address = bind.parse().map_err(|e| anyhow::anyhow!("--bind {bind:?}: {e}"))?;
            }
            serve::serve(config, sandbox).await
        }
        Command::Migrate => {
            let store = Store::open_configured(&config.store).await?;
            store.close().await;
            println!("migrations applied to {}", config.store.database_url.redacted());
            Ok(())
        }
        Command::Backup { to } => backup::backup(&config.store.database_url, &to),
        Command::Restore { from } => backup::restore(&config.store.database_url, &from),
        Command::Ready { url } => {
            ready::ready(&url.unwrap_or_else(|| ready::readiness_url(config.front.bind_address))).await
        }
        Command::User(command) => users::user(&Services::assemble(&config).await?, command).await,
        Command::Token(command) => users::token(&Services::assemble(&config).await?, command).await,
        Command::Sandbox { bind } => {
            let (log, _log_guard) = telemetry::init(config.log_format);
            let stop = signals::shutdown_signal();
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
                Some(name) => vec![crate::fieldreport::service::entity_named(name)?],
                None => generated::fieldreport::ENTITIES.iter().collect(),
            };
            fieldreport::sync(&Services::assemble(&config).await?, entities, reconcile).await
        }
        Command::Fieldreport(FieldreportCommand::Setup { stage }) => {
            let entities = crate::fieldreport::stages::stage_entities(stage.as_deref())?;
            fieldreport::sync(&Services::assemble(&config).await?, entities, false).await
        }
        Command::Erp(ErpCommand::Setup { model }) => {
            let models = match model {
                Some(name) => vec![crate::erp::model_named(&name)?],
                None => crate::erp::ErpService::all_models(),
            };
            erp::pull(&Services::assemble(&config).await?, models, crate::erp::pull::PullKind::Full).await
        }
        #[cfg(feature = "bench-support")]
        Command::BenchInsertBaseline { entity, into_mirror } => {
            use crate::store::bench::BaselineTable;
            let store = Store::open_configured(&config.store).await?;
            let table = if into_mirror { BaselineTable::Mirror } else { BaselineTable::Scratch };
            let (count, elapsed) = store.bench_insert_baseline(&entity, table).await?;
            store.close().await;
            println!("inserted {count} documents in {:.3} s", elapsed.as_secs_f64());
            Ok(())
        }
        #[cfg(feature = "bench-support")]
        Command::BenchForgetSet { entity } => {
            let store = Store::open_configured(&config.store).await?;
            let removed = store.bench_forget_set(&entity).await;
            store.close().await;
            println!("removed {} records", removed?);
            Ok(())
        }
        #[cfg(feature = "bench-support")]
        Command::BenchReadSet { mirror, set } => {
            let store = Store::open_configured(&config.store).await?;
            let read = store.bench_read_set(&mirror, &set).await;
            store.close().await;
            let (count, elapsed) = read?;
            println!("read {count} records in {:.3} s", elapsed.as_secs_f64());
            Ok(())
        }
        Command::Erp(ErpCommand::Pull) => {
            let models = crate::erp::ErpService::all_models();
            erp::pull(&Services::assemble(&config).await?, models, crate::erp::pull::PullKind::Incremental).await
        }
        Command::Erp(ErpCommand::Webhooks(WebhooksCommand::Register { url })) => {
            webhooks::register_command(&config.erp, &url).await
        }
        Command::Erp(ErpCommand::Webhooks(WebhooksCommand::List)) => webhooks::list_command(&config.erp).await,
        Command::Erp(ErpCommand::Webhooks(WebhooksCommand::Unregister { url })) => {
            webhooks::unregister_command(&config.erp, &url).await
        }
        Command::Fieldreport(FieldreportCommand::Post { stage, r#type, entity }) => {
            let services = Services::assemble(&config).await?;
            fieldreport::post(&services, stage.as_deref(), r#type.as_deref(), entity.as_deref()).await
        }
        Command::Jobs(command) => jobs::jobs(&Services::assemble(&config).await?, command).await,
        Command::Openapi => unreachable!("handled before configuration is loaded"),
    }
}
