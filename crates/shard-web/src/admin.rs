//! The owner-only admin socket `SHARD_HOME/security/admin.sock` that `shard web` uses to
//! mint an enrollment code, list browsers and revoke one. It lives inside the daemon
//! because the pending codes and the live sockets do: a revocation closes them at once.
//! Peers must be the same user and must not descend from an agent's Runtime.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use shard_daemon::ShutdownHandle;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use crate::door::Door;
use crate::error::WebError;
use crate::store::PrincipalRecord;

/// The admin socket's path under `SHARD_HOME`.
pub fn socket_path(home: &Path) -> PathBuf {
    home.join("security").join("admin.sock")
}

/// One request of `shard web`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum AdminRequest {
    /// A fresh enrollment URL.
    Enroll,
    /// Every enrolled browser.
    List,
    /// Revoke one browser.
    Revoke {
        /// Its `principal_id`.
        id: String,
    },
}

/// The answer.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum AdminReply {
    /// The enrollment URL (`…/enroll#CODE`).
    Enroll {
        /// The URL to open.
        url: String,
    },
    /// The browsers.
    List {
        /// One record each.
        principals: Vec<PrincipalRecord>,
    },
    /// The browser was revoked and its sockets closed.
    Revoked,
    /// Refused or failed.
    Error {
        /// Why.
        message: String,
    },
}

/// Binds the admin socket (0600, in the 0700 security directory).
pub(crate) fn bind(home: &Path) -> Result<UnixListener, WebError> {
    let path = socket_path(home);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(WebError::io(format!("removing {}", path.display()), e)),
    }
    let l = UnixListener::bind(&path)
        .map_err(|e| WebError::io(format!("binding {}", path.display()), e))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| WebError::io(format!("chmod {}", path.display()), e))?;
    Ok(l)
}

/// Serves the admin socket until the daemon stops.
pub(crate) async fn serve(listener: UnixListener, door: Arc<Door>, daemon: ShutdownHandle) {
    let uid = nix::unistd::getuid().as_raw();
    loop {
        let stream = tokio::select! {
            _ = door.stop.cancelled() => break,
            s = listener.accept() => match s {
                Ok((s, _)) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "admin accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let door = Arc::clone(&door);
        let daemon = daemon.clone();
        tokio::spawn(async move {
            if let Err(e) = one(stream, uid, &door, &daemon).await {
                tracing::debug!(error = %e, "admin connection failed");
            }
        });
    }
}

async fn one(
    stream: UnixStream,
    uid: u32,
    door: &Door,
    daemon: &ShutdownHandle,
) -> std::io::Result<()> {
    let cred = stream.peer_cred()?;
    let (r, mut w) = stream.into_split();
    let reply = if cred.uid() != uid {
        AdminReply::Error {
            message: "another user's process".into(),
        }
    } else {
        let verdict = match cred.pid().and_then(|p| u32::try_from(p).ok()) {
            Some(pid) => daemon.check_peer(pid).await,
            None => Err("no peer pid".to_string()),
        };
        match verdict {
            Err(why) => {
                tracing::warn!(%why, "admin connection refused");
                AdminReply::Error { message: why }
            }
            Ok(()) => {
                let mut line = String::new();
                let mut r = BufReader::new(r).take(64 * 1024);
                r.read_line(&mut line).await?;
                match serde_json::from_str::<AdminRequest>(&line) {
                    Ok(req) => handle(req, door).await,
                    Err(e) => AdminReply::Error {
                        message: format!("bad request: {e}"),
                    },
                }
            }
        }
    };
    let mut out = serde_json::to_vec(&reply).map_err(std::io::Error::other)?;
    out.push(b'\n');
    w.write_all(&out).await?;
    w.shutdown().await
}

async fn handle(req: AdminRequest, door: &Door) -> AdminReply {
    match req {
        AdminRequest::Enroll => match door.new_code() {
            Ok(code) => {
                tracing::info!("enrollment code issued");
                AdminReply::Enroll {
                    url: format!("{}/enroll#{code}", door.public_url),
                }
            }
            Err(e) => AdminReply::Error {
                message: e.to_string(),
            },
        },
        AdminRequest::List => AdminReply::List {
            principals: door.store.list(),
        },
        AdminRequest::Revoke { id } => match door.revoke(&id).await {
            Ok(true) => {
                tracing::info!(principal_id = %id, "browser revoked");
                AdminReply::Revoked
            }
            Ok(false) => AdminReply::Error {
                message: format!("no enrolled browser {id}"),
            },
            Err(e) => AdminReply::Error {
                message: e.to_string(),
            },
        },
    }
}

/// The `web_error` of `SHARD_HOME/daemon.json`, when a running daemon wrote one (a
/// file left by a daemon that died is ignored: its socket no longer answers).
async fn doorless_reason(home: &Path) -> Option<String> {
    UnixStream::connect(home.join("daemon.sock")).await.ok()?;
    let text = tokio::fs::read_to_string(home.join("daemon.json"))
        .await
        .ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("web_error")?.as_str().map(str::to_string)
}

/// Sends one request to a running daemon (the client side, for `shard web`).
pub async fn request(home: &Path, req: &AdminRequest) -> Result<AdminReply, WebError> {
    let path = socket_path(home);
    let stream = match UnixStream::connect(&path).await {
        Ok(s) => s,
        Err(e) => {
            // A daemon that could bind no port runs without the door and says why in
            // daemon.json.
            if let Some(why) = doorless_reason(home).await {
                return Err(WebError::Admin(format!(
                    "the daemon runs without its web door: {why}"
                )));
            }
            return Err(WebError::Admin(format!(
                "no daemon with a web door at {} ({e}); start one with `shard daemon`",
                path.display()
            )));
        }
    };
    let (r, mut w) = stream.into_split();
    let mut out = serde_json::to_vec(req).map_err(|e| WebError::Admin(e.to_string()))?;
    out.push(b'\n');
    w.write_all(&out)
        .await
        .map_err(|e| WebError::io("writing to the daemon", e))?;
    let mut line = String::new();
    BufReader::new(r)
        .read_line(&mut line)
        .await
        .map_err(|e| WebError::io("reading from the daemon", e))?;
    match serde_json::from_str::<AdminReply>(&line) {
        Ok(AdminReply::Error { message }) => Err(WebError::Admin(message)),
        Ok(r) => Ok(r),
        Err(_) => Err(WebError::Admin(
            "the daemon closed the admin socket without an answer".into(),
        )),
    }
}
