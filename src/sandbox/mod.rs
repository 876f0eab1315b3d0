//! In-process simulators of the upstream systems, for `serve --sandbox`, `sandbox` and tests.
//!
//! Each simulator is a small HTTP/1.1 server on loopback with the same fault switch:
//! `POST /__sandbox/faults {path_prefix, status, delay_ms, times}` makes the next `times`
//! matching calls wait `delay_ms` and then fail with `status` (0 drops the connection; a
//! 2xx status only delays, unless `body` is given); with `body`, that raw text is the answer
//! (e.g. malformed JSON); `after` lets that many matching calls through first;
//! `retry_after_seconds` adds `Retry-After: <n>` to a failure (e.g. a 429); `content_type` sets the
//! type of a `body` answer; `answer_delay_ms` carries a call out and answers late. Without `body`, a
//! failure answers in the simulated system's error format where it sets one (the ERP's
//! problem JSON), else `{Message, StatusCode}`. `DELETE /__sandbox/faults` clears them.
//! `GET /__sandbox/calls` answers `{calls: n}`: the requests received outside `/__sandbox/`,
//! failed and dropped ones included (tests compare it with the service's metrics).

pub mod comparison;
pub mod erp;
pub mod faults;
pub mod fieldreport;
pub mod http;
pub mod leasing;
pub mod odata_filter;
pub mod pdf;

use std::net::SocketAddr;

use slog::Logger;

/// The addresses of the running simulators.
#[derive(Debug, Clone)]
pub struct Sandboxes {
    pub leasing: SocketAddr,
    pub fieldreport: SocketAddr,
    pub erp: SocketAddr,
}

impl Sandboxes {
    /// The host root of the leasing simulator, as `LEASING_BASE_URL` expects it.
    pub fn leasing_base_url(&self) -> String {
        format!("http://{}", self.leasing)
    }

    /// The root of the field-report simulator, as `FIELDREPORT_BASE_URL` expects it.
    pub fn fieldreport_base_url(&self) -> String {
        format!("http://{}", self.fieldreport)
    }

    /// The API root of the ERP simulator, as `ERP_BASE_URL` expects it.
    pub fn erp_base_url(&self) -> String {
        format!("http://{}{}", self.erp, erp::API_ROOT)
    }

    /// The settings that point the service at the simulators.
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        vec![
            ("LEASING_BASE_URL", self.leasing_base_url()),
            ("FIELDREPORT_BASE_URL", self.fieldreport_base_url()),
            ("FIELDREPORT_USERNAME", fieldreport::USERNAME.to_string()),
            ("FIELDREPORT_PASSWORD", fieldreport::PASSWORD.to_string()),
            ("ERP_BASE_URL", self.erp_base_url()),
            ("ERP_API_KEY", erp::API_KEY.to_string()),
        ]
    }
}

/// Starts every simulator on loopback; `leasing_bind` fixes the leasing simulator's address.
pub async fn start(leasing_bind: Option<SocketAddr>, log: &Logger) -> std::io::Result<Sandboxes> {
    let bind = leasing_bind.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
    let leasing = leasing::start(bind, log.new(slog::o!("sandbox" => "leasing"))).await?;
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let fieldreport = fieldreport::start(loopback, log.new(slog::o!("sandbox" => "fieldreport"))).await?;
    let erp = erp::start(loopback, log.new(slog::o!("sandbox" => "erp"))).await?;
    Ok(Sandboxes { leasing, fieldreport, erp })
}
