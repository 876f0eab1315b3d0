//! The fault switch shared by every simulator.

use std::sync::Mutex;
use std::time::Duration;

use serde::Deserialize;

/// One injected fault, as posted to `/__sandbox/faults`.
#[derive(Debug, Clone, Deserialize)]
pub struct FaultRule {
    /// Calls whose path starts with this are affected.
    pub path_prefix: String,
    /// Status to answer with; 0 drops the connection; 2xx only delays.
    #[serde(default)]
    pub status: u16,
    /// Wait before answering.
    #[serde(default)]
    pub delay_ms: u64,
    /// How many calls are affected (default 1).
    #[serde(default = "one")]
    pub times: u32,
    /// A raw body to answer with instead of the usual one (e.g. malformed JSON).
    #[serde(default)]
    pub body: Option<String>,
    /// Matching calls to let through untouched before the fault starts (e.g. to fail the
    /// fourth page of a sync).
    #[serde(default)]
    pub after: u32,
}

fn one() -> u32 {
    1
}

/// What to do with one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    Delay(Duration),
    Fail { delay: Duration, status: u16, body: Option<String> },
    Drop { delay: Duration },
}

#[derive(Default)]
pub struct Faults {
    rules: Mutex<Vec<FaultRule>>,
}

impl Faults {
    pub fn add(&self, rule: FaultRule) {
        self.rules.lock().expect("faults lock").push(rule);
    }

    pub fn clear(&self) {
        self.rules.lock().expect("faults lock").clear();
    }

    /// Takes one use of the first rule matching `path`.
    pub fn take(&self, path: &str) -> Option<Fault> {
        let mut rules = self.rules.lock().expect("faults lock");
        let index = rules.iter().position(|r| r.times > 0 && path.starts_with(&r.path_prefix))?;
        let rule = &mut rules[index];
        if rule.after > 0 {
            rule.after -= 1;
            return None;
        }
        rule.times -= 1;
        let delay = Duration::from_millis(rule.delay_ms);
        let fault = match (rule.status, &rule.body) {
            (0, _) => Fault::Drop { delay },
            (200..=299, None) => Fault::Delay(delay),
            (status, body) => Fault::Fail { delay, status, body: body.clone() },
        };
        if rule.times == 0 {
            rules.remove(index);
        }
        Some(fault)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_apply_the_given_number_of_times() {
        let faults = Faults::default();
        faults.add(FaultRule {
            path_prefix: "/basic/v1/requests".into(),
            status: 503,
            delay_ms: 0,
            times: 2,
            body: None,
            after: 0,
        });
        assert_eq!(faults.take("/basic/v1/calculate"), None);
        assert_eq!(
            faults.take("/basic/v1/requests/x"),
            Some(Fault::Fail { delay: Duration::ZERO, status: 503, body: None })
        );
        assert!(faults.take("/basic/v1/requests").is_some());
        assert_eq!(faults.take("/basic/v1/requests"), None);
        faults.add(FaultRule { path_prefix: "/".into(), status: 0, delay_ms: 5, times: 1, body: None, after: 1 });
        assert_eq!(faults.take("/x"), None, "the first matching call passes");
        assert_eq!(faults.take("/x"), Some(Fault::Drop { delay: Duration::from_millis(5) }));
    }
}
