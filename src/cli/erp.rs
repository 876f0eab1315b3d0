//! `erp setup` and `erp pull`.

use crate::assembly::Services;

use super::signals::stop_on_signal;

/// `erp setup` and `erp pull`: a progress bar over the models on a terminal (records fetched
/// and rate of the current one), plain lines otherwise; one summary line per model.
pub(super) async fn pull(
    services: &Services,
    models: Vec<&'static generated::erp::ModelInfo>,
    kind: crate::erp::pull::PullKind,
) -> anyhow::Result<()> {
    use std::io::IsTerminal;

    let (store, service) = (&services.store, &services.erp);
    service.client().map_err(|e| anyhow::anyhow!("{e}"))?;
    stop_on_signal(&services.fieldreport);
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
                error @ crate::erp::ErpError::FieldReport(crate::fieldreport::service::FieldReportError::Interrupted),
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
