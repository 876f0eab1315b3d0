//! A validator a consumer may run before generating anything: openapi-spec-validator (PyPI,
//! pinned in `xtask/python/requirements-test.txt`, installed by `cargo xtask test`) checks
//! `spec/openapi.json` against the OpenAPI 3.0 schema, a reading of the document's structure
//! beside the generators' (`generated_clients.rs`, `python_client.rs`, `clients/`).

use std::process::Command;

const DOCUMENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/spec/openapi.json");

#[test]
fn openapi_spec_validator_accepts_the_document() {
    let output = Command::new("openapi-spec-validator")
        .arg(DOCUMENT)
        .output()
        .expect("openapi-spec-validator runs (cargo xtask test installs it into target/test-tools/venv)");
    let printed = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "openapi-spec-validator refused the document:\n{printed}");
    assert_eq!(printed.trim(), format!("{DOCUMENT}: OK"), "openapi-spec-validator said more than OK");
}
