//! `fieldreport sync`, `setup` and `post`: a progress bar on a terminal, plain lines otherwise.

use crate::assembly::Services;

use super::signals::stop_on_signal;

/// `fieldreport sync` and `setup`: a progress bar on a terminal, a line per page otherwise.
pub(super) async fn sync(
    services: &Services,
    entities: Vec<&'static generated::fieldreport::EntityInfo>,
    reconcile: bool,
) -> anyhow::Result<()> {
    use std::io::IsTerminal;

    let (store, service) = (&services.store, &services.fieldreport);
    stop_on_signal(service);
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
        let progress = |report: &crate::fieldreport::sync::SyncReport| {
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

/// `fieldreport post`: pushes internal writes and prints one line per entity and type.
pub(super) async fn post(
    services: &Services,
    stage: Option<&str>,
    kind: Option<&str>,
    entity: Option<&str>,
) -> anyhow::Result<()> {
    use crate::fieldreport::push::push_kinds;
    use crate::fieldreport::stages::stage_entities;
    use std::io::IsTerminal;

    let kinds = push_kinds(kind)?;
    let mut entities = stage_entities(stage)?;
    if let Some(name) = entity {
        entities.retain(|e| e.route == name || e.set == name);
        anyhow::ensure!(!entities.is_empty(), "{name} is not an entity of this stage");
    }
    let (store, service) = (&services.store, &services.fieldreport);
    stop_on_signal(service);
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
            let progress = |report: &crate::fieldreport::push::PushReport, total: usize| {
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
