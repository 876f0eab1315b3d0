//! The fault switch shared by every simulator.

use std::sync::Mutex;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

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
    /// With a failing status, the answer carries `Retry-After: <n>` (e.g. a 429 that asks the
    /// client to wait).
    #[serde(default)]
    pub retry_after_seconds: Option<u64>,
    /// The content type of an answer with `body` (default `application/json`), e.g.
    /// `text/html` for a proxy's error page.
    #[serde(default)]
    pub content_type: Option<String>,
    /// With a 2xx status and no `body`: the call is carried out, then the answer waits this
    /// long (the upstream did the work; its answer is late or never arrives).
    #[serde(default)]
    pub answer_delay_ms: u64,
    /// With a failing status and no `body`: the answer is a text that echoes the call as
    /// received (its request line and every header), as some upstreams' error pages do.
    #[serde(default)]
    pub echo: bool,
}

fn one() -> u32 {
    1
}

/// What to do with one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    Delay(Duration),
    Fail {
        delay: Duration,
        status: u16,
        body: Option<String>,
        retry_after: Option<u64>,
        content_type: Option<String>,
        echo: bool,
    },
    /// Carry the call out, then wait this long before answering.
    Late(Duration),
    Drop {
        delay: Duration,
    },
}

#[derive(Default)]
pub struct Faults {
    rules: Mutex<Vec<FaultRule>>,
    /// The JSON body of a failure without a `body` of its own, by status.
    default_body: Option<fn(u16) -> Value>,
}

impl Faults {
    /// A fault switch whose failures without a `body` answer with `default_body(status)`,
    /// in the simulated system's own error format.
    pub fn with_default_body(default_body: fn(u16) -> Value) -> Faults {
        Faults { rules: Mutex::default(), default_body: Some(default_body) }
    }

    /// The JSON body of a failure with `status` that carries no `body` of its own.
    pub fn default_body(&self, status: u16) -> Value {
        match self.default_body {
            Some(body) => body(status),
            None => json!({"Message": "injected fault", "StatusCode": status}),
        }
    }

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
            (200..=299, None) if rule.answer_delay_ms > 0 => Fault::Late(Duration::from_millis(rule.answer_delay_ms)),
            (200..=299, None) => Fault::Delay(delay),
            (status, body) => Fault::Fail {
                delay,
                status,
                body: body.clone(),
                retry_after: rule.retry_after_seconds,
                content_type: rule.content_type.clone(),
                echo: rule.echo,
            },
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
            retry_after_seconds: None,
            content_type: None,
            answer_delay_ms: 0,
            echo: false,
        });
        assert_eq!(faults.take("/basic/v1/calculate"), None);
        assert_eq!(
            faults.take("/basic/v1/requests/x"),
            Some(Fault::Fail {
                delay: Duration::ZERO,
                status: 503,
                body: None,
                retry_after: None,
                content_type: None,
                echo: false
            })
        );
        assert!(faults.take("/basic/v1/requests").is_some());
        assert_eq!(faults.take("/basic/v1/requests"), None);
        faults.add(FaultRule {
            path_prefix: "/".into(),
            status: 0,
            delay_ms: 5,
            times: 1,
            body: None,
            after: 1,
            retry_after_seconds: None,
            content_type: None,
            answer_delay_ms: 0,
            echo: false,
        });
        assert_eq!(faults.take("/x"), None, "the first matching call passes");
        assert_eq!(faults.take("/x"), Some(Fault::Drop { delay: Duration::from_millis(5) }));
    }

    #[test]
    fn a_failure_can_ask_the_client_to_wait() {
        let faults = Faults::default();
        let rule: FaultRule =
            serde_json::from_value(json!({"path_prefix": "/", "status": 429, "retry_after_seconds": 7})).unwrap();
        faults.add(rule);
        assert_eq!(
            faults.take("/x"),
            Some(Fault::Fail {
                delay: Duration::ZERO,
                status: 429,
                body: None,
                retry_after: Some(7),
                content_type: None,
                echo: false
            })
        );
        assert_eq!(faults.default_body(429)["StatusCode"], 429);
        let custom = Faults::with_default_body(|status| json!({"status": status}));
        assert_eq!(custom.default_body(503), json!({"status": 503}));
    }
}
