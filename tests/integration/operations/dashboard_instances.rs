//! The dashboard's instance choice: a panel of series each process keeps for itself follows it.

use std::path::PathBuf;

use serde_json::Value;

use super::operator_files::{documented_metrics, promql_names};

/// Every series a panel reads that each instance keeps in its own process (the counters and
/// histograms, and how late its background tasks began) is filtered by the dashboard's
/// `$instance`, as the other panels of that kind are: otherwise picking an instance shows the
/// sum or the worst of all. The database's gauges are the same on every instance and are not.
#[test]
fn panels_of_each_instance_s_own_series_follow_the_instance_chosen() {
    let per_instance: Vec<String> = documented_metrics()
        .into_iter()
        .filter(|family| family.kind != "gauge" || family.name == "integration_background_lag_seconds")
        .map(|family| family.name)
        .collect();
    assert!(per_instance.len() >= 10, "{per_instance:?}");
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy/grafana/dashboard.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut unfiltered = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().expect("an expression");
            for (metric, labels) in promql_names(expr).selectors {
                let family = metric.trim_end_matches("_bucket");
                if per_instance.iter().any(|name| name == family) && !labels.iter().any(|label| label == "instance") {
                    unfiltered.push(format!("{}: {metric}", panel["title"].as_str().unwrap_or("?")));
                }
            }
        }
    }
    assert!(unfiltered.is_empty(), "panels not filtered by $instance: {unfiltered:#?}");
}
