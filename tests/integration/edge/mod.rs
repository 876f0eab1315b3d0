//! The HTTP edge every area shares: the HTTP surface, TLS, abuse, oversized heads, login and
//! tokens, idempotency keys, the docs page, the document's examples and the generated clients,
//! and upstream faults as a caller sees them.

mod abuse;
mod auth;
mod client;
mod declared_answers;
mod docs_page;
mod document_validator;
mod examples;
mod generated_clients;
mod http;
mod idempotency_keys;
mod oversized_heads;
mod python_client;
mod tls;
mod tokens;
mod upstream_answers;
mod upstream_faults;
mod upstream_waits;
