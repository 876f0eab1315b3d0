//! The leasing provider, through the client generated from `spec/upstream/leasing/openapi.json`.
//!
//! Bodies travel as JSON documents so that fields the service does not know pass through in
//! both directions (the generated models keep unknown fields). The provider authenticates by
//! client certificate (mutual TLS) and speaks only HTTP/1.1, though it offers h2 in ALPN.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use generated::leasing::{ByteStream, Client, Error, ResponseValue, types};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::Semaphore;

use super::config::LeasingConfig;
use super::{CallOutcome, System, UpstreamError, retry_read, summarise};
use crate::metrics::{CallRecorder, Metrics};

const SYSTEM: System = System::Leasing;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Calls to the provider at once from this instance; more wait their turn. Thousands of
/// waiting flows poll the provider, which speaks HTTP/1.1 only: without a cap every poll in
/// flight opens a connection of its own and the idle pool keeps them all (`cargo xtask bench`,
/// 10,000 waiting flows: the service's memory was mostly those connections).
const MAX_CALLS_IN_FLIGHT: usize = 64;

/// A configured client of the leasing provider.
#[derive(Clone)]
pub struct LeasingClient {
    api: Client,
    metrics: CallRecorder,
    in_flight: Arc<Semaphore>,
}

/// A body that does not fit the provider's schema (wrong type of a known field).
#[derive(Debug, thiserror::Error)]
#[error("{field}: {message}")]
pub struct BodyError {
    pub field: String,
    pub message: String,
}

fn typed<T: DeserializeOwned>(body: &Value) -> Result<T, BodyError> {
    crate::typed::from_json(body).map_err(|e| BodyError { field: e.field, message: e.message })
}

fn read_pem(setting: &'static str, path: &std::path::Path) -> Result<Vec<u8>, UpstreamError> {
    std::fs::read(path).map_err(|e| UpstreamError::Client {
        system: SYSTEM,
        detail: format!("{setting}: cannot read {}: {e}", path.display()),
    })
}

impl LeasingClient {
    /// Builds the client, or explains which setting is missing or wrong.
    pub fn from_config(config: &LeasingConfig) -> Result<LeasingClient, UpstreamError> {
        let base_url = config
            .base_url
            .as_ref()
            .ok_or(UpstreamError::NotConfigured { system: SYSTEM, setting: "LEASING_BASE_URL" })?;
        let mut builder = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(CONNECT_TIMEOUT)
            .pool_max_idle_per_host(MAX_CALLS_IN_FLIGHT)
            .redirect(super::no_redirects());
        if config.http1_only {
            builder = builder.http1_only();
        }
        if let (Some(cert), Some(key)) = (&config.client_cert, &config.client_key) {
            let mut pem = read_pem("LEASING_CLIENT_CERT", cert)?;
            pem.push(b'\n');
            pem.extend(read_pem("LEASING_CLIENT_KEY", key)?);
            let identity = reqwest::Identity::from_pem(&pem).map_err(|e| UpstreamError::Client {
                system: SYSTEM,
                detail: format!("LEASING_CLIENT_CERT/LEASING_CLIENT_KEY: not a PEM certificate and key: {e}"),
            })?;
            builder = builder.identity(identity);
        }
        if let Some(ca) = &config.ca_cert {
            let pem = read_pem("LEASING_CA_CERT", ca)?;
            let certificates = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| UpstreamError::Client {
                system: SYSTEM,
                detail: format!("LEASING_CA_CERT: not PEM certificates: {e}"),
            })?;
            for certificate in certificates {
                builder = builder.add_root_certificate(certificate);
            }
        }
        let http =
            builder.build().map_err(|e| UpstreamError::Client { system: SYSTEM, detail: super::error_chain(&e) })?;
        let root = base_url.as_str().trim_end_matches('/');
        Ok(LeasingClient {
            api: Client::new_with_client(root, http, super::bounded),
            metrics: CallRecorder::default(),
            in_flight: Arc::new(Semaphore::new(MAX_CALLS_IN_FLIGHT)),
        })
    }

    /// Counts every call in `metrics`.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = CallRecorder::new(metrics);
        self
    }

    /// Sends one request of the generated client, maps its answer and counts the call: the one
    /// place every call to the provider passes.
    async fn call<T: Serialize>(
        &self,
        request: impl Future<Output = Result<ResponseValue<T>, Error<ByteStream>>>,
    ) -> Result<Value, UpstreamError> {
        let _turn = self.in_flight.acquire().await.expect("the semaphore is never closed");
        let started = Instant::now();
        let result = finish(request.await).await;
        self.metrics.record(SYSTEM, CallOutcome::of(&result), started);
        result
    }

    /// Creates a financing request; the answer carries `FinancingId` and `State`.
    pub async fn create(&self, request: &types::FinancingRequest) -> Result<Value, UpstreamError> {
        self.call(self.api.create_request().body(request.clone()).send()).await
    }

    pub async fn get(&self, financing_id: &str) -> Result<Value, UpstreamError> {
        retry_read(|| async { self.call(self.api.get_request().financing_id(financing_id).send()).await }).await
    }

    pub async fn patch_request(
        &self,
        financing_id: &str,
        patch: &types::PatchRequestPayload,
    ) -> Result<Value, UpstreamError> {
        self.call(self.api.patch_request().financing_id(financing_id).body(patch.clone()).send()).await
    }

    pub async fn patch_lessee(
        &self,
        financing_id: &str,
        patch: &types::PatchLesseePayload,
    ) -> Result<Value, UpstreamError> {
        self.call(self.api.patch_lessee().financing_id(financing_id).body(patch.clone()).send()).await
    }

    pub async fn e_signature_configuration(&self, financing_id: &str) -> Result<Value, UpstreamError> {
        retry_read(|| async {
            self.call(self.api.get_e_signature_configuration().financing_id(financing_id).send()).await
        })
        .await
    }

    pub async fn start_e_signature(
        &self,
        financing_id: &str,
        payload: &types::ESignaturePayload,
    ) -> Result<Value, UpstreamError> {
        self.call(self.api.start_e_signature().financing_id(financing_id).body(payload.clone()).send()).await
    }

    pub async fn cancel_e_signature(&self, financing_id: &str) -> Result<Value, UpstreamError> {
        self.call(
            self.api.cancel_e_signature().financing_id(financing_id).body(types::EmptyBody(Default::default())).send(),
        )
        .await
    }

    pub async fn switch_to_paper_contract(&self, financing_id: &str) -> Result<Value, UpstreamError> {
        self.call(
            self.api
                .switch_to_paper_contract()
                .financing_id(financing_id)
                .body(types::EmptyBody(Default::default()))
                .send(),
        )
        .await
    }

    /// The contract PDF as `{Content: <base64>}`. The provider's documentation leaves open
    /// whether it answers that JSON or the PDF itself; the PDF, or its base64 as text, is read
    /// as that JSON ([`bare_document`]).
    pub async fn contract_document(&self, financing_id: &str) -> Result<Value, UpstreamError> {
        retry_read(|| async {
            let answer = async {
                match self.api.get_contract_document_base64().financing_id(financing_id).send().await {
                    // Only a 200 is decoded as JSON: error answers are raw.
                    Err(Error::InvalidResponsePayload(body, error)) => match bare_document(&body) {
                        Some(document) => Ok(ResponseValue::new(document, reqwest::StatusCode::OK, Default::default())),
                        None => Err(Error::InvalidResponsePayload(body, error)),
                    },
                    answer => answer,
                }
            };
            self.call(answer).await
        })
        .await
    }

    pub async fn contract_document_link(&self, financing_id: &str) -> Result<Value, UpstreamError> {
        self.call(self.api.get_contract_document_link().financing_id(financing_id).send()).await
    }

    pub async fn calculate(&self, request: &types::CalculationRequest) -> Result<Value, UpstreamError> {
        self.call(self.api.calculate().body(request.clone()).send()).await
    }
}

/// Converts a JSON body into the provider's model, naming the field that does not fit.
pub fn body<T: DeserializeOwned>(value: &Value) -> Result<T, BodyError> {
    typed(value)
}

/// A contract document answered as the PDF itself or as its base64 text (bare or a JSON
/// string), in the JSON form; `None` when the body is neither.
fn bare_document(body: &[u8]) -> Option<types::ContractDocument> {
    use base64::Engine;
    let base64 = base64::engine::general_purpose::STANDARD;
    let content = if body.starts_with(b"%PDF-") {
        base64.encode(body)
    } else {
        let text = serde_json::from_slice::<String>(body).ok().or_else(|| String::from_utf8(body.to_vec()).ok())?;
        let text: String = text.split_whitespace().collect();
        base64.decode(&text).ok()?.starts_with(b"%PDF-").then_some(text)?
    };
    Some(types::ContractDocument { content: Some(content), file_name: None, extra: Default::default() })
}

async fn finish<T: Serialize>(result: Result<ResponseValue<T>, Error<ByteStream>>) -> Result<Value, UpstreamError> {
    match result {
        Ok(response) => serde_json::to_value(response.into_inner())
            .map_err(|e| UpstreamError::Malformed { system: SYSTEM, detail: e.to_string() }),
        Err(error) => Err(provider_error(error).await),
    }
}

/// An error body in one line: the provider's JSON error (field errors first, else its message
/// and details), else the body as it came (a proxy's HTML page), "no details" when empty.
fn describe(body: &[u8]) -> String {
    let parts = serde_json::from_slice::<types::ProviderError>(body).map(|e| error_parts(&e)).unwrap_or_default();
    let text = String::from_utf8_lossy(body);
    if !parts.is_empty() {
        summarise(&parts.join("; "))
    } else if text.trim().is_empty() {
        "no details".into()
    } else {
        summarise(&text)
    }
}

fn error_parts(error: &types::ProviderError) -> Vec<String> {
    let mut parts = Vec::new();
    if let Some(errors) = &error.errors {
        for (field, messages) in errors.iter() {
            parts.push(format!("{field}: {}", messages.join(", ")));
        }
    }
    if parts.is_empty() {
        parts.extend(error.message.clone());
        parts.extend(error.details.clone());
    }
    if let Some(id) = &error.correlation_id {
        parts.push(format!("correlation id {id}"));
    }
    parts
}

/// A failed call as its [`UpstreamError`]. An error status decides whatever its body
/// ([`super::refusal`]): the error answers are raw (`xtask/src/leasing.rs`), as a proxy in
/// front of the provider answers them with an HTML page or nothing.
async fn provider_error(error: Error<ByteStream>) -> UpstreamError {
    match error {
        Error::ErrorResponse(response) => {
            let (status, headers) = (response.status().as_u16(), response.headers().clone());
            let body = response.into_inner_stream().try_collect::<Vec<_>>().await.map(|chunks| chunks.concat());
            super::refusal(SYSTEM, status, &headers, body, describe)
        }
        Error::UnexpectedResponse(response) => {
            let (status, headers) = (response.status().as_u16(), response.headers().clone());
            super::refusal(SYSTEM, status, &headers, response.bytes().await, describe)
        }
        Error::CommunicationError(e) | Error::ResponseBodyError(e) | Error::InvalidUpgrade(e) => {
            UpstreamError::from_reqwest(SYSTEM, e)
        }
        Error::InvalidResponsePayload(bytes, e) => UpstreamError::Malformed {
            system: SYSTEM,
            detail: format!("{e} in {}", summarise(&String::from_utf8_lossy(&bytes))),
        },
        Error::InvalidRequest(detail) | Error::Custom(detail) => UpstreamError::Client { system: SYSTEM, detail },
    }
}

#[cfg(test)]
mod tests {
    use super::{bare_document, describe};

    #[test]
    fn error_bodies_are_described_whatever_their_form() {
        let validation = br#"{"Errors": {"Period": ["must be 12 to 72"]}, "CorrelationId": "c-1"}"#;
        assert_eq!(describe(validation), "Period: must be 12 to 72; correlation id c-1");
        assert_eq!(describe(br#"{"Message": "Database offline", "Details": "retry"}"#), "Database offline; retry");
        assert_eq!(describe(b"<html><body>Bad Gateway</body></html>"), "<html><body>Bad Gateway</body></html>");
        assert_eq!(describe(br#"{"error": "unknown"}"#), r#"{"error": "unknown"}"#);
        assert_eq!(describe(b"  "), "no details");
    }

    #[test]
    fn a_bare_contract_document_is_read_as_the_json_form() {
        let content = |body: &[u8]| bare_document(body).and_then(|document| document.content);
        assert_eq!(content(b"%PDF-1.7\n\xe2\xe3"), Some("JVBERi0xLjcK4uM=".into()));
        assert_eq!(content(b"JVBERi0xLjcK4uM=\r\n"), Some("JVBERi0xLjcK4uM=".into()));
        assert_eq!(content(br#""JVBERi0x\r\nLjcK4uM=""#), Some("JVBERi0xLjcK4uM=".into()));
        assert_eq!(content(b"<html>Not Found</html>"), None);
        assert_eq!(content(b"aGVsbG8="), None, "base64 of something else than a PDF");
    }
}
