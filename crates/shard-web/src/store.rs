//! The durable security store `SHARD_HOME/security/store.json` (docs/protocol.md §4.1,
//! docs/architecture.md#browser-authentication): versioned, 0600 in a 0700 directory, hashes and metadata only.
//! A store or directory that others could read or write is refused at start: it would
//! mean someone else may have planted or read a session.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::error::WebError;
use crate::secret::{self, Digest32};

/// The on-disk format version.
pub const STORE_VERSION: u32 = 1;

/// One enrolled browser, as `shard web --list` shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PrincipalRecord {
    /// `brw-…`: the id `--revoke` takes.
    pub id: String,
    /// Enrollment time, Unix milliseconds.
    pub created_ms: u64,
    /// Last bootstrap, Unix milliseconds.
    pub last_seen_ms: u64,
    /// Its sessions (one per enrollment today).
    pub sessions: Vec<SessionRecord>,
}

/// One browser session: the SHA-256 of its cookie, never the cookie.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SessionRecord {
    /// `sess-…`-like id naming the session (bound into tickets).
    pub id: String,
    /// Hex SHA-256 of the cookie value.
    pub hash: String,
    /// Creation time, Unix milliseconds.
    pub created_ms: u64,
}

#[derive(Debug, Serialize, Deserialize)]
struct StoreFile {
    version: u32,
    principals: Vec<PrincipalRecord>,
}

struct Inner {
    principals: Vec<PrincipalRecord>,
    /// Bumped on every change; the writer skips snapshots older than what is on disk.
    seq: u64,
}

/// The store, in memory and on disk.
#[derive(Clone)]
pub struct SecurityStore {
    path: PathBuf,
    inner: Arc<Mutex<Inner>>,
    written: Arc<Mutex<u64>>,
}

/// A session found by its cookie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRef {
    /// The browser principal.
    pub principal_id: String,
    /// The session.
    pub session_id: String,
}

fn check_mode(path: &Path, meta: &std::fs::Metadata) -> Result<(), WebError> {
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 || meta.uid() != nix::unistd::getuid().as_raw() {
        return Err(WebError::StorePermissions {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

impl SecurityStore {
    /// Opens (or creates) the store under `home`. Blocking: call it before serving or
    /// from a blocking task.
    pub fn open(home: &Path) -> Result<Self, WebError> {
        let dir = home.join("security");
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) => {
                if !meta.is_dir() {
                    return Err(WebError::Config(format!(
                        "{} is not a directory",
                        dir.display()
                    )));
                }
                check_mode(&dir, &meta)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                use std::os::unix::fs::DirBuilderExt;
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(&dir)
                    .map_err(|e| WebError::io(format!("creating {}", dir.display()), e))?;
                std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
                    .map_err(|e| WebError::io(format!("chmod {}", dir.display()), e))?;
            }
            Err(e) => return Err(WebError::io(format!("reading {}", dir.display()), e)),
        }
        let path = dir.join("store.json");
        let principals = match std::fs::symlink_metadata(&path) {
            Ok(meta) => {
                check_mode(&path, &meta)?;
                let text = std::fs::read(&path)
                    .map_err(|e| WebError::io(format!("reading {}", path.display()), e))?;
                let file: StoreFile =
                    serde_json::from_slice(&text).map_err(|e| WebError::StoreCorrupt {
                        path: path.clone(),
                        message: e.to_string(),
                    })?;
                if file.version != STORE_VERSION {
                    return Err(WebError::StoreCorrupt {
                        path,
                        message: format!(
                            "version {} is not the supported {STORE_VERSION}",
                            file.version
                        ),
                    });
                }
                file.principals
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(WebError::io(format!("reading {}", path.display()), e)),
        };
        Ok(SecurityStore {
            path,
            inner: Arc::new(Mutex::new(Inner { principals, seq: 0 })),
            written: Arc::new(Mutex::new(0)),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new principal with one session whose cookie hashes to `cookie_hash`.
    pub async fn enroll(&self, cookie_hash: &Digest32) -> Result<SessionRef, WebError> {
        let now = shard_protocol::ids::now_millis();
        let principal_id = shard_protocol::ids::new_id("brw");
        let session_id = shard_protocol::ids::new_id("bss");
        let rec = PrincipalRecord {
            id: principal_id.clone(),
            created_ms: now,
            last_seen_ms: now,
            sessions: vec![SessionRecord {
                id: session_id.clone(),
                hash: secret::to_hex(cookie_hash),
                created_ms: now,
            }],
        };
        self.change(|i| i.principals.push(rec)).await?;
        Ok(SessionRef {
            principal_id,
            session_id,
        })
    }

    /// The session whose cookie is `cookie` (every kept hash compared in constant time).
    pub fn find_session(&self, cookie: &str) -> Option<SessionRef> {
        let presented = secret::hash(cookie);
        let inner = self.lock();
        let mut found = None;
        for p in &inner.principals {
            for s in &p.sessions {
                let Some(kept) = secret::from_hex(&s.hash) else {
                    continue;
                };
                let eq: bool = subtle::ConstantTimeEq::ct_eq(&presented[..], &kept[..]).into();
                if eq {
                    found = Some(SessionRef {
                        principal_id: p.id.clone(),
                        session_id: s.id.clone(),
                    });
                }
            }
        }
        found
    }

    /// True while the principal and session exist (checked again at upgrade, so a ticket
    /// minted before a revocation is worthless after it).
    pub fn session_live(&self, r: &SessionRef) -> bool {
        self.lock()
            .principals
            .iter()
            .any(|p| p.id == r.principal_id && p.sessions.iter().any(|s| s.id == r.session_id))
    }

    /// Records a use; persisted at most once a minute per principal.
    pub async fn touch(&self, principal_id: &str) -> Result<(), WebError> {
        let now = shard_protocol::ids::now_millis();
        let stale = self
            .lock()
            .principals
            .iter()
            .any(|p| p.id == principal_id && now.saturating_sub(p.last_seen_ms) > 60_000);
        if stale {
            self.change(|i| {
                if let Some(p) = i.principals.iter_mut().find(|p| p.id == principal_id) {
                    p.last_seen_ms = now;
                }
            })
            .await?;
        }
        Ok(())
    }

    /// Removes a principal; false when no such id. Persisted before it returns.
    pub async fn revoke(&self, principal_id: &str) -> Result<bool, WebError> {
        let exists = self.lock().principals.iter().any(|p| p.id == principal_id);
        if !exists {
            return Ok(false);
        }
        self.change(|i| i.principals.retain(|p| p.id != principal_id))
            .await?;
        Ok(true)
    }

    /// Every enrolled browser.
    pub fn list(&self) -> Vec<PrincipalRecord> {
        self.lock().principals.clone()
    }

    /// Applies a change and writes the store (atomically, 0600) before returning.
    async fn change(&self, f: impl FnOnce(&mut Inner)) -> Result<(), WebError> {
        let (seq, bytes) = {
            let mut inner = self.lock();
            f(&mut inner);
            inner.seq += 1;
            let file = StoreFile {
                version: STORE_VERSION,
                principals: inner.principals.clone(),
            };
            let bytes = serde_json::to_vec_pretty(&file)
                .map_err(|e| WebError::io("serializing the store", std::io::Error::other(e)))?;
            (inner.seq, bytes)
        };
        let path = self.path.clone();
        let written = Arc::clone(&self.written);
        tokio::task::spawn_blocking(move || {
            // Writes happen in sequence order: an older snapshot never overwrites a newer.
            let mut last = written.lock().unwrap_or_else(|p| p.into_inner());
            if *last >= seq {
                return Ok(());
            }
            write_atomic(&path, &bytes)?;
            *last = seq;
            Ok(())
        })
        .await
        .map_err(|e| WebError::io("store writer", std::io::Error::other(e)))?
    }
}

/// The project's one atomic replace (0600 temp file, fsync, rename, directory fsync), so
/// a revoke survives a power cut.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WebError> {
    shard_session::records::atomic_write(path, bytes).map_err(|e| {
        WebError::io(
            format!("writing {}", path.display()),
            std::io::Error::other(e),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keeps_hashes_only_and_survives_reopen() {
        let home = tempfile::tempdir().unwrap();
        let store = SecurityStore::open(home.path()).unwrap();
        let cookie = secret::new_secret().unwrap();
        let r = store.enroll(&secret::hash(&cookie)).await.unwrap();
        assert_eq!(store.find_session(&cookie), Some(r.clone()));
        assert_eq!(store.find_session("other"), None);
        let text = std::fs::read_to_string(home.path().join("security/store.json")).unwrap();
        assert!(!text.contains(&cookie));
        let meta = std::fs::metadata(home.path().join("security/store.json")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let meta = std::fs::metadata(home.path().join("security")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o700);
        let again = SecurityStore::open(home.path()).unwrap();
        assert_eq!(again.find_session(&cookie), Some(r.clone()));
        assert!(again.revoke(&r.principal_id).await.unwrap());
        assert!(!again.session_live(&r));
        assert!(!again.revoke(&r.principal_id).await.unwrap());
        let third = SecurityStore::open(home.path()).unwrap();
        assert_eq!(third.find_session(&cookie), None);
    }

    #[test]
    fn wider_permissions_are_refused() {
        let home = tempfile::tempdir().unwrap();
        SecurityStore::open(home.path()).unwrap();
        let file = home.path().join("security/store.json");
        std::fs::write(&file, r#"{"version":1,"principals":[]}"#).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = SecurityStore::open(home.path()).err().unwrap().to_string();
        assert!(e.contains("owner-only"), "{e}");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        SecurityStore::open(home.path()).unwrap();
        let dir = home.path().join("security");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = SecurityStore::open(home.path()).err().unwrap().to_string();
        assert!(e.contains("mode 755"), "{e}");
    }
}
