//! The API reference page in a real browser: headless Chromium (Debian's `chromium`) loads
//! `/{DOCS_PATH}` from the running service, Swagger UI renders the served document, and the
//! rendered DOM must list every operation of every area. A screenshot is saved under the
//! target folder (`docs-page.png`) for people to look at.

use crate::common::Api;
use crate::common::contract::Checked;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::common::{DOCUMENT, Db, TestService, error_body};

const CHROMIUM: &str = "/usr/bin/chromium";
/// A guard against a hung browser, not a timing assertion.
const BROWSER_GUARD: Duration = Duration::from_secs(300);

/// Operations of the committed document by tag: `(operationId, summary)`.
fn operations_by_tag() -> BTreeMap<String, Vec<(String, String)>> {
    let doc: serde_json::Value = serde_json::from_str(DOCUMENT).unwrap();
    let mut by_tag: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for item in doc["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            let tag = op["tags"][0].as_str().unwrap().to_string();
            let id = op["operationId"].as_str().unwrap().to_string();
            let summary = op["summary"].as_str().unwrap_or_default().to_string();
            by_tag.entry(tag).or_default().push((id, summary));
        }
    }
    by_tag
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"))
}

/// Runs headless Chromium on `url` with `extra` arguments; returns (stdout, stderr).
async fn chromium(url: &str, extra: &[String]) -> (String, String) {
    assert!(
        std::path::Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: these tests drive Debian's Chromium; `cargo xtask test` installs it \
         (or: `apt-get install -y chromium`)"
    );
    let profile = std::env::temp_dir().join(format!("integration-service-chromium-{}", uuid::Uuid::new_v4()));
    let mut command = tokio::process::Command::new(CHROMIUM);
    command
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        .args(["--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-sync"])
        .args(["--disable-background-networking", "--disable-component-update", "--enable-logging=stderr"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--virtual-time-budget=60000")
        .args(extra)
        .arg(url)
        .kill_on_drop(true);
    let output = tokio::time::timeout(BROWSER_GUARD, command.output())
        .await
        .expect("chromium finished")
        .expect("chromium starts");
    let _ = std::fs::remove_dir_all(&profile);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "chromium failed ({}):\n{stderr}", output.status);
    (stdout, stderr)
}

/// The page lists every tag and, opened at a tag's deep link (`#/<tag>`), every operation of
/// that tag (Swagger UI's ids are `operations-<tag>-<operationId>`) with their summaries, and
/// breaks no CSP rule. One tag at a time: the page starts with the tags collapsed, and Swagger
/// UI renders long lists (150 rows and more) only as they scroll into view.
async fn assert_lists_every_operation(page: &str) {
    let by_tag = operations_by_tag();
    assert_eq!(
        by_tag.keys().map(String::as_str).collect::<Vec<_>>(),
        ["auth", "erp", "fieldreport", "jobs", "leasing", "operations"]
    );
    for (tag, operations) in &by_tag {
        let (dom, stderr) = chromium(&format!("{page}#/{tag}"), &["--dump-dom".to_string()]).await;
        assert!(dom.contains("swagger-ui"), "Swagger UI did not start:\n{}", &dom[..dom.len().min(2000)]);
        for every in by_tag.keys() {
            assert!(dom.contains(&format!("id=\"operations-tag-{every}\"")), "no section for tag {every}");
        }
        for (id, _) in operations {
            assert!(dom.contains(&format!("id=\"operations-{tag}-{id}\"")), "operation {id} of {tag} is not listed");
        }
        let plain_summaries = operations.iter().map(|(_, s)| s).filter(|s| !s.contains(['&', '<', '>', '"', '\'']));
        for summary in plain_summaries.take(3) {
            assert!(dom.contains(&format!(">{summary}<")), "summary {summary:?} of {tag} is not shown");
        }
        assert!(!stderr.contains("Content Security Policy"), "the page broke its CSP:\n{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_renders_every_operation_at_the_docs_path() {
    let svc = TestService::start(Db::Sqlite, &[]).await;

    // `/docs` (no trailing slash), as people type it.
    assert_lists_every_operation(&svc.url("/docs")).await;

    // The screenshot, of `/docs/`.
    let screenshot = target_dir().join("docs-page.png");
    let _ = std::fs::remove_file(&screenshot);
    chromium(
        &svc.url("/docs/#/leasing"),
        &[format!("--screenshot={}", screenshot.display()), "--window-size=1280,2000".to_string()],
    )
    .await;
    let png = std::fs::read(&screenshot).expect("chromium wrote the screenshot");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "the screenshot is a PNG");
    // A blank page compresses to a few kilobytes; the rendered reference does not.
    assert!(png.len() > 50_000, "the screenshot looks blank ({} bytes)", png.len());
    eprintln!("screenshot: {}", screenshot.display());
    svc.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_renders_under_another_docs_path() {
    let svc = TestService::start(Db::Sqlite, &[("DOCS_PATH", "reference/v1")]).await;
    assert_lists_every_operation(&svc.url("/reference/v1/")).await;
    svc.stop().await;
}

/// What the browser relies on, over plain HTTP: content types, the CSP, same-origin relative
/// URLs only, revalidation of the assets, and the error shape for an unknown asset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_and_assets_are_served_with_their_types() {
    let svc = TestService::start(Db::Sqlite, &[]).await;
    for (path, prefix) in [("/docs", "docs/"), ("/docs/", "")] {
        let page = svc.client.get(svc.url(path)).checked().await.unwrap();
        assert_eq!(page.status(), 200, "{path}");
        assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
        let csp = page.headers()["content-security-policy"].to_str().unwrap().to_string();
        assert!(csp.contains("script-src 'self'") && csp.contains("default-src 'none'"), "{csp}");
        let html = page.text().await.unwrap();
        assert!(html.contains(&format!("data-openapi-url=\"{prefix}openapi.json\"")), "{html}");
        assert!(!html.contains("http:") && !html.contains("https:") && !html.contains("//cdn"), "{html}");
        assert!(!html.contains("<script>") && !html.contains("<style"), "no inline script or style: {html}");
    }
    for (file, content_type) in [
        ("swagger-ui-bundle.js", "text/javascript; charset=utf-8"),
        ("docs-page.js", "text/javascript; charset=utf-8"),
        ("swagger-ui.css", "text/css; charset=utf-8"),
        ("favicon-32x32.png", "image/png"),
    ] {
        let url = svc.url(&format!("/docs/assets/{file}"));
        let asset = svc.client.get(&url).checked().await.unwrap();
        assert_eq!(asset.status(), 200, "{file}");
        assert_eq!(asset.headers()["content-type"], content_type, "{file}");
        let etag = asset.headers()["etag"].clone();
        let on_disk = match file {
            "docs-page.js" => std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/docs-page/docs-page.js")),
            _ => std::fs::read(format!("{}/assets/swagger-ui/{file}", env!("CARGO_MANIFEST_DIR"))),
        };
        assert_eq!(asset.bytes().await.unwrap().as_ref(), on_disk.unwrap().as_slice(), "{file}");
        let again = svc.client.get(&url).header("if-none-match", etag).checked().await.unwrap();
        assert_eq!(again.status(), 304, "{file}");
    }
    let missing = svc.client.get(svc.url("/docs/assets/app.js")).checked().await.unwrap();
    error_body(missing, 404).await;
    let internal = svc.client.get(svc.url("/__internal/docs/page/folder")).checked().await.unwrap();
    error_body(internal, 404).await;
    svc.stop().await;
}
