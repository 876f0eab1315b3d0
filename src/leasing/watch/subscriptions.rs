//! Subscriptions to the leasing state events: created with a signing secret shown once,
//! listed without it, rotated (the old secret signs alongside the new one for a day), and
//! their deliveries listed and sent again.

use std::time::Duration;

use url::Host;

use super::event::{EVENT_TYPES, STATE_CHANGED};
use super::signing::new_secret;
use super::target::{check_url, resolve};
use super::{WatchError, Watcher};
use crate::store::leasing::watch::{DeliveryRow, NewSubscription, Retried, SubscriptionRow, Viewer};
use crate::store::now_ms;
use crate::vocabulary::field_errors::FieldErrors;
use crate::vocabulary::key_page::StampedKey;

/// How long a rotated-out secret keeps signing beside the new one.
pub const ROTATION_OVERLAP: Duration = Duration::from_secs(24 * 3600);
/// The longest description.
const MAX_DESCRIPTION: usize = 500;
/// The longest callback URL, in characters.
pub const MAX_URL_CHARS: usize = 2048;

/// What a new subscription asks for.
pub struct SubscriptionRequest {
    pub url: String,
    pub description: Option<String>,
    pub events: Option<Vec<String>>,
    /// The events of every financing request, not only the owner's: operators only.
    pub all_requests: bool,
}

/// A subscription with its secret: the one answer that shows it.
pub struct WithSecret {
    pub subscription: SubscriptionRow,
    pub secret: String,
}

fn invalid(field: &str, message: impl Into<String>) -> WatchError {
    WatchError::Invalid(FieldErrors::from([(field.to_string(), vec![message.into()])]))
}

impl Watcher {
    /// Checks and stores a subscription of `owner`: its URL (https, a public address once
    /// resolved, unless `CALLBACK_ALLOW_PRIVATE`), its events (known types; all by default),
    /// and `all_requests` (operators only).
    pub async fn subscribe(&self, owner: Viewer, request: SubscriptionRequest) -> Result<WithSecret, WatchError> {
        if request.all_requests && !owner.operator {
            return Err(invalid("all_requests", "Only an operator may subscribe to every financing request."));
        }
        if request.url.chars().count() > MAX_URL_CHARS {
            return Err(invalid("url", format!("At most {MAX_URL_CHARS} characters.")));
        }
        let most = self.config.subscriptions_per_user;
        if self.store.subscription_count(owner.user_id).await? >= most {
            return Err(WatchError::TooManySubscriptions(most));
        }
        let events = match request.events {
            None => vec![STATE_CHANGED.to_string()],
            Some(events) if events.is_empty() => return Err(invalid("events", "Name at least one event type.")),
            Some(mut events) => {
                if let Some(unknown) = events.iter().find(|e| !EVENT_TYPES.contains(&e.as_str())) {
                    return Err(invalid(
                        "events",
                        format!("Unknown event type {unknown:?}; known: {}.", EVENT_TYPES.join(", ")),
                    ));
                }
                events.sort();
                events.dedup();
                events
            }
        };
        let description = request.description.filter(|d| !d.trim().is_empty());
        if description.as_ref().is_some_and(|d| d.chars().count() > MAX_DESCRIPTION) {
            return Err(invalid("description", format!("At most {MAX_DESCRIPTION} characters.")));
        }
        // The URL last: resolving its name is the slow part.
        let allow_private = self.config.allow_private;
        let url =
            check_url(request.url.trim(), allow_private).map_err(|refusal| invalid("url", refusal.to_string()))?;
        if let Some(Host::Domain(name)) = url.host() {
            resolve(name, allow_private).await.map_err(|refusal| invalid("url", refusal.to_string()))?;
        }
        let id = format!("sub_{}", uuid::Uuid::new_v4().simple());
        let secret = new_secret();
        let subscription = self
            .store
            .subscription_insert(
                &NewSubscription {
                    id: &id,
                    url: url.as_str(),
                    description: description.as_deref(),
                    events: &events,
                    secret: &secret,
                    created_at: now_ms(),
                    user_id: owner.user_id,
                    all_requests: request.all_requests,
                },
                most,
            )
            .await?
            .ok_or(WatchError::TooManySubscriptions(most))?;
        Ok(WithSecret { subscription, secret })
    }

    /// A page of the subscriptions `viewer` sees (their own; an operator's also those without
    /// owner), and how many there are.
    pub async fn subscriptions(
        &self,
        viewer: Viewer,
        page: u32,
        per_page: u32,
    ) -> Result<(Vec<SubscriptionRow>, i64), WatchError> {
        Ok(self.store.subscriptions(viewer, page, per_page).await?)
    }

    /// Up to `limit` subscriptions `viewer` sees, oldest first, after the one `after` (a
    /// [`StampedKey`]'s text; from the oldest without one, or for a text that spells no key).
    pub async fn subscriptions_after(
        &self,
        viewer: Viewer,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<SubscriptionRow>, WatchError> {
        let after = after.and_then(StampedKey::parse);
        let key = after.as_ref().map(|key| (key.at, key.id.as_str()));
        Ok(self.store.subscriptions_after(viewer, key, i64::from(limit)).await?)
    }

    /// A subscription `viewer` sees; anyone else's is not found, as if it did not exist.
    pub async fn subscription(&self, viewer: Viewer, id: &str) -> Result<SubscriptionRow, WatchError> {
        self.store.subscription(viewer, id).await?.ok_or_else(|| WatchError::SubscriptionNotFound(id.to_string()))
    }

    /// Deletes a subscription; its pending deliveries are not sent.
    pub async fn unsubscribe(&self, viewer: Viewer, id: &str) -> Result<(), WatchError> {
        if self.store.subscription_delete(viewer, id).await? {
            Ok(())
        } else {
            Err(WatchError::SubscriptionNotFound(id.into()))
        }
    }

    /// A new secret; the old one signs beside it for [`ROTATION_OVERLAP`].
    pub async fn rotate_secret(&self, viewer: Viewer, id: &str) -> Result<WithSecret, WatchError> {
        let secret = new_secret();
        let until = now_ms() + ROTATION_OVERLAP.as_millis() as i64;
        let subscription = self
            .store
            .subscription_rotate(viewer, id, &secret, until)
            .await?
            .ok_or_else(|| WatchError::SubscriptionNotFound(id.to_string()))?;
        Ok(WithSecret { subscription, secret })
    }

    /// Page `page` of a subscription's deliveries, `limit` a page, newest first.
    pub async fn deliveries(
        &self,
        viewer: Viewer,
        id: &str,
        limit: u32,
        page: u32,
    ) -> Result<Vec<DeliveryRow>, WatchError> {
        self.subscription(viewer, id).await?;
        let skip = i64::from(page.saturating_sub(1)) * i64::from(limit);
        Ok(self.store.deliveries_of(id, i64::from(limit), skip).await?)
    }

    /// Up to `limit` of a subscription's deliveries, newest first, older than delivery
    /// `before` (from the newest without one).
    pub async fn deliveries_before(
        &self,
        viewer: Viewer,
        id: &str,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<DeliveryRow>, WatchError> {
        self.subscription(viewer, id).await?;
        Ok(self.store.deliveries_before(id, before, i64::from(limit)).await?)
    }

    /// Sends a delivery again now, whatever became of it, with the same `webhook-id`; at most
    /// `LEASING_DELIVERY_RETRIES_PER_MINUTE_PER_USER` a minute per user.
    pub async fn retry_delivery(&self, viewer: Viewer, id: &str, delivery: i64) -> Result<DeliveryRow, WatchError> {
        self.subscription(viewer, id).await?;
        let most = self.config.retries_per_minute_per_user;
        match self.store.delivery_retry(id, delivery, viewer.user_id, most).await? {
            Retried::Queued(row) => {
                self.deliveries_queued.notify_one();
                Ok(row)
            }
            Retried::NotFound => Err(WatchError::DeliveryNotFound(delivery)),
            Retried::TooFast { retry_after_seconds } => Err(WatchError::TooManyRetries { most, retry_after_seconds }),
        }
    }
}
