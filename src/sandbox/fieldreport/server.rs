//! The simulator's server: authentication, addressing and the routes.

use std::net::SocketAddr;
use std::sync::Arc;

use base64::Engine;
use http::{Method, StatusCode, header};
use serde_json::Value;
use slog::Logger;

use super::odata::odata_error;
use super::state::FieldReport;
use crate::sandbox::faults::Faults;
use crate::sandbox::http::{SimRequest, SimResponse, json, serve};

pub const USERNAME: &str = "sandbox";
pub const PASSWORD: &str = "sandbox-password";
const METADATA: &str = include_str!("../../../spec/upstream/fieldreport/metadata.xml");

pub async fn start(bind: SocketAddr, log: Logger) -> std::io::Result<SocketAddr> {
    let system = Arc::new(FieldReport::default());
    serve(bind, Arc::new(Faults::default()), log, move |req| {
        let system = system.clone();
        async move { system.handle(req) }
    })
    .await
}

fn authorized(req: &SimRequest) -> bool {
    let expected =
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{USERNAME}:{PASSWORD}")));
    req.headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) == Some(expected.as_str())
}

/// Splits `Companies(12L)` into the set and the key.
fn addressed(segment: &str) -> (String, Option<i64>) {
    match segment.split_once('(') {
        Some((set, rest)) => {
            let key = rest.trim_end_matches(')').trim_end_matches('L').trim_matches('\'');
            (set.to_string(), key.parse().ok())
        }
        None => (segment.to_string(), None),
    }
}

impl FieldReport {
    fn handle(&self, req: SimRequest) -> SimResponse {
        let segments = req.segments();
        match (&req.method, segments.as_slice()) {
            (&Method::GET, ["__sandbox", "received"]) => {
                json(StatusCode::OK, &Value::Array(self.received.lock().expect("lock").clone()))
            }
            (&Method::POST, ["__sandbox", "seed"]) => self.seed(&req),
            (&Method::POST, ["__sandbox", "behaviour"]) => self.behaviour(&req),
            (&Method::POST, ["__sandbox", "during-list"]) => self.script(&req),
            (&Method::POST, ["__sandbox", "late"]) => self.late(&req),
            _ if !authorized(&req) => {
                odata_error(StatusCode::UNAUTHORIZED, "Unauthorized", "Basic authentication required.")
            }
            (&Method::GET, ["odata", "$metadata"]) => http::Response::builder()
                .status(StatusCode::OK)
                .header(header::CONTENT_TYPE, "application/xml")
                .body(http_body_util::Full::new(bytes::Bytes::from_static(METADATA.as_bytes())))
                .expect("a valid response"),
            (&Method::GET, ["odata", set, "$count"]) if METADATA.contains(&format!("EntitySet Name=\"{set}\"")) => {
                self.count(set, &req)
            }
            (method, ["odata", target]) => {
                let (set, key) = addressed(target);
                if !METADATA.contains(&format!("EntitySet Name=\"{set}\"")) {
                    return odata_error(StatusCode::NOT_FOUND, "NotFound", &format!("No entity set {set}."));
                }
                match (method, key) {
                    (&Method::GET, None) => self.list(&set, &req),
                    (&Method::GET, Some(id)) => self.get(&set, id),
                    (&Method::POST, None) => self.create(&set, &req),
                    (&Method::PUT, Some(id)) => self.update(&set, id, &req),
                    (&Method::DELETE, Some(id)) => self.delete(&set, id, &req),
                    _ => odata_error(StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed", "Not supported."),
                }
            }
            _ => odata_error(StatusCode::NOT_FOUND, "NotFound", "No such resource."),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::addressed;

    #[test]
    fn keys_are_read_from_the_segment() {
        assert_eq!(addressed("Companies(12L)"), ("Companies".to_string(), Some(12)));
        assert_eq!(addressed("Companies"), ("Companies".to_string(), None));
        assert_eq!(addressed("Companies('7')"), ("Companies".to_string(), Some(7)));
    }
}
