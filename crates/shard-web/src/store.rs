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

/// One browser session: the SHA-256 of its cookie and of its session key, never either
/// secret, and the Origin it enrolled from. Cookies are not scoped by port, so the cookie
/// alone proves nothing: the key lives in that Origin's own storage (docs/web.md).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SessionRecord {
    /// `sess-…`-like id naming the session (bound into tickets).
    pub id: String,
    /// Hex SHA-256 of the cookie value.
    pub hash: String,
    /// Hex SHA-256 of the session key. Absent in sessions enrolled before keys existed:
    /// such a session mints nothing and is dropped when the door starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_hash: Option<String>,
    /// The exact Origin the session enrolled from; `/bootstrap` must come from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// Creation time, Unix milliseconds.
    pub created_ms: u64,
}

/// What a new session is bound to: the hashes of its two secrets and its Origin.
#[derive(Debug, Clone, Copy)]
pub struct NewSession<'a> {
    /// SHA-256 of the cookie value.
    pub cookie_hash: &'a Digest32,
    /// SHA-256 of the session key the page keeps in its Origin's storage.
    pub key_hash: &'a Digest32,
    /// The exact Origin of the enrollment request.
    pub origin: &'a str,
}

/// Why a bootstrap's credentials were refused (all `401`; the reason goes to the log only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionRefusal {
    /// No session has this cookie (never enrolled, or revoked).
    UnknownCookie,
    /// The session has no key (enrolled before keys existed): it must re-enroll.
    NoKeyKept,
    /// No key, a malformed one, or another session's.
    WrongKey,
    /// The request's Origin is not the one the session enrolled from.
    OtherOrigin,
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

    /// A new principal with one session bound to `new`'s cookie, key and Origin.
    pub async fn enroll(&self, new: NewSession<'_>) -> Result<SessionRef, WebError> {
        let now = shard_protocol::ids::now_millis();
        let principal_id = shard_protocol::ids::new_id("brw");
        let session_id = shard_protocol::ids::new_id("bss");
        let rec = PrincipalRecord {
            id: principal_id.clone(),
            created_ms: now,
            last_seen_ms: now,
            sessions: vec![SessionRecord {
                id: session_id.clone(),
                hash: secret::to_hex(new.cookie_hash),
                key_hash: Some(secret::to_hex(new.key_hash)),
                origin: Some(new.origin.to_string()),
                created_ms: now,
            }],
        };
        self.change(|i| i.principals.push(rec)).await?;
        Ok(SessionRef {
            principal_id,
            session_id,
        })
    }

    /// The session a bootstrap may use: its cookie, its key (a header the page reads from
    /// its Origin's storage) and the Origin it enrolled from must all match. The cookie
    /// alone, as any server on another port of the host receives it, is never enough.
    /// Every kept hash is compared in constant time.
    pub fn authenticate(
        &self,
        cookie: &str,
        key: Option<&str>,
        origin: &str,
    ) -> Result<SessionRef, SessionRefusal> {
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
                    found = Some((p, s));
                }
            }
        }
        let (p, s) = found.ok_or(SessionRefusal::UnknownCookie)?;
        let kept_key = s
            .key_hash
            .as_deref()
            .and_then(secret::from_hex)
            .ok_or(SessionRefusal::NoKeyKept)?;
        let key_ok = key.is_some_and(|k| secret::well_formed(k) && secret::matches(k, &kept_key));
        if !key_ok {
            return Err(SessionRefusal::WrongKey);
        }
        let same_origin = s.origin.as_deref().is_some_and(|o| {
            bool::from(subtle::ConstantTimeEq::ct_eq(
                o.as_bytes(),
                origin.as_bytes(),
            ))
        });
        if !same_origin {
            return Err(SessionRefusal::OtherOrigin);
        }
        Ok(SessionRef {
            principal_id: p.id.clone(),
            session_id: s.id.clone(),
        })
    }

    /// Drops every session that can no longer mint a ticket here: one without a key
    /// (enrolled before keys existed) or bound to an Origin the door does not serve now
    /// (the door moved to another port, or remote mode's origins changed). A page that
    /// served on the old Origin meanwhile may have read that Origin's key; should the door
    /// come back there, the key must already be worthless. Principals left without a
    /// session go too. Returns how many sessions were dropped.
    pub async fn prune(&self, origins: &[String]) -> Result<usize, WebError> {
        let keep = |s: &SessionRecord| {
            s.key_hash.is_some() && s.origin.as_ref().is_some_and(|o| origins.contains(o))
        };
        let stale = self
            .lock()
            .principals
            .iter()
            .flat_map(|p| &p.sessions)
            .filter(|s| !keep(s))
            .count();
        if stale == 0 {
            return Ok(0);
        }
        self.change(|i| {
            for p in &mut i.principals {
                p.sessions.retain(|s| keep(s));
            }
            i.principals.retain(|p| !p.sessions.is_empty());
        })
        .await?;
        Ok(stale)
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

    const ORIGIN: &str = "http://127.0.0.1:7420";

    /// A fresh session's cookie and key, enrolled from `origin`.
    async fn enrolled(store: &SecurityStore, origin: &str) -> (String, String, SessionRef) {
        let cookie = secret::new_secret().unwrap();
        let key = secret::new_secret().unwrap();
        let r = store
            .enroll(NewSession {
                cookie_hash: &secret::hash(&cookie),
                key_hash: &secret::hash(&key),
                origin,
            })
            .await
            .unwrap();
        (cookie, key, r)
    }

    #[tokio::test]
    async fn keeps_hashes_only_and_survives_reopen() {
        let home = tempfile::tempdir().unwrap();
        let store = SecurityStore::open(home.path()).unwrap();
        let (cookie, key, r) = enrolled(&store, ORIGIN).await;
        assert_eq!(
            store.authenticate(&cookie, Some(&key), ORIGIN),
            Ok(r.clone())
        );
        assert_eq!(
            store.authenticate("other", Some(&key), ORIGIN),
            Err(SessionRefusal::UnknownCookie)
        );
        let text = std::fs::read_to_string(home.path().join("security/store.json")).unwrap();
        assert!(!text.contains(&cookie) && !text.contains(&key));
        let meta = std::fs::metadata(home.path().join("security/store.json")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let meta = std::fs::metadata(home.path().join("security")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o700);
        let again = SecurityStore::open(home.path()).unwrap();
        assert_eq!(
            again.authenticate(&cookie, Some(&key), ORIGIN),
            Ok(r.clone())
        );
        assert!(again.revoke(&r.principal_id).await.unwrap());
        assert!(!again.session_live(&r));
        assert!(!again.revoke(&r.principal_id).await.unwrap());
        let third = SecurityStore::open(home.path()).unwrap();
        assert_eq!(
            third.authenticate(&cookie, Some(&key), ORIGIN),
            Err(SessionRefusal::UnknownCookie)
        );
    }

    #[tokio::test]
    async fn the_cookie_alone_authenticates_nothing() {
        let home = tempfile::tempdir().unwrap();
        let store = SecurityStore::open(home.path()).unwrap();
        let (cookie, key, _) = enrolled(&store, ORIGIN).await;
        let (_, other_key, _) = enrolled(&store, ORIGIN).await;
        for wrong in [
            None,
            Some(""),
            Some("garbled"),
            Some(other_key.as_str()),
            Some(&key[..63]),
            Some(&*key.to_uppercase()),
            Some(cookie.as_str()),
        ] {
            assert_eq!(
                store.authenticate(&cookie, wrong, ORIGIN),
                Err(SessionRefusal::WrongKey),
                "{wrong:?}"
            );
        }
        // The key as a cookie (the secret alone) is no session.
        assert_eq!(
            store.authenticate(&key, Some(&key), ORIGIN),
            Err(SessionRefusal::UnknownCookie)
        );
        // Right secrets, another Origin: another port of the same host included.
        for o in ["http://127.0.0.1:7421", "http://localhost:7420", "null", ""] {
            assert_eq!(
                store.authenticate(&cookie, Some(&key), o),
                Err(SessionRefusal::OtherOrigin),
                "{o}"
            );
        }
    }

    #[tokio::test]
    async fn sessions_without_a_key_or_for_another_origin_are_refused_and_pruned() {
        let home = tempfile::tempdir().unwrap();
        let cookie = secret::new_secret().unwrap();
        // A store written before session keys: the session has a cookie hash only.
        let old = serde_json::json!({"version": 1, "principals": [{
            "id": "brw-old", "created_ms": 1, "last_seen_ms": 1,
            "sessions": [{"id": "bss-old", "hash": secret::to_hex(&secret::hash(&cookie)), "created_ms": 1}]
        }]});
        let dir = home.path().join("security");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        write_atomic(&dir.join("store.json"), old.to_string().as_bytes()).unwrap();
        let store = SecurityStore::open(home.path()).unwrap();
        let any = secret::new_secret().unwrap();
        assert_eq!(
            store.authenticate(&cookie, Some(&any), ORIGIN),
            Err(SessionRefusal::NoKeyKept)
        );
        let (c2, k2, _) = enrolled(&store, ORIGIN).await;
        let (c3, k3, _) = enrolled(&store, "http://127.0.0.1:7421").await;
        // The door comes up on 7421: the keyless session and 7420's go, 7421's stays.
        assert_eq!(
            store
                .prune(&["http://127.0.0.1:7421".into()])
                .await
                .unwrap(),
            2
        );
        assert_eq!(store.list().len(), 1);
        let again = SecurityStore::open(home.path()).unwrap();
        assert_eq!(
            again.authenticate(&c2, Some(&k2), ORIGIN),
            Err(SessionRefusal::UnknownCookie)
        );
        assert!(
            again
                .authenticate(&c3, Some(&k3), "http://127.0.0.1:7421")
                .is_ok()
        );
        assert_eq!(
            again
                .prune(&["http://127.0.0.1:7421".into()])
                .await
                .unwrap(),
            0
        );
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
