//! The jobs area's settings: `SCHEDULE`, jobs queued at intervals, e.g. `fieldreport.sync=5m;
//! fieldreport.reconcile=24h; erp.pull:customer=1h`. Each entry is
//! `<kind>[:<target>]=<interval>`, the interval a whole number of `s`, `m`, `h` or `d`; an entry
//! without a target queues one job for every target of the kind (as `POST /api/v1/jobs` without
//! a target does). An invalid entry stops the start, named in the message.

use std::time::Duration;

use super::error::JobError;
use super::kind::JobKind;
use crate::vocabulary::settings::{ConfigError, Settings, invalid};

/// One entry of `SCHEDULE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleEntry {
    pub kind: JobKind,
    /// As stored: `''` for every target of the kind.
    pub target: String,
    pub every: Duration,
}

/// The jobs area's settings.
#[derive(Debug, Clone)]
pub struct JobsConfig {
    /// `SCHEDULE` (default: nothing is scheduled).
    pub schedule: Vec<ScheduleEntry>,
    /// Jobs one user may have queued or running at once (`JOBS_ACTIVE_PER_USER`, default 10).
    pub active_per_user: u64,
    /// Jobs one user may queue within a minute (`JOBS_PER_MINUTE_PER_USER`, default 60).
    pub per_minute_per_user: u64,
}

impl Default for JobsConfig {
    fn default() -> Self {
        JobsConfig { schedule: Vec::new(), active_per_user: 10, per_minute_per_user: 60 }
    }
}

impl JobsConfig {
    pub fn read(raw: &Settings) -> Result<JobsConfig, ConfigError> {
        let schedule = match raw.get("SCHEDULE") {
            Some(text) => parse(text).map_err(|reason| invalid("SCHEDULE", reason))?,
            None => Vec::new(),
        };
        let defaults = JobsConfig::default();
        let active_per_user = raw.positive_u64("JOBS_ACTIVE_PER_USER")?.unwrap_or(defaults.active_per_user);
        let per_minute_per_user = raw.positive_u64("JOBS_PER_MINUTE_PER_USER")?.unwrap_or(defaults.per_minute_per_user);
        Ok(JobsConfig { schedule, active_per_user, per_minute_per_user })
    }
}

/// The entries of a `SCHEDULE` value; the error names the entry that is wrong.
pub fn parse(text: &str) -> Result<Vec<ScheduleEntry>, String> {
    let mut entries: Vec<ScheduleEntry> = Vec::new();
    for raw in text.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        let wrong = |why: String| format!("entry {raw:?}: {why}");
        let (job, interval) = raw
            .split_once('=')
            .ok_or_else(|| wrong("expected <kind>[:<target>]=<interval>, e.g. erp.pull=1h".into()))?;
        let (kind, target) = match job.trim().split_once(':') {
            Some((kind, target)) => (kind.trim(), Some(target.trim())),
            None => (job.trim(), None),
        };
        let message = |error: JobError| match error {
            JobError::Invalid(errors) => errors.into_values().flatten().collect::<Vec<_>>().join("; "),
            other => other.to_string(),
        };
        let kind = JobKind::parse(kind).map_err(|e| wrong(message(e)))?;
        if target == Some("") {
            return Err(wrong("the target after ':' is empty".into()));
        }
        let target = kind.target(target).map_err(|e| wrong(message(e)))?;
        let every = interval_of(interval.trim()).map_err(wrong)?;
        if entries.iter().any(|e| e.kind == kind && e.target == target) {
            return Err(wrong("this kind and target is scheduled twice".into()));
        }
        entries.push(ScheduleEntry { kind, target, every });
    }
    Ok(entries)
}

fn interval_of(text: &str) -> Result<Duration, String> {
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => return Err(format!("the interval {text:?} is not a number of s, m, h or d, e.g. 5m")),
    };
    match number.parse::<u64>() {
        Ok(n) if n > 0 => {
            n.checked_mul(seconds).map(Duration::from_secs).ok_or_else(|| "the interval is too long".into())
        }
        _ => Err(format!("the interval {text:?} is not a positive whole number of s, m, h or d, e.g. 5m")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_parse_and_a_wrong_one_is_named() {
        let entries = parse("fieldreport.sync=5m; fieldreport.reconcile=24h; erp.pull:customer=1h;").unwrap();
        assert_eq!(entries.len(), 3);
        assert_eq!(
            entries[0],
            ScheduleEntry { kind: JobKind::FieldReportSync, target: String::new(), every: Duration::from_secs(300) }
        );
        assert_eq!((entries[2].target.as_str(), entries[2].every), ("customer", Duration::from_secs(3_600)));
        for (text, named) in [
            ("fieldreport.sync=5m; erp.push=1h", "\"erp.push=1h\""),
            ("fieldreport.sync:nope=5m", "\"fieldreport.sync:nope=5m\""),
            ("erp.pull=0m", "\"erp.pull=0m\""),
            ("erp.pull=5 minutes", "\"erp.pull=5 minutes\""),
            ("erp.pull", "\"erp.pull\""),
            ("erp.pull=1h; erp.pull=2h", "\"erp.pull=2h\""),
        ] {
            let error = parse(text).unwrap_err();
            assert!(error.contains(named), "{text}: {error}");
        }
    }
}
