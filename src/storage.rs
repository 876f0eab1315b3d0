//! File storage (contract PDFs, mail copies) through object_store: a folder by default
//! (`STORAGE_URL=file://./var/storage`). Keys are checked before use, so that an identifier
//! taken from a URL can never name a file outside its folder.

use std::sync::Arc;

use bytes::Bytes;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

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

/// What was stored: its key, size and SHA-256 (hex).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFile {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

#[derive(Clone)]
pub struct Storage {
    store: Arc<dyn ObjectStore>,
}

impl Storage {
    pub fn from_url(url: &str) -> Result<Storage, StorageError> {
        let Some(folder) = url.strip_prefix("file://") else {
            return Err(StorageError::Config(format!("{url:?}: only file:// storage is built in so far")));
        };
        std::fs::create_dir_all(folder).map_err(|e| StorageError::Config(format!("cannot create {folder}: {e}")))?;
        let store = LocalFileSystem::new_with_prefix(folder).map_err(|e| StorageError::Config(e.to_string()))?;
        Ok(Storage { store: Arc::new(store) })
    }

    pub async fn put(&self, key: &StorageKey, content: Bytes) -> Result<StoredFile, StorageError> {
        let sha256 = crate::digest::sha256_hex(&content);
        let bytes = content.len() as u64;
        self.store
            .put(&ObjectPath::from(key.as_str()), PutPayload::from_bytes(content))
            .await
            .map_err(|e| StorageError::Io(e.to_string()))?;
        Ok(StoredFile { path: key.as_str().to_string(), bytes, sha256 })
    }

    pub async fn get(&self, key: &StorageKey) -> Result<Bytes, StorageError> {
        let result =
            self.store.get(&ObjectPath::from(key.as_str())).await.map_err(|e| StorageError::Io(e.to_string()))?;
        result.bytes().await.map_err(|e| StorageError::Io(e.to_string()))
    }
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
