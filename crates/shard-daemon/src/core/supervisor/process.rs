//! The process plumbing of a Runtime generation: its token, its stdin writer, signals,
//! and the wait for its session's lock to be free.

use std::time::{Duration, Instant};

use bytes::Bytes;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

/// Readiness of a Runtime the caller is waiting for.
pub(crate) type ReadyRx = oneshot::Receiver<Result<(), String>>;

pub(super) fn new_token() -> String {
    let mut b = [0u8; 32];
    if getrandom::fill(&mut b).is_err() {
        // Without entropy the token still differs per Runtime; it only guards calls back.
        let a = shard_protocol::ids::new_id("t");
        return a;
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Waits (bounded by the ready timeout) until no process holds the session's lock.
pub(super) async fn wait_session_free(
    cfg: &crate::config::DaemonConfig,
    session_id: &str,
) -> Result<(), String> {
    let Ok(dir) = shard_session::SessionStore::new(&cfg.home).session_dir(session_id) else {
        return Ok(());
    };
    let lock = dir.join(shard_session::LOCK_FILE);
    let deadline = Instant::now() + cfg.ready_timeout;
    let mut backoff = Duration::from_millis(5);
    loop {
        let path = lock.clone();
        let holder = tokio::task::spawn_blocking(move || lock_holder(&path))
            .await
            .unwrap_or(None);
        let Some(holder) = holder else {
            return Ok(());
        };
        if Instant::now() >= deadline {
            return Err(format!(
                "session {session_id} is still in use by {holder} after {} s",
                cfg.ready_timeout.as_secs()
            ));
        }
        tracing::info!(session_id, %holder, "waiting for the session to be released");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_millis(200));
    }
}

/// Who holds a session lock (`None`: nobody, or no lock file).
fn lock_holder(path: &std::path::Path) -> Option<String> {
    let f = std::fs::File::open(path).ok()?;
    match f.try_lock() {
        Ok(()) => None,
        Err(std::fs::TryLockError::WouldBlock) => {
            let pid = std::fs::read_to_string(path).unwrap_or_default();
            Some(if pid.trim().is_empty() {
                "another process".into()
            } else {
                format!("pid {}", pid.trim())
            })
        }
        Err(std::fs::TryLockError::Error(_)) => None,
    }
}

pub(super) async fn write_stdin(
    mut stdin: std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>,
    mut rx: mpsc::UnboundedReceiver<Bytes>,
) {
    while let Some(first) = rx.recv().await {
        let mut buf = first.to_vec();
        while let Ok(more) = rx.try_recv() {
            buf.extend_from_slice(&more);
        }
        if stdin.write_all(&buf).await.is_err() || stdin.flush().await.is_err() {
            break;
        }
    }
    let _ = stdin.shutdown().await;
}

pub(super) fn signal(pid: Option<u32>, sig: Signal) {
    if let Some(p) = pid.and_then(|p| i32::try_from(p).ok()) {
        let _ = kill(Pid::from_raw(p), sig);
    }
}
