//! File storage (contract PDFs, mail copies) through object_store: a folder by default
//! (`STORAGE_URL=file://./var/storage`), or a bucket of an S3-compatible object store
//! (`STORAGE_URL=s3://<bucket>[/<prefix>]`, reached with the `S3_*` settings). Keys are checked
//! before use, so that an identifier taken from a URL can never name a file outside its folder
//! or prefix.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::prefix::PrefixStore;
use object_store::{ClientConfigKey, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig};
use secrecy::{ExposeSecret, SecretString};
use url::Url;

use crate::vocabulary::settings::{ConfigError, Settings, invalid};

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("STORAGE_URL: {0}")]
    Config(String),
    #[error("invalid storage key {0:?}")]
    InvalidKey(String),
    #[error("storage failed: {0}")]
    Io(String),
}

/// A validated key: `/`-separated segments of letters, digits, `.`, `-` and `_`, none of them
/// empty, `.` or `..`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageKey(String);

impl StorageKey {
    pub fn new(key: &str) -> Result<StorageKey, StorageError> {
        let valid = !key.is_empty()
            && key.len() <= 512
            && key.split('/').all(|segment| {
                !segment.is_empty()
                    && segment != "."
                    && segment != ".."
                    && segment.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
            });
        if valid { Ok(StorageKey(key.to_string())) } else { Err(StorageError::InvalidKey(key.to_string())) }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Where files go, as `STORAGE_URL` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageLocation {
    /// `file://<folder>`: a folder, relative to the working directory unless absolute.
    Folder(PathBuf),
    /// `s3://<bucket>[/<prefix>]`: a bucket, every key under the prefix when there is one.
    S3 { bucket: String, prefix: Option<StorageKey> },
}

impl StorageLocation {
    /// Reads `STORAGE_URL` (default `file://./var/storage`).
    pub fn read(raw: &Settings) -> Result<StorageLocation, ConfigError> {
        Self::parse(&raw.string_or("STORAGE_URL", "file://./var/storage")).map_err(|e| match e {
            StorageError::Config(reason) => invalid("STORAGE_URL", reason),
            other => invalid("STORAGE_URL", other.to_string()),
        })
    }

    /// Reads `STORAGE_URL`. An `s3://` URL holds the bucket and an optional prefix only:
    /// credentials, endpoint and region are settings of their own (`S3_*`), so the URL never
    /// carries a secret and may be shown; errors do not repeat it all the same.
    pub fn parse(url: &str) -> Result<StorageLocation, StorageError> {
        if let Some(folder) = url.strip_prefix("file://") {
            if folder.is_empty() {
                return Err(StorageError::Config("file:// names no folder".into()));
            }
            return Ok(StorageLocation::Folder(PathBuf::from(folder)));
        }
        if url.starts_with("s3://") {
            return Self::parse_s3(url);
        }
        Err(StorageError::Config("must start with file:// or s3://".into()))
    }

    /// Read as written, without URL normalisation (which would resolve `..` silently).
    fn parse_s3(raw: &str) -> Result<StorageLocation, StorageError> {
        let bad = |reason: &str| StorageError::Config(reason.to_string());
        let rest = raw.strip_prefix("s3://").unwrap_or_default();
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        if authority.contains('@') {
            return Err(bad("an s3:// URL carries no credentials: set S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY"));
        }
        if rest.contains(['?', '#']) {
            return Err(bad("an s3:// URL takes no query or fragment: S3 options are the S3_* settings"));
        }
        if authority.contains(':') {
            return Err(bad("an s3:// URL names a bucket, not a server: set the server in S3_ENDPOINT"));
        }
        if !is_bucket_name(authority) {
            return Err(bad(
                "s3://<bucket>[/<prefix>] needs a bucket name of 3 to 63 lower-case letters, digits, '.' and '-'",
            ));
        }
        let prefix = path.strip_suffix('/').unwrap_or(path);
        let prefix = if prefix.is_empty() {
            None
        } else {
            Some(StorageKey::new(prefix).map_err(|_| {
                bad("the prefix of an s3:// URL is `/`-separated segments of letters, digits, '.', '-' and '_'")
            })?)
        };
        Ok(StorageLocation::S3 { bucket: authority.to_string(), prefix })
    }
}

/// Settings of an S3-compatible store (`STORAGE_URL=s3://…`). Each one left unset is taken
/// from the standard `AWS_*` environment variables by the S3 client (see
/// [`Storage::open`]).
#[derive(Debug, Clone, Default)]
pub struct S3Config {
    /// The store's root URL (`S3_ENDPOINT`), for MinIO, Ceph, R2 and the like; unset: AWS.
    pub endpoint: Option<Url>,
    /// `S3_REGION`; AWS needs the bucket's, most other stores take any.
    pub region: Option<String>,
    /// `S3_ACCESS_KEY_ID` and `S3_SECRET_ACCESS_KEY`, set together.
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<SecretString>,
    /// `S3_ALLOW_HTTP`: whether a plain `http://` endpoint may be used.
    pub allow_http: Option<bool>,
}

impl S3Config {
    /// The `S3_*` settings; checked whatever `STORAGE_URL` says, so that a typo shows at once.
    pub fn read(raw: &Settings) -> Result<S3Config, ConfigError> {
        let region = raw.get("S3_REGION").map(str::to_string);
        if let Some(region) = &region
            && !region.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            return Err(invalid("S3_REGION", format!("{region:?} is not a region name like eu-central-1")));
        }
        let access_key_id = raw.get("S3_ACCESS_KEY_ID").map(str::to_string);
        let secret_access_key = raw.secret("S3_SECRET_ACCESS_KEY");
        if access_key_id.is_some() != secret_access_key.is_some() {
            let missing = if access_key_id.is_some() { "S3_SECRET_ACCESS_KEY" } else { "S3_ACCESS_KEY_ID" };
            return Err(invalid(missing, "S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set together"));
        }
        Ok(S3Config {
            endpoint: raw.url("S3_ENDPOINT")?,
            region,
            access_key_id,
            secret_access_key,
            allow_http: raw.bool("S3_ALLOW_HTTP")?,
        })
    }
}

/// The S3 naming rules for general purpose buckets (a subset accepted by every S3-compatible
/// store): 3 to 63 characters, lower-case letters, digits, `.` and `-`, starting and ending
/// with a letter or digit.
fn is_bucket_name(name: &str) -> bool {
    let edge_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    (3..=63).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
        && edge_ok(name.chars().next())
        && edge_ok(name.chars().last())
        && !name.contains("..")
}

/// What was stored: its key, size and SHA-256 (hex).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFile {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

/// A storage call waits for the store at most this long in all, retries included (object_store's
/// own default is 10 retries within 3 minutes, too long for a caller waiting on an answer).
const S3_RETRY_TIMEOUT: Duration = Duration::from_secs(30);
const S3_MAX_RETRIES: usize = 3;

#[derive(Clone)]
pub struct Storage {
    store: Arc<dyn ObjectStore>,
}

impl Storage {
    /// Opens `STORAGE_URL` with no `S3_*` settings (the `AWS_*` environment variables only);
    /// the service itself uses [`Storage::open`].
    pub fn from_url(url: &str) -> Result<Storage, StorageError> {
        Self::open(&StorageLocation::parse(url)?, &S3Config::default())
    }

    pub fn open(location: &StorageLocation, s3: &S3Config) -> Result<Storage, StorageError> {
        match location {
            StorageLocation::Folder(folder) => {
                std::fs::create_dir_all(folder)
                    .map_err(|e| StorageError::Config(format!("cannot create {}: {e}", folder.display())))?;
                let store =
                    LocalFileSystem::new_with_prefix(folder).map_err(|e| StorageError::Config(e.to_string()))?;
                Ok(Storage { store: Arc::new(store) })
            }
            StorageLocation::S3 { bucket, prefix } => {
                let store = s3_store(bucket, s3)?;
                let store: Arc<dyn ObjectStore> = match prefix {
                    Some(prefix) => Arc::new(PrefixStore::new(store, prefix.as_str())),
                    None => Arc::new(store),
                };
                Ok(Storage { store })
            }
        }
    }

    pub async fn put(&self, key: &StorageKey, content: Bytes) -> Result<StoredFile, StorageError> {
        let sha256 = crate::digest::sha256_hex(&content);
        let bytes = content.len() as u64;
        self.store
            .put(&ObjectPath::from(key.as_str()), PutPayload::from_bytes(content))
            .await
            .map_err(|e| failure(Action::Write, key, e))?;
        Ok(StoredFile { path: key.as_str().to_string(), bytes, sha256 })
    }

    pub async fn get(&self, key: &StorageKey) -> Result<Bytes, StorageError> {
        let result =
            self.store.get(&ObjectPath::from(key.as_str())).await.map_err(|e| failure(Action::Read, key, e))?;
        result.bytes().await.map_err(|e| failure(Action::Read, key, e))
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Action {
    Read,
    Write,
}

/// A failed call. The log gets object_store's whole account (for S3 the request URL and the
/// store's answer, never a credential); the caller, who may be an API client, a short cause.
fn failure(action: Action, key: &StorageKey, error: object_store::Error) -> StorageError {
    let verb = if action == Action::Write { "writing" } else { "reading" };
    crate::telemetry::report_storage_failure(verb, key.as_str(), &error.to_string());
    let cause = match error {
        object_store::Error::NotFound { .. } if action == Action::Write => "the bucket does not exist",
        object_store::Error::NotFound { .. } => "not found",
        object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. } => {
            "access denied by the store"
        }
        _ => "the store failed or could not be reached (the log has the detail)",
    };
    StorageError::Io(format!("{verb} {}: {cause}", key.as_str()))
}

/// The bucket's client. It starts from the standard `AWS_*` environment variables (what a
/// platform supplies: a region, a role to assume, container credentials, a session token); the
/// service's `S3_*` settings win over them, and a key pair set there is used alone.
fn s3_store(bucket: &str, s3: &S3Config) -> Result<object_store::aws::AmazonS3, StorageError> {
    let retry = RetryConfig { max_retries: S3_MAX_RETRIES, retry_timeout: S3_RETRY_TIMEOUT, ..Default::default() };
    let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket).with_retry(retry);
    if let Some(endpoint) = &s3.endpoint {
        let endpoint = endpoint.as_str().trim_end_matches('/');
        // An `AWS_ENDPOINT_URL_S3` would otherwise win over the generic endpoint.
        builder = builder.with_endpoint(endpoint).with_config(AmazonS3ConfigKey::S3Endpoint, endpoint);
    }
    if let Some(region) = &s3.region {
        builder = builder.with_region(region);
    }
    if let (Some(key_id), Some(secret)) = (&s3.access_key_id, &s3.secret_access_key) {
        let credential = object_store::aws::AwsCredential {
            key_id: key_id.clone(),
            secret_key: secret.expose_secret().to_string(),
            token: None,
        };
        builder = builder.with_credentials(Arc::new(object_store::StaticCredentialProvider::new(credential)));
    }
    if let Some(allow_http) = s3.allow_http {
        builder = builder.with_allow_http(allow_http);
    }
    let endpoint = builder
        .get_config_value(&AmazonS3ConfigKey::S3Endpoint)
        .or_else(|| builder.get_config_value(&AmazonS3ConfigKey::Endpoint));
    let allow_http = builder
        .get_config_value(&AmazonS3ConfigKey::Client(ClientConfigKey::AllowHttp))
        .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "on" | "yes" | "y"));
    if endpoint.is_some_and(|e| e.to_ascii_lowercase().starts_with("http://")) && !allow_http {
        return Err(StorageError::Config(
            "the S3 endpoint is plain http://: set S3_ALLOW_HTTP=true to allow it (on a trusted network only)".into(),
        ));
    }
    builder.build().map_err(|e| StorageError::Config(format!("the S3 client cannot be built: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_cannot_leave_their_folder() {
        assert!(StorageKey::new("contracts/0b5e-42.pdf").is_ok());
        for bad in [
            "",
            "../x",
            "contracts/../../etc/passwd",
            "/abs",
            "a//b",
            "a/./b",
            "con tracts/x",
            "a\\b",
            "x%2f..",
            "contracts/",
        ] {
            assert!(StorageKey::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn storage_urls() {
        assert_eq!(
            StorageLocation::parse("file://./var/storage").unwrap(),
            StorageLocation::Folder("./var/storage".into())
        );
        assert_eq!(
            StorageLocation::parse("s3://contracts-eu").unwrap(),
            StorageLocation::S3 { bucket: "contracts-eu".into(), prefix: None }
        );
        for (url, expected) in [
            ("s3://contracts-eu/", None),
            ("s3://contracts-eu/integration/prod", Some("integration/prod")),
            ("s3://contracts-eu/integration/prod/", Some("integration/prod")),
        ] {
            let StorageLocation::S3 { bucket, prefix } = StorageLocation::parse(url).unwrap() else { panic!("{url}") };
            assert_eq!(bucket, "contracts-eu");
            assert_eq!(prefix.as_ref().map(StorageKey::as_str), expected, "{url}");
        }
        for bad in [
            "s3://",
            "s3:///prefix",
            "s3://ab",
            "s3://Upper-Case",
            "s3://-bucket",
            "s3://bucket-",
            "s3://bu..cket",
            "s3://bucket_name",
            "s3://bucket/../x",
            "s3://bucket/a//b",
            "s3://bucket/a%2Fb",
            "s3://bucket:9000/x",
            "s3://bucket?region=eu-west-1",
            "s3://bucket#x",
            "http://bucket",
            "file://",
        ] {
            let err = StorageLocation::parse(bad).unwrap_err();
            assert!(matches!(err, StorageError::Config(_)), "{bad:?}: {err}");
            assert!(err.to_string().starts_with("STORAGE_URL: "), "{err}");
        }
    }

    #[test]
    fn credentials_in_the_url_are_refused_without_repeating_them() {
        let err = StorageLocation::parse("s3://AKIDEXAMPLE:wJalrXUtnFEMI@bucket/x").unwrap_err().to_string();
        assert!(err.contains("S3_ACCESS_KEY_ID"), "{err}");
        assert!(!err.contains("wJalrXUtnFEMI") && !err.contains("AKIDEXAMPLE"), "{err}");
    }

    #[test]
    fn a_plain_http_endpoint_must_be_allowed() {
        let location = StorageLocation::parse("s3://bucket/prefix").unwrap();
        let mut s3 = S3Config { endpoint: Some("http://127.0.0.1:9000".parse().unwrap()), ..Default::default() };
        let err = Storage::open(&location, &s3).err().expect("refused").to_string();
        assert!(err.starts_with("STORAGE_URL: ") && err.contains("S3_ALLOW_HTTP"), "{err}");
        s3.allow_http = Some(true);
        assert!(Storage::open(&location, &s3).is_ok());
        s3.endpoint = Some("https://s3.example.com".parse().unwrap());
        s3.allow_http = None;
        assert!(Storage::open(&location, &s3).is_ok());
    }

    #[tokio::test]
    async fn stores_and_reads_back_with_size_and_digest() {
        let dir = std::env::temp_dir().join(format!("storage-{}", uuid::Uuid::new_v4()));
        let storage = Storage::from_url(&format!("file://{}", dir.display())).unwrap();
        let key = StorageKey::new("contracts/abc.pdf").unwrap();
        let stored = storage.put(&key, Bytes::from_static(b"abc")).await.unwrap();
        assert_eq!(stored.bytes, 3);
        assert_eq!(stored.sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert!(dir.join("contracts/abc.pdf").is_file());
        assert_eq!(storage.get(&key).await.unwrap(), Bytes::from_static(b"abc"));
    }
}
