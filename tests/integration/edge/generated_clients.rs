//! Three more generators a consumer may run on `spec/openapi.json`, beside progenitor
//! (`clients/rust`), openapi-typescript (`clients/typescript`) and openapi-python-client
//! (`python_client.rs`): openapi-generator's `python` and `typescript-fetch` generators and
//! datamodel-code-generator, each at the version pinned in `xtask/python/requirements-test.txt`
//! and installed by `cargo xtask test` (openapi-generator's jar comes in its PyPI package and
//! runs on Java; the TypeScript compiler is the one `clients/typescript` pins). Each generates
//! from the committed document with no warning about it, its output is imported or compiled
//! (`tsc --strict`), and a short driver (`generated_clients/`) logs in, lists the companies,
//! reads one and sends it back unchanged to its update route against the service.

use crate::common::Api;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::{Db, EMAIL, PASSWORD, TestService};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const DOCUMENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/spec/openapi.json");
/// The drivers: the folder beside this file, of its name.
fn drivers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(file!()).with_extension("")
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// The warnings openapi-generator 7.26.0 prints about itself, not the document:
/// - "Failed to get the schema name: null", logged for any schema that is `anyOf` (or `oneOf`)
///   of two primitive types, as `EdmInt64` (`{"anyOf": [{"type": "string"}, {"type":
///   "integer"}]}`) is, alone in a document of its own too, inline members or `$ref`s alike; it
///   names nothing and changes nothing generated (the value is typed as the union), and no other
///   form says "a string or an integer";
/// - `typescript-fetch` checks each path parameter's name as if it were a model's, and warns
///   that `Record` (TypeScript's built-in type) is renamed `ModelRecord` for the `record`
///   parameter of the field-report routes: nothing is renamed, the parameter stays `record`.
///   Renaming the documented parameter would break every client that passes it by name.
const GENERATOR_OWN_WARNINGS: &[&str] = &[
    "WARN  o.o.codegen.utils.ModelUtils - Failed to get the schema name: null",
    "WARN  o.o.c.l.AbstractTypeScriptClientCodegen - Record (model name matches existing language type) cannot be used as a model name. Renamed to ModelRecord",
];

/// Runs a generator and fails on its failure or on any warning it prints about the document.
fn generate(name: &str, command: &mut Command) {
    let output = command.output().unwrap_or_else(|e| panic!("{name} runs (cargo xtask test installs it): {e}"));
    let printed = text(&output);
    assert!(output.status.success(), "{name} failed:\n{printed}");
    // openapi-generator logs ` WARN `; Python's warnings say `Warning`.
    let warnings: Vec<&str> = printed
        .lines()
        .filter(|line| line.contains(" WARN ") || line.to_lowercase().contains("warning"))
        .filter(|line| !GENERATOR_OWN_WARNINGS.iter().any(|own| line.ends_with(own)))
        .collect();
    assert!(warnings.is_empty(), "{name} warned about the document:\n{}", warnings.join("\n"));
}

/// openapi-generator (the jar of the pinned `openapi-generator-cli`) with one generator.
fn openapi_generator(generator: &str, output: &Path, properties: &str) {
    generate(
        &format!("openapi-generator {generator}"),
        Command::new("openapi-generator-cli")
            .args(["generate", "--input-spec", DOCUMENT, "--generator-name", generator, "--output"])
            .arg(output)
            .args(["--additional-properties", properties])
            // The generated tests and docs are not the client; leave them out.
            .args(["--global-property", "apiTests=false,modelTests=false,apiDocs=false,modelDocs=false"]),
    );
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("integration-service-{name}-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A service with one user and two companies to read and write back.
async fn service_with_companies() -> TestService {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    let token = svc.user_token().await;
    for (id, name) in [("gen-1", "Generated Bikes GmbH"), ("gen-2", "Generated Cycles GmbH")] {
        let company = serde_json::json!({"Id": id, "Version": 1, "Name": name, "IsPhysicalPerson": false,
                                         "Location": {"City": "Berlin"}, "Tags": [{"Id": "7", "Name": "vip"}]});
        let created = svc.post(&token, "/api/v1/fieldreport/companies", company).await;
        assert_eq!(created.status(), 201);
    }
    svc
}

/// Runs a driver (`program args… BASE EMAIL PASSWORD`) off the test's runtime and reads the
/// JSON object it prints.
async fn drive(svc: &TestService, mut command: Command) -> Value {
    command.args([&svc.base, EMAIL, PASSWORD]);
    let driven = tokio::task::spawn_blocking(move || command.output()).await.unwrap().expect("the driver runs");
    assert!(driven.status.success(), "the driver failed:\n{}", text(&driven));
    serde_json::from_slice(&driven.stdout).unwrap_or_else(|e| panic!("one JSON object ({e}):\n{}", text(&driven)))
}

/// What every driver saw: a token, both companies listed, one read, and the same record
/// written back and answered (its `Version` counted up, the upstream's stamps aside).
fn check_round_trip(seen: &Value, id: &str, version: &str, date_modified: &str) {
    assert_eq!(seen["token_type"], "Bearer", "{seen}");
    // The field-report system assigned the Ids (the creates asked for `gen-1`, `gen-2`).
    let listed = seen["listed"].as_array().unwrap();
    assert_eq!(listed.len(), 2, "{seen}");

    let (read, written) = (&seen["read"], &seen["written"]);
    assert_eq!(read[id], listed[0], "{seen}");
    assert_eq!(read["Name"], "Generated Bikes GmbH", "{seen}");
    assert_eq!(written[version].as_i64(), read[version].as_i64().map(|v| v + 1), "{seen}");
    let unstamped = |record: &Value| {
        let mut record = record.clone();
        for field in [version, date_modified] {
            record.as_object_mut().unwrap().remove(field);
        }
        record
    };
    assert_eq!(unstamped(written), unstamped(read), "the record written back differs from the one read");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_generator_python_client_reads_and_writes_a_company_back() {
    let dir = scratch("openapi-generator-python");
    let package = "openapi_generator_client";
    openapi_generator("python", &dir.join("client"), &format!("packageName={package},projectName={package}"));
    let imported = Command::new("python3")
        .args(["-c", &format!("import {package}")])
        .env("PYTHONPATH", dir.join("client"))
        .output();
    let imported = imported.expect("python3 runs");
    assert!(imported.status.success(), "the generated package does not import:\n{}", text(&imported));

    let svc = service_with_companies().await;
    let mut command = Command::new("python3");
    command.arg(drivers().join("openapi_generator_python.py")).env("PYTHONPATH", dir.join("client"));
    let seen = drive(&svc, command).await;
    // The generator's `to_dict` keeps the wire names.
    check_round_trip(&seen, "Id", "Version", "DateModified");
    svc.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_generator_typescript_fetch_client_reads_and_writes_a_company_back() {
    let tsc = Path::new(ROOT).join("clients/typescript/node_modules/.bin/tsc");
    assert!(tsc.exists(), "{} is missing: cargo xtask test runs `npm ci` in clients/typescript", tsc.display());
    let dir = scratch("openapi-generator-typescript-fetch");
    openapi_generator("typescript-fetch", &dir.join("generated"), "supportsES6=true");
    std::fs::copy(drivers().join("typescript_fetch.ts"), dir.join("typescript_fetch.ts")).unwrap();
    let compiled = Command::new(&tsc)
        .current_dir(&dir)
        .args(["--strict", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext"])
        .args(["--lib", "es2022,dom", "--outDir", "out", "typescript_fetch.ts"])
        .output()
        .expect("tsc runs");
    assert!(compiled.status.success(), "tsc --strict refused the generated client:\n{}", text(&compiled));

    let svc = service_with_companies().await;
    let mut command = Command::new("node");
    command.arg(dir.join("out/typescript_fetch.js"));
    let seen = drive(&svc, command).await;
    check_round_trip(&seen, "Id", "Version", "DateModified");
    // The companies listed by cursor, and copied from the change feed.
    let mut listed = seen["listed"].as_array().unwrap().clone();
    listed.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    assert_eq!(seen["copied"].as_array().unwrap(), &listed, "the copy from the change feed: {seen}");
    svc.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datamodel_code_generator_models_read_and_write_a_company_back() {
    let dir = scratch("datamodel-code-generator");
    generate(
        "datamodel-code-generator",
        Command::new("datamodel-codegen")
            .args(["--input", DOCUMENT, "--input-file-type", "openapi", "--output"])
            .arg(dir.join("datamodel_models.py"))
            .args(["--output-model-type", "pydantic_v2.BaseModel", "--target-python-version", "3.11"])
            .args(["--formatters", "builtin"]),
    );
    let svc = service_with_companies().await;
    let mut command = Command::new("python3");
    command.arg(drivers().join("datamodel_code_generator.py")).env("PYTHONPATH", &dir);
    let seen = drive(&svc, command).await;
    check_round_trip(&seen, "Id", "Version", "DateModified");
    svc.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}
