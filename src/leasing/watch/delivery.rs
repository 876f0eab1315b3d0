//! The deliverer: claims due deliveries (with a lease, in order per subscription and financing
//! request), posts each event to its subscription with the Standard Webhooks headers, and
//! records the attempt. The subscription is read as each delivery leaves, not when it was
//! claimed: one rotated since is signed with its new secret, one deleted or disabled since is
//! sent nothing. A 2xx ends a delivery; anything else, a time-out (10 s) or a refused
//! target is retried with exponential back-off and jitter (no sooner than a 429's or 503's
//! `Retry-After`, up to an hour), with the same `webhook-id`, until
//! `LEASING_DELIVERY_RETRY_SECONDS` after it became the next of its request to send; then it
//! is failed. A subscription that keeps failing for five days is disabled, and one whose
//! receiver answers 410 Gone at once (Standard Webhooks: the endpoint is gone).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use rand::Rng;
use slog::Logger;

use super::Watcher;
use super::signing::signature_header;
use super::target::{CheckedResolver, check_url};
use crate::background::task::{Failed, Pace, Plan, Stop, Stopping, Task};
use crate::store::leasing::watch::{AttemptOutcome, DeliveryTarget, DeliveryWork, Disable};
use crate::store::now_ms;
use crate::vocabulary::retry_after::requested_wait;

/// How long a receiver has to answer.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// Deliveries sent at a time by one instance.
pub const CONCURRENCY: usize = 16;
/// Deliveries claimed at a time.
const BATCH: i64 = 64;
/// How long an idle deliverer waits before looking again (a change recorded here wakes it).
const IDLE: Duration = Duration::from_millis(500);
/// The longest wait between two attempts, whatever a receiver's `Retry-After` asks for.
const MAX_BACKOFF: Duration = Duration::from_secs(3600);
/// What a receiver answers when its endpoint is gone for good (Standard Webhooks).
const GONE: i64 = 410;
/// A subscription whose deliveries failed for this long, without a success, is disabled.
pub const DISABLE_AFTER: Duration = Duration::from_secs(5 * 24 * 3600);
/// Why a delivery of a disabled subscription (sent again on request) was not sent.
const DISABLED: &str = "the subscription is disabled";
/// Why the pending deliveries of a subscription disabled after failing too long ended.
const FAILED_TOO_LONG: &str = "the subscription was disabled after failing for five days";
/// Why the pending deliveries of a subscription whose receiver answered 410 ended.
const ENDPOINT_GONE: &str = "the subscription was disabled: its receiver answered 410 Gone";

/// A receiver's answer: its status, and the wait a 429 or 503 asked for.
struct Answer {
    status: i64,
    retry_after: Option<Duration>,
}

/// The client of the deliveries: no redirects, no proxy, the time-out, and a resolver that
/// connects only to addresses the SSRF check let through.
fn http_client(allow_private: bool) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .no_proxy()
        .user_agent(concat!("integration-service/", env!("CARGO_PKG_VERSION"), " (leasing events)"))
        .dns_resolver(Arc::new(CheckedResolver { allow_private }))
        .build()
        .expect("the delivery client's settings are valid")
}

/// The deliverer of one instance, a background task.
pub struct Deliverer {
    watcher: Watcher,
    http: reqwest::Client,
    log: Logger,
}

impl Watcher {
    /// This instance's deliverer.
    pub fn deliverer(&self, log: Logger) -> Deliverer {
        Deliverer { watcher: self.clone(), http: http_client(self.config.allow_private), log }
    }
}

/// Deliveries claimed together, under the name the store reads them back by.
pub struct ClaimedDeliveries {
    owner: String,
    due: Vec<DeliveryWork>,
}

impl Task for Deliverer {
    type Claim = ClaimedDeliveries;

    /// Claims again as soon as a batch was sent, after [`IDLE`] when none was due (a change
    /// recorded here wakes it); sends in flight at a stop are dropped, and their claims pass
    /// on when their lease runs out (a delivery may then be sent again, with the same id).
    fn plan(&self) -> Plan {
        Plan {
            name: "leasing_delivery",
            pace: Pace::WhenDue { idle: IDLE, after_failure: IDLE, at_once: 1 },
            stop: Stop::Drop,
            wake: Some(self.watcher.deliveries_queued.clone()),
        }
    }

    /// Up to [`BATCH`] due deliveries, each the oldest pending one of its subscription and
    /// request.
    async fn claim(&self) -> Result<Option<ClaimedDeliveries>, Failed> {
        let store = &self.watcher.store;
        // A name per claim: the store reads the claimed rows back by it.
        let owner = format!("deliver-{}", uuid::Uuid::new_v4().simple());
        match store.delivery_claim_due(&owner, store.lease_deadline(), BATCH).await {
            Ok(due) => Ok((!due.is_empty()).then_some(ClaimedDeliveries { owner, due })),
            Err(error) => {
                slog::warn!(self.log, "claiming deliveries failed"; "error" => %error);
                Err(Failed)
            }
        }
    }

    async fn work(&self, claimed: ClaimedDeliveries, _: &Stopping) -> Result<(), Failed> {
        let ClaimedDeliveries { owner, due } = claimed;
        let sends =
            futures::stream::iter(due).map(|work| self.watcher.deliver_one(&self.http, work, &owner, &self.log));
        let outcomes: Vec<bool> = sends.buffer_unordered(CONCURRENCY).collect().await;
        if outcomes.contains(&false) { Err(Failed) } else { Ok(()) }
    }

    /// A first attempt was due when its event was recorded; a retry's time is not read back.
    fn due_at(&self, claimed: &ClaimedDeliveries) -> Option<i64> {
        claimed.due.iter().filter(|work| work.attempts == 0).map(|work| work.created_at).min()
    }
}

impl Watcher {
    /// Sends one claimed delivery and records the attempt; `false` when that was not recorded.
    async fn deliver_one(&self, http: &reqwest::Client, work: DeliveryWork, owner: &str, log: &Logger) -> bool {
        let started = Instant::now();
        // Read as the delivery leaves, not when it was claimed: a subscription rotated,
        // disabled or deleted since is sent to as it is now.
        let target = match self.store.delivery_target(&work.subscription_id).await {
            Ok(Some(target)) => target,
            // Deleted, and its deliveries with it: nothing to send or record.
            Ok(None) => return true,
            Err(error) => {
                slog::warn!(log, "reading a delivery's subscription failed; it is sent when its claim runs out";
                    "delivery" => work.id, "error" => %error);
                return false;
            }
        };
        let answer = if target.disabled { Err(DISABLED.to_string()) } else { self.send(http, &work, &target).await };
        let now = now_ms();
        let gone = matches!(answer, Ok(Answer { status: GONE, .. }));
        let error_text;
        let outcome = match answer {
            Ok(Answer { status, .. }) if (200..300).contains(&status) => {
                AttemptOutcome::Delivered { status_code: status }
            }
            failed => {
                let (status_code, error, retry_after) = match failed {
                    Ok(Answer { status, retry_after }) => {
                        (Some(status), format!("the receiver answered {status}"), retry_after)
                    }
                    Err(error) => (None, error, None),
                };
                error_text = error;
                let retried = !target.disabled && !gone;
                AttemptOutcome::Failed {
                    status_code,
                    error: &error_text,
                    next_attempt_at: retried.then(|| self.next_attempt_at(&work, now, retry_after)).flatten(),
                }
            }
        };
        let delivered = matches!(outcome, AttemptOutcome::Delivered { .. });
        let latency = Duration::from_millis((now - work.event_created_at).max(0) as u64);
        self.metrics.delivery_attempted(delivered, started.elapsed(), delivered.then_some(latency));
        // A 410 disables as failing too long does: whenever its failing began, it began before now.
        let disable = if gone {
            Disable { failing_before: i64::MAX, why: ENDPOINT_GONE }
        } else {
            Disable { failing_before: now - DISABLE_AFTER.as_millis() as i64, why: FAILED_TOO_LONG }
        };
        let recorded = match self.store.delivery_record(&work, owner, &outcome, &disable).await {
            Ok(true) => {
                slog::warn!(log, "a subscription was disabled";
                    "subscription" => &work.subscription_id, "why" => disable.why);
                true
            }
            Ok(false) => true,
            Err(error) => {
                slog::warn!(log, "recording a delivery attempt failed; it is sent again";
                    "delivery" => work.id, "error" => %error);
                false
            }
        };
        if let AttemptOutcome::Failed { error, next_attempt_at, .. } = &outcome {
            slog::info!(log, "a delivery attempt failed"; "delivery" => work.id, "subscription" => &work.subscription_id,
                "attempt" => work.attempts + 1, "error" => *error, "retried" => next_attempt_at.is_some());
        }
        recorded
    }

    /// Posts the event; the answer (its body unread), or why there was none.
    async fn send(
        &self,
        http: &reqwest::Client,
        work: &DeliveryWork,
        target: &DeliveryTarget,
    ) -> Result<Answer, String> {
        let url = check_url(&target.url, self.config.allow_private).map_err(|refusal| format!("refused: {refusal}"))?;
        let timestamp = chrono::Utc::now().timestamp();
        let mut secrets = vec![target.secret.as_str()];
        secrets.extend(target.previous_secret.as_deref());
        let signature = signature_header(&secrets, &work.event_id, timestamp, &work.payload);
        let response = http
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("webhook-id", &work.event_id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .body(work.payload.clone())
            .send()
            .await
            .map_err(|error| describe(&error))?;
        let status = response.status().as_u16();
        let retry_after = matches!(status, 429 | 503).then(|| requested_wait(response.headers())).flatten();
        Ok(Answer { status: i64::from(status), retry_after })
    }

    /// When a failed delivery is tried again: the first retry's delay doubled per attempt (up
    /// to an hour), 0 to 20 % more as jitter, no sooner than the receiver asked
    /// (`retry_after`, up to an hour), never past the retry horizon (counted from when the
    /// delivery became the next of its request to send); `None` once the horizon has passed.
    fn next_attempt_at(&self, work: &DeliveryWork, now: i64, retry_after: Option<Duration>) -> Option<i64> {
        let horizon_end = work.in_line_since + self.config.retry_horizon.as_millis() as i64;
        if now >= horizon_end {
            return None;
        }
        let backoff = self.config.first_retry.saturating_mul(1 << work.attempts.clamp(0, 20)).min(MAX_BACKOFF);
        let backoff = backoff.as_millis() as i64;
        let jitter = rand::rng().random_range(0..=backoff / 5);
        let asked = retry_after.unwrap_or_default().min(MAX_BACKOFF).as_millis() as i64;
        Some((now + (backoff + jitter).max(asked)).min(horizon_end))
    }
}

/// A failed send in a few words (without the URL's query, which may hold a receiver's token).
fn describe(error: &reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "could not connect"
    } else {
        "failed"
    };
    let mut cause = String::new();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        cause = inner.to_string();
        source = inner.source();
    }
    if cause.is_empty() { kind.to_string() } else { format!("{kind}: {cause}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The connection goes only to a checked address: a name that resolves to loopback gets
    /// no connection, whatever the URL check said before.
    #[tokio::test]
    async fn the_client_connects_only_to_checked_addresses() {
        let refused = http_client(false).get("http://localhost:9/").send().await.unwrap_err();
        assert!(describe(&refused).contains("resolves to no public address"), "{}", describe(&refused));
        let allowed = http_client(true).get("http://localhost:9/").send().await.unwrap_err();
        assert!(!describe(&allowed).contains("public address"), "{}", describe(&allowed));
    }
}
