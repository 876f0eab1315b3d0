//! The missing-info mail: rendered from the ERP's template (`MISSING_INFO_TEMPLATE`) with the
//! request, the lessee and the wait's technician appointment, and sent to the lessee's `Email`
//! plus the template's own recipients, with a copy in storage. A request's mail leaves at most
//! once per `MISSING_INFO_MAIL_INTERVAL_SECONDS` (an hour by default), on every instance,
//! however often callers wait on it: the lessee's address is the caller's to write, and a wait
//! that finds `MissingInfo` answers at once, so repeated waits would otherwise send mail as
//! fast as they are sent, to any address and to the template's recipients.

use std::time::Duration;

use serde_json::{Value, json};

use crate::mail::Mailer;
use crate::store::leasing::mails::MailTurn;
use crate::store::{Store, now_ms};

/// Sends the missing-info mails, each request's at most once per interval.
pub struct MissingInfoMail {
    mailer: Mailer,
    template: String,
    store: Store,
    interval: Duration,
}

impl MissingInfoMail {
    pub fn new(mailer: Mailer, template: String, store: Store, interval: Duration) -> Self {
        MissingInfoMail { mailer, template, store, interval }
    }

    /// Sends the mail of the request `id` (as read: `request`, with the wait's technician
    /// `appointment` date and time) unless it left within the interval; says what became of
    /// it, for the `missing_info` answer. A failure is reported and gives the turn back, so
    /// that the next wait tries again.
    pub async fn send(&self, id: &str, request: &Value, appointment: [Option<&str>; 2]) -> String {
        let taken_at = now_ms();
        let interval_ms = i64::try_from(self.interval.as_millis()).unwrap_or(i64::MAX);
        match self.store.missing_info_mail_turn(id, taken_at, interval_ms).await {
            Ok(MailTurn::Taken) => {}
            Ok(MailTurn::SentAt(at)) => {
                let at = chrono::DateTime::from_timestamp_millis(at)
                    .map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
                    .unwrap_or_default();
                let every = self.interval.as_secs();
                return format!(
                    "the missing-info mail was already sent at {at} (a request's mail leaves at most once every {every} s)"
                );
            }
            Err(error) => {
                crate::telemetry::report_internal_error(&format!("missing-info mail for {id}: {error}"));
                return format!("the missing-info mail could not be sent: {error}");
            }
        }
        let lessee = request.get("Lessee").cloned().unwrap_or_else(|| json!({}));
        let context = json!({
            "financing_id": id,
            "request": request,
            "lessee": lessee,
            "technician_appointment_date": appointment[0],
            "technician_appointment_time": appointment[1],
        });
        let to: Vec<String> = lessee.get("Email").and_then(Value::as_str).map(str::to_string).into_iter().collect();
        match self.mailer.send_template(&self.template, &context, &to).await {
            Ok(location) => format!("the missing-info mail was sent ({location})"),
            Err(error) => {
                crate::telemetry::report_internal_error(&format!("missing-info mail for {id}: {error}"));
                if let Err(unsent) = self.store.missing_info_mail_unsent(id, taken_at).await {
                    crate::telemetry::report_internal_error(&format!("missing-info mail for {id}: {unsent}"));
                }
                format!("the missing-info mail could not be sent: {error}")
            }
        }
    }
}
