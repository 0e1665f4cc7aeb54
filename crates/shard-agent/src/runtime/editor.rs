//! The editor's files: after a client's `client_files`, the file tools ask that client for
//! a file's text or to write it (`file_request`) and wait for its `file_response`. The
//! offer and the requests in flight live here, shared by the actor (which answers them)
//! and the tool tasks (which wait); nothing here awaits under the lock.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use shard_protocol::Event;
use shard_protocol::event::{FileOp, FileRequest};
use shard_protocol::ids;
use tokio::sync::{mpsc, oneshot};

/// How long a file tool waits for the editor. A read that times out falls back to the
/// disk (the editor may have gone); a write fails, since it may still land.
const EDITOR_WAIT: Duration = Duration::from_secs(30);

type Answer = Result<Option<String>, String>;

/// The editor client's file offer and its requests in flight.
#[derive(Debug)]
pub(crate) struct EditorBridge {
    read: AtomicBool,
    write: AtomicBool,
    pending: Mutex<HashMap<String, oneshot::Sender<Answer>>>,
    events: mpsc::Sender<Event>,
}

impl EditorBridge {
    pub(crate) fn new(events: mpsc::Sender<Event>) -> Arc<Self> {
        Arc::new(EditorBridge {
            read: AtomicBool::new(false),
            write: AtomicBool::new(false),
            pending: Mutex::default(),
            events,
        })
    }

    /// `client_files`: what the client serves from now on.
    pub(crate) fn offer(&self, read: bool, write: bool) {
        self.read.store(read, Ordering::SeqCst);
        self.write.store(write, Ordering::SeqCst);
    }

    /// True when the client serves reads or writes.
    pub(crate) fn offered(&self) -> bool {
        self.read.load(Ordering::SeqCst) || self.write.load(Ordering::SeqCst)
    }

    /// `file_response`: completes the waiting tool (a late or unknown id is ignored).
    pub(crate) fn answer(&self, request_id: &str, content: Option<String>, error: Option<String>) {
        let tx = self
            .pending
            .lock()
            .ok()
            .and_then(|mut p| p.remove(request_id));
        if let Some(tx) = tx {
            let _ = tx.send(match error {
                Some(e) => Err(e),
                None => Ok(content),
            });
        }
    }

    async fn ask(&self, op: FileOp, path: &Path, content: Option<String>) -> Option<Answer> {
        let request_id = ids::new_id(ids::REQUEST);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(request_id.clone(), tx);
        }
        let event = Event::FileRequest(Box::new(FileRequest {
            agent_id: None,
            request_id: request_id.clone(),
            op,
            path: path.display().to_string(),
            content,
        }));
        if self.events.send(event).await.is_err() {
            return None;
        }
        let answer = tokio::time::timeout(EDITOR_WAIT, rx).await;
        if let Ok(mut p) = self.pending.lock() {
            p.remove(&request_id);
        }
        match answer {
            Ok(Ok(a)) => Some(a),
            _ => None,
        }
    }
}

impl shard_tools::EditorFiles for EditorBridge {
    fn read<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Option<Result<String, String>>> {
        async move {
            if !self.read.load(Ordering::SeqCst) {
                return None;
            }
            match self.ask(FileOp::Read, path, None).await? {
                Ok(text) => Some(Ok(text.unwrap_or_default())),
                Err(e) => Some(Err(e)),
            }
        }
        .boxed()
    }

    fn write<'a>(
        &'a self,
        path: &'a Path,
        content: String,
    ) -> BoxFuture<'a, Option<Result<(), String>>> {
        async move {
            if !self.write.load(Ordering::SeqCst) {
                return None;
            }
            match self.ask(FileOp::Write, path, Some(content)).await {
                Some(Ok(_)) => Some(Ok(())),
                Some(Err(e)) => Some(Err(e)),
                None => Some(Err(format!(
                    "the editor did not confirm the write within {} s",
                    EDITOR_WAIT.as_secs()
                ))),
            }
        }
        .boxed()
    }
}
