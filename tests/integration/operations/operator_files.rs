//! The operator's files under deploy/ held to what the service really exposes and to each
//! other: every metric and label that an alerting rule (deploy/prometheus/rules.yml) or a
//! dashboard panel (deploy/grafana/dashboard.json) names must be in a scrape of `/metrics`
//! (the README tour's, see readme_tour.rs); docs/operations.md's table of metrics must be that
//! scrape's, family by family, with the labels and values it lists; and the reference
//! deployment (deploy/compose.yaml) must parse and point at files that exist.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Labels Prometheus adds to every scraped series, and the series it makes itself.
const TARGET_LABELS: [&str; 2] = ["job", "instance"];
const PROMETHEUS_SERIES: [&str; 1] = ["up"];

/// PromQL's words that are not metric names: aggregations, operators, modifiers.
const KEYWORDS: [&str; 25] = [
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "and",
    "or",
    "unless",
    "offset",
    "bool",
    "atan2",
    "inf",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The metric names of a scrape, each with the label names its samples carry.
pub fn exposed(scrape: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut metrics: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in scrape.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let name_end = line.find(['{', ' ']).unwrap_or(line.len());
        let labels = metrics.entry(line[..name_end].to_string()).or_default();
        if line[name_end..].starts_with('{') {
            let body = &line[name_end + 1..line.rfind('}').expect("a closed label set")];
            labels.extend(label_matchers(body).into_iter().map(|(name, _)| name));
        }
    }
    metrics
}

/// What a PromQL expression names: metric selectors with their label names, and the labels
/// of its `by`, `without`, `on` and `ignoring` clauses.
#[derive(Debug, Default, PartialEq)]
pub struct Names {
    pub selectors: Vec<(String, Vec<String>)>,
    pub grouping: Vec<String>,
    /// Each label of a `by`, `without`, `on` or `ignoring` clause with the metrics it applies
    /// to, each of which must have it: those of its aggregation's argument (`by`, `without`),
    /// or every one of the expression (`on`, `ignoring`: both sides of the match).
    pub scoped: Vec<(String, Vec<String>)>,
}

/// For each `(` of `chars` outside strings, the index of its `)`.
fn parentheses(chars: &[char]) -> BTreeMap<usize, usize> {
    let (mut pairs, mut open, mut in_string, mut escaped) = (BTreeMap::new(), Vec::new(), false, false);
    for (i, &c) in chars.iter().enumerate() {
        match (in_string, escaped, c) {
            (true, false, '\\') => escaped = true,
            (true, false, '"') => in_string = false,
            (true, ..) => escaped = false,
            (false, _, '"') => in_string = true,
            (false, _, '(') => open.push(i),
            (false, _, ')') => {
                pairs.insert(open.pop().expect("balanced parentheses"), i);
            }
            _ => {}
        }
    }
    pairs
}

/// The `name op "value"` pairs of a label set's body, names with their values.
fn label_matchers(body: &str) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let mut rest = body;
    loop {
        rest = rest.trim_start_matches([',', ' ', '\n']);
        let Some(op) = rest.find(['=', '!']) else { break };
        let name = rest[..op].trim().to_string();
        let after_op = rest[op..].trim_start_matches(['=', '!', '~']).trim_start();
        let (value, tail) = quoted(after_op);
        pairs.push((name, value));
        rest = tail;
    }
    pairs
}

/// A double-quoted string at the start of `text` (escapes kept as written), and what follows.
fn quoted(text: &str) -> (String, &str) {
    let body = text.strip_prefix('"').expect("a quoted label value");
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match (escaped, c) {
            (false, '\\') => escaped = true,
            (false, '"') => return (body[..i].to_string(), &body[i + 1..]),
            _ => escaped = false,
        }
    }
    panic!("an unclosed string in {text}")
}

/// Reads the names of a PromQL expression (the subset the rules and panels use: selectors,
/// functions, aggregations with their clauses, ranges, numbers and strings).
pub fn promql_names(expr: &str) -> Names {
    let mut names = Names::default();
    let chars: Vec<char> = expr.chars().collect();
    let text = |from: usize, to: usize| chars[from..to].iter().collect::<String>();
    let next_non_space = |mut i: usize| {
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        i
    };
    let pairs = parentheses(&chars);
    // Each clause's labels with the span of characters its metrics are in, and where each
    // selector begins.
    let mut clauses: Vec<(Vec<String>, usize, usize)> = Vec::new();
    let mut starts: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' {
            let tail = text(i, chars.len());
            let (_, rest) = quoted(&tail);
            i = chars.len() - rest.chars().count();
        } else if c == '[' {
            i += chars[i..].iter().position(|&c| c == ']').expect("a closed range") + 1;
        } else if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':') {
                i += 1;
            }
            let word = text(start, i);
            let after = next_non_space(i);
            if ["by", "without", "on", "ignoring", "group_left", "group_right"].contains(&word.as_str()) {
                if chars.get(after) == Some(&'(') {
                    let close = pairs[&after];
                    let labels: Vec<String> = text(after + 1, close)
                        .split(',')
                        .map(str::trim)
                        .filter(|l| !l.is_empty())
                        .map(String::from)
                        .collect();
                    names.grouping.extend(labels.iter().cloned());
                    // An aggregation's argument follows its clause (`sum by (x) (…)`) or comes
                    // before it (`sum(…) by (x)`); a match's operands are the whole expression.
                    let before = (0..start).rev().find(|&j| !chars[j].is_whitespace());
                    let span = match word.as_str() {
                        "by" | "without" => match (chars.get(next_non_space(close + 1)), before) {
                            (Some('('), _) => Some((next_non_space(close + 1), pairs[&next_non_space(close + 1)])),
                            (_, Some(end)) if chars[end] == ')' => {
                                pairs.iter().find(|&(_, &to)| to == end).map(|(&from, _)| (from, end))
                            }
                            _ => None,
                        },
                        "on" | "ignoring" => Some((0, chars.len())),
                        _ => None,
                    };
                    if let Some((from, to)) = span {
                        clauses.push((labels, from, to));
                    }
                    i = close + 1;
                }
            } else if KEYWORDS.contains(&word.as_str()) || chars.get(after) == Some(&'(') {
                // An aggregation, an operator or a function.
            } else {
                let mut labels = Vec::new();
                starts.push(start);
                if chars.get(after) == Some(&'{') {
                    let close = after + chars[after..].iter().position(|&c| c == '}').expect("a closed selector");
                    labels = label_matchers(&text(after + 1, close)).into_iter().map(|(name, _)| name).collect();
                    i = close + 1;
                }
                names.selectors.push((word, labels));
            }
        } else {
            i += 1;
        }
    }
    for (labels, from, to) in clauses {
        let metrics: Vec<String> = (names.selectors.iter().zip(&starts))
            .filter(|&(_, &start)| (from..to).contains(&start))
            .map(|((metric, _), _)| metric.clone())
            .collect();
        names.scoped.extend(labels.into_iter().map(|label| (label, metrics.clone())));
    }
    names
}

/// The label names a template names: `{{ $labels.x }}` in annotations, `{{x}}` in legends.
fn template_labels(template: &str) -> Vec<String> {
    template
        .split("{{")
        .skip(1)
        .filter_map(|part| part.split("}}").next())
        .map(str::trim)
        .filter_map(|inner| {
            inner.strip_prefix("$labels.").or_else(|| (!inner.starts_with(['$', '.'])).then_some(inner))
        })
        .map(|name| name.split_whitespace().next().unwrap_or_default().to_string())
        .collect()
}

/// What `what` (a rule or a panel) names that `metrics` lacks, one line each.
fn missing(what: &str, expr: &str, templates: &[&str], metrics: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let names = promql_names(expr);
    let mut problems = Vec::new();
    let mut known_labels: BTreeSet<&str> = TARGET_LABELS.into_iter().collect();
    for (metric, labels) in &names.selectors {
        if PROMETHEUS_SERIES.contains(&metric.as_str()) {
            known_labels.extend(labels.iter().map(String::as_str));
            continue;
        }
        let Some(exposed) = metrics.get(metric) else {
            problems.push(format!("{what}: the service exposes no metric {metric}"));
            continue;
        };
        known_labels.extend(exposed.iter().map(String::as_str));
        for label in labels.iter().filter(|l| !TARGET_LABELS.contains(&l.as_str()) && !exposed.contains(*l)) {
            problems.push(format!("{what}: {metric} has no label {label}"));
        }
    }
    // A label no metric has is named once, below.
    for (label, scope) in names.scoped.iter().filter(|(label, _)| known_labels.contains(label.as_str())) {
        for metric in scope.iter().filter(|m| !PROMETHEUS_SERIES.contains(&m.as_str())) {
            let lacks = metrics.get(metric).is_some_and(|exposed| !exposed.contains(label));
            if lacks && !TARGET_LABELS.contains(&label.as_str()) {
                problems.push(format!("{what}: {metric} has no label {label}, which it is grouped or matched by"));
            }
        }
    }
    let named = names.grouping.iter().cloned().chain(templates.iter().flat_map(|t| template_labels(t)));
    for label in named.filter(|l| !known_labels.contains(l.as_str())) {
        problems.push(format!("{what}: no metric of its expression has the label {label}"));
    }
    problems
}

/// The YAML file at `path` as JSON.
fn yaml(path: &Path) -> Value {
    serde_norway::from_str(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every problem of the rules and the dashboard against a scrape's metrics.
pub fn operator_files_against(metrics: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut problems = Vec::new();
    let rules = yaml(&root().join("deploy/prometheus/rules.yml"));
    let mut count = 0;
    for group in rules["groups"].as_array().expect("rule groups") {
        for rule in group["rules"].as_array().expect("rules") {
            let name = rule["alert"].as_str().or(rule["record"].as_str()).expect("a named rule");
            let annotations: Vec<&str> =
                rule["annotations"].as_object().into_iter().flatten().filter_map(|(_, v)| v.as_str()).collect();
            let expr = rule["expr"].as_str().expect("an expression");
            problems.extend(missing(&format!("rules.yml {name}"), expr, &annotations, metrics));
            count += 1;
        }
    }
    assert!(count >= 10, "only {count} rules read");
    let dashboard: Value = serde_json::from_str(&read(&root().join("deploy/grafana/dashboard.json"))).unwrap();
    let mut count = 0;
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let what = format!("dashboard.json \"{}\"", panel["title"].as_str().unwrap_or("?"));
            let legend: Vec<&str> = target["legendFormat"].as_str().into_iter().collect();
            problems.extend(missing(&what, target["expr"].as_str().expect("an expression"), &legend, metrics));
            count += 1;
        }
    }
    assert!(count >= 20, "only {count} panel queries read");
    problems
}

/// A family of docs/operations.md's table of metrics.
pub struct Documented {
    pub name: String,
    pub kind: String,
    /// Each label with the values the parentheses after it list (none listed: any value).
    pub labels: BTreeMap<String, BTreeSet<String>>,
}

/// The families of docs/operations.md's table of metrics: in the labels' cell, the words in
/// backticks are label names, and those in the parentheses after a label are its values.
pub fn documented_metrics() -> Vec<Documented> {
    let text = read(&root().join("docs/operations.md"));
    let mut families = Vec::new();
    for row in text.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
        let [name, kind, cell, ..] = cells[..] else { continue };
        if !["counter", "gauge", "histogram"].contains(&kind) {
            continue;
        }
        let mut labels: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let (mut label, mut depth) = (String::new(), 0);
        for (n, part) in cell.split('`').enumerate() {
            if n % 2 == 0 {
                depth += part.matches('(').count() as i32 - part.matches(')').count() as i32;
            } else if depth == 0 {
                label = part.to_string();
                labels.entry(label.clone()).or_default();
            } else {
                labels.entry(label.clone()).or_default().insert(part.to_string());
            }
        }
        families.push(Documented { name: name.trim_matches('`').to_string(), kind: kind.to_string(), labels });
    }
    families
}

/// Every difference between the documented families and a scrape's: a family documented but
/// not exposed or the other way round, a documented label its samples lack, or a value of a
/// label the table lists the values of that it does not list.
pub fn documented_metrics_against(scrape: &str) -> Vec<String> {
    let documented = documented_metrics();
    assert!(documented.len() >= 20, "only {} families read from docs/operations.md", documented.len());
    let metrics = exposed(scrape);
    let mut problems = Vec::new();
    let mut samples = BTreeSet::new();
    for family in &documented {
        let name = &family.name;
        // A histogram's samples are its buckets, their sum and their count.
        let suffixes: &[&str] = if family.kind == "histogram" { &["_bucket", "_sum", "_count"] } else { &[""] };
        samples.extend(suffixes.iter().map(|suffix| format!("{name}{suffix}")));
        let Some(exposed) = metrics.get(&format!("{name}{}", suffixes[0])) else {
            problems.push(format!("docs/operations.md: {name} is not in the scrape"));
            continue;
        };
        for (label, values) in &family.labels {
            if !exposed.contains(label) {
                problems.push(format!("docs/operations.md: {name} has no label {label}"));
            }
            for value in label_values(scrape, name, label).difference(values).filter(|_| !values.is_empty()) {
                problems.push(format!("docs/operations.md: {name} has {label}=\"{value}\", which it does not list"));
            }
        }
    }
    for name in metrics.keys().filter(|n| !samples.contains(*n)) {
        problems.push(format!("docs/operations.md does not document {name}"));
    }
    problems
}

/// The values the samples of `metric` (a histogram's buckets included) give `label`.
fn label_values(scrape: &str, metric: &str, label: &str) -> BTreeSet<String> {
    let mut values = BTreeSet::new();
    for line in scrape.lines().filter(|l| l.starts_with(metric) && !l.starts_with('#')) {
        let (name, rest) = line.split_at(line.find(['{', ' ']).unwrap_or(line.len()));
        let own = name == metric || ["_bucket", "_sum", "_count"].iter().any(|s| name == format!("{metric}{s}"));
        if own && rest.starts_with('{') {
            let body = &rest[1..rest.rfind('}').expect("a closed label set")];
            values.extend(label_matchers(body).into_iter().filter(|(name, _)| name == label).map(|(_, value)| value));
        }
    }
    values
}

#[test]
fn the_promql_reader_finds_metrics_labels_and_groupings() {
    let names = promql_names(
        r#"time() - max by (kind, target) (integration_job_last_success_timestamp_seconds{kind=~"erp\\.(pull|setup)", target!="*"}) > 2 * 3600
           or histogram_quantile(0.95, sum by (le) (rate(x_bucket{instance=~"$instance"}[$__rate_interval]))) and on () up == 1e3"#,
    );
    assert_eq!(
        names.selectors,
        [
            ("integration_job_last_success_timestamp_seconds".to_string(), vec!["kind".to_string(), "target".into()]),
            ("x_bucket".into(), vec!["instance".into()]),
            ("up".into(), vec![]),
        ]
    );
    assert_eq!(names.grouping, ["kind", "target", "le"]);
    assert_eq!(template_labels("{{ $labels.kind }} of {{ $value | humanize }} {{operation}}"), ["kind", "operation"]);
    let scrape = "# TYPE a counter\na_total{operation=\"x\",status=\"200\"} 1\nb 2\n";
    let metrics = exposed(scrape);
    assert_eq!(metrics["a_total"], BTreeSet::from(["operation".to_string(), "status".into()]));
    assert!(missing("r", "sum by (operation) (a_total{status=\"5..\"}) / b", &[], &metrics).is_empty());
    assert_eq!(
        missing("r", "sum by (area) (a_total{code=\"5\"}) / c", &["{{ $labels.instance }}"], &metrics),
        [
            "r: a_total has no label code",
            "r: the service exposes no metric c",
            "r: no metric of its expression has the label area"
        ]
    );
}

/// A label an aggregation groups by, or a match is made on, must be on every metric it
/// applies to, not on one metric anywhere in the expression: a ratio whose divisor lacks the
/// label divides by an empty result, and a rule on it never fires.
#[test]
fn a_grouping_label_is_held_to_each_metric_it_groups() {
    let scrape = "a_total{operation=\"x\",status=\"500\"} 1\nb_total{status=\"500\"} 2\nc 1\nup 1\n";
    let metrics = exposed(scrape);
    assert_eq!(
        missing("r", "sum by (operation) (rate(a_total[5m])) / sum by (operation) (rate(b_total[5m]))", &[], &metrics),
        ["r: b_total has no label operation, which it is grouped or matched by"]
    );
    // The trailing form, a regex with parentheses inside the argument, and `on`.
    assert_eq!(
        missing("r", r#"sum(a_total{status=~"5(0|1)."}) by (operation) and on (operation) c"#, &[], &metrics),
        ["r: c has no label operation, which it is grouped or matched by"]
    );
    // Each aggregation on its own: `operation` is only asked of a_total, `status` of both.
    assert!(
        missing(
            "r",
            "sum by (operation) (a_total) > 0 and on () sum by (status) (a_total or b_total) > up",
            &[],
            &metrics
        )
        .is_empty()
    );
}

/// The reference deployment: two instances of the image on one Postgres, Prometheus with the
/// rules, Grafana with the dashboard; every file it mounts exists.
#[test]
fn the_compose_file_is_the_reference_deployment_and_its_files_exist() {
    let deploy = root().join("deploy");
    let compose = yaml(&deploy.join("compose.yaml"));
    let services = compose["services"].as_object().expect("services");
    let instances: Vec<(&String, &Value)> = services
        .iter()
        .filter(|(_, s)| s["image"].as_str().is_some_and(|i| i.starts_with("localhost/integration-service")))
        .collect();
    assert_eq!(instances.len(), 2, "two instances of the service's image");
    for (name, instance) in &instances {
        let environment = &instance["environment"];
        let database = environment["DATABASE_URL"].as_str().unwrap_or_default();
        assert!(database.starts_with("postgres://"), "{name}: on the shared Postgres, not {database:?}");
        assert_eq!(environment["BIND_ADDRESS"], "0.0.0.0:8080", "{name}");
        assert!(instance["depends_on"]["postgres"].is_object(), "{name} waits for Postgres");
    }
    for service in ["postgres", "prometheus", "grafana"] {
        assert!(services.contains_key(service), "a {service} service");
    }
    let mut mounted = 0;
    for (name, service) in services {
        for volume in service["volumes"].as_array().into_iter().flatten() {
            let source = volume.as_str().expect("short volume syntax").split(':').next().unwrap();
            if source.starts_with('.') {
                assert!(deploy.join(source).exists(), "{name} mounts {source}, which does not exist");
                mounted += 1;
            }
        }
    }
    assert!(mounted >= 4, "Prometheus's configuration and rules, Grafana's provisioning and dashboard");
    let prometheus = yaml(&deploy.join("prometheus/prometheus.yml"));
    let targets: Vec<&str> = prometheus["scrape_configs"][0]["static_configs"][0]["targets"]
        .as_array()
        .expect("targets")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for (name, _) in &instances {
        assert!(targets.contains(&format!("{name}:8080").as_str()), "Prometheus scrapes {name}: {targets:?}");
    }
    assert_eq!(prometheus["scrape_configs"][0]["job_name"], "integration-service", "the job the rules name");
}
