//! `jobs run`, `show`, `list` and `cancel`: queue a job in the database, where the job runner
//! of a serving instance picks it up, and follow it with a progress bar (plain lines when not
//! on a terminal). The work itself still runs directly with `fieldreport sync` and the like.

use std::time::{Duration, Instant};

use clap::Subcommand;

use crate::assembly::Services;
use crate::store::jobs::JobRow;

#[derive(Subcommand)]
pub(super) enum JobsCommand {
    /// Queue a job: KIND is fieldreport.sync, fieldreport.reconcile, fieldreport.setup,
    /// fieldreport.post, erp.setup or erp.pull; TARGET an entity set, stage or model (default:
    /// every target). A serving instance runs it.
    Run {
        kind: String,
        target: Option<String>,
        /// Follow the job with a progress bar until it ends (Ctrl-C stops following, not the job).
        #[arg(long)]
        follow: bool,
    },
    /// Show one job.
    Show { id: i64 },
    /// The newest jobs, optionally of one kind and status.
    List {
        #[arg(long)]
        kind: Option<String>,
        #[arg(long)]
        status: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: u32,
    },
    /// Cancel a queued job, or stop a running one at its next page.
    Cancel { id: i64 },
}

/// One line about a job.
fn line(job: &JobRow) -> String {
    let target = if job.target.is_empty() { "every target" } else { job.target.as_str() };
    let mut text = format!("job {} {} ({target}): {}", job.id, job.kind, job.status);
    if job.status == "running" {
        text.push_str(&format!(", {} records", job.progress.done));
    }
    if let Some(error) = &job.error {
        text.push_str(&format!(": {error}"));
    }
    text
}

pub(super) async fn jobs(services: &Services, command: JobsCommand) -> anyhow::Result<()> {
    let jobs = &services.jobs;
    let outcome = match command {
        JobsCommand::Run { kind, target, follow } => {
            let job = jobs.enqueue(&kind, target.as_deref(), None).await.map_err(|e| anyhow::anyhow!(e.explained()))?;
            println!("{}", line(&job));
            if follow { self::follow(services, job.id).await } else { Ok(()) }
        }
        JobsCommand::Show { id } => {
            let job = jobs.get(id).await.map_err(|e| anyhow::anyhow!(e.explained()))?;
            println!("{}", line(&job));
            if let Some(result) = &job.result {
                println!("{result}");
            }
            Ok(())
        }
        JobsCommand::List { kind, status, limit } => {
            let (page, total) = jobs
                .list(kind.as_deref(), status.as_deref(), 1, limit.max(1))
                .await
                .map_err(|e| anyhow::anyhow!(e.explained()))?;
            for job in &page {
                println!("{}", line(job));
            }
            println!("{} of {total} jobs", page.len());
            Ok(())
        }
        JobsCommand::Cancel { id } => {
            let job = jobs.cancel(id, None).await.map_err(|e| anyhow::anyhow!(e.explained()))?;
            println!("{}", line(&job));
            Ok(())
        }
    };
    services.store.close().await;
    outcome
}

/// Shows the job's progress until it ends; fails unless it succeeded.
async fn follow(services: &Services, id: i64) -> anyhow::Result<()> {
    use std::io::IsTerminal;

    let terminal = std::io::stderr().is_terminal();
    let bar = indicatif::ProgressBar::new_spinner();
    if terminal {
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} job {prefix}: {msg} [{elapsed}]")
                .expect("a valid template"),
        );
        bar.set_prefix(id.to_string());
    } else {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let started = Instant::now();
    let mut hinted = false;
    let mut last_line = String::new();
    let interrupted = super::signals::shutdown_signal();
    tokio::pin!(interrupted);
    let job = loop {
        let job = services.jobs.get(id).await.map_err(|e| anyhow::anyhow!(e.explained()))?;
        if !["queued", "running"].contains(&job.status.as_str()) {
            break job;
        }
        let rate = job.progress.done as f64 / started.elapsed().as_secs_f64().max(0.001);
        let message = match (&job.status[..], job.progress.total) {
            ("queued", _) => "queued".to_string(),
            (_, Some(total)) => format!("{}/{total} records, {rate:.0} records/s", job.progress.done),
            _ => format!("{} records, {rate:.0} records/s", job.progress.done),
        };
        let message = match &job.progress.current {
            Some(current) => format!("{current}: {message}"),
            None => message,
        };
        if terminal {
            bar.set_message(message);
            bar.tick();
        } else if message != last_line {
            eprintln!("job {id}: {message}");
            last_line = message;
        }
        if job.status == "queued" && !hinted && started.elapsed() > Duration::from_secs(10) {
            hinted = true;
            let hint = "still queued: a serving instance (integration-service serve) runs jobs";
            if terminal { bar.println(hint) } else { eprintln!("{hint}") }
        }
        tokio::select! {
            _ = &mut interrupted => {
                bar.finish_and_clear();
                println!("stopped following; job {id} goes on (integration-service jobs cancel {id} stops it)");
                return Ok(());
            }
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
        }
    };
    bar.finish_and_clear();
    println!("{}", line(&job));
    if let Some(result) = &job.result {
        println!("{result}");
    }
    anyhow::ensure!(job.status == "succeeded", "job {id} {}", job.status);
    Ok(())
}
