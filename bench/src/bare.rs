//! The bare-dropshot baseline: a plain dropshot server with one constant endpoint, in a process
//! of its own (this binary, `integration-service-bench bare-dropshot`), answering what the
//! service's `GET /bench/constant` answers. It is the ceiling the service's own HTTP path is
//! measured against: nothing of the service, the same server library and load generator.

use dropshot::{
    ApiDescription, ConfigDropshot, ConfigLogging, ConfigLoggingLevel, HttpError, HttpResponseOk, RequestContext,
    ServerBuilder, endpoint,
};

/// The argument that makes this binary the bare server.
pub const ARGUMENT: &str = "bare-dropshot";

/// What the bare server prints once it listens, followed by its URL.
pub const LISTENING: &str = "bare dropshot listening on ";

#[endpoint { method = GET, path = "/bench/constant" }]
async fn constant(_rqctx: RequestContext<()>) -> Result<HttpResponseOk<serde_json::Value>, HttpError> {
    Ok(HttpResponseOk(serde_json::json!({"status": "ok"})))
}

/// Serves until the process is killed.
pub fn serve() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let mut api = ApiDescription::new();
        api.register(constant).map_err(|e| anyhow::anyhow!("{e}"))?;
        let log = ConfigLogging::StderrTerminal { level: ConfigLoggingLevel::Error }.to_logger("bare-dropshot")?;
        let config = ConfigDropshot { bind_address: "127.0.0.1:0".parse()?, ..Default::default() };
        let server = ServerBuilder::new(api, (), log).config(config).start().map_err(|e| anyhow::anyhow!("{e}"))?;
        println!("{LISTENING}http://{}", server.local_addr());
        server.await.map_err(|e| anyhow::anyhow!("{e}"))
    })
}
