//! Workspaces (docs/protocol.md §10.1a, docs/workspaces.md): one agent, one git worktree
//! the daemon created and owns, retired without ever losing a commit.
//!
//! A service on top of the daemon's core (it creates agents and reads their state through
//! the core's API; the core never imports it). [`Workspaces`] owns the durable records in
//! memory and marks which workspace has an operation in flight (a second one is refused as
//! `busy`, so no lock is ever held across the git calls). Every git call goes through a
//! [`site::Site`]: [`git`] (the user's own `git`, as a child process) on this machine, or
//! the same git run on the workspace's host over the host's link (docs/hosts.md).
//! `create` launches worktrees and agents, `status` reads git, `retire` proves before it
//! deletes. Responses and events carry [`record::WorkspaceRecord::info`] only: the
//! common-dir never leaves the daemon, and git's messages are redacted.

mod create;
mod git;
pub(crate) mod handlers;
mod porcelain;
mod record;
mod retire;
mod site;
mod status;

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use shard_protocol::orchestrator::{BranchDisposition, WorkspaceConflict};
use shard_protocol::workspace::{WorkspaceConflictData, WorkspaceConflictKind};
use shard_protocol::{ErrorCode, Event};

use crate::core::Shared;
use crate::reply::ProtocolError;
use record::RecordStore;
pub(crate) use record::WorkspaceRecord;

/// The daemon's workspaces: durable records and the operations in flight, on top of the
/// registry (`core`).
pub(crate) struct Workspaces {
    /// The registry below.
    core: Arc<Shared>,
    store: RecordStore,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    records: BTreeMap<String, WorkspaceRecord>,
    in_flight: HashSet<String>,
}

impl Workspaces {
    /// The service over `SHARD_HOME/workspaces`, on top of `core`.
    pub fn new(core: Arc<Shared>) -> Self {
        Workspaces {
            store: RecordStore::new(&core.cfg.home),
            core,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Where git runs for a workspace on `host` (`None`: this machine).
    fn site(&self, host: Option<&str>) -> site::Site {
        match host {
            None => site::Site::Local,
            Some(name) => site::Site::Host {
                name: name.to_string(),
                launcher: Arc::clone(&self.core.launcher),
                home: self
                    .core
                    .cfg
                    .hosts
                    .get(name)
                    .and_then(|h| h.home.clone())
                    .unwrap_or_else(|| "~/.shard".to_string()),
            },
        }
    }

    /// Reads the records written by earlier daemons (at startup).
    pub async fn load(&self) -> std::io::Result<()> {
        let records = self.store.load_all().await?;
        let mut inner = self.lock();
        for r in records {
            inner.records.insert(r.workspace_id.clone(), r);
        }
        Ok(())
    }

    fn get(&self, id: &str) -> Option<WorkspaceRecord> {
        self.lock().records.get(id).cloned()
    }

    fn all(&self) -> Vec<WorkspaceRecord> {
        self.lock().records.values().cloned().collect()
    }

    fn put(&self, rec: WorkspaceRecord) {
        self.lock().records.insert(rec.workspace_id.clone(), rec);
    }

    fn forget(&self, id: &str) {
        self.lock().records.remove(id);
    }

    /// Marks `id` as having an operation in flight; false when one already is.
    fn claim(&self, id: &str) -> bool {
        self.lock().in_flight.insert(id.to_string())
    }

    /// Ends the operation [`Self::claim`] marked.
    fn release(&self, id: &str) {
        self.lock().in_flight.remove(id);
    }

    /// Writes `rec` durably, then makes it the in-memory copy.
    async fn commit(&self, rec: &WorkspaceRecord) -> Result<(), ProtocolError> {
        self.store.save(rec).await.map_err(|e| {
            ProtocolError::new(
                ErrorCode::InternalError,
                format!("could not record the workspace: {e}"),
            )
        })?;
        self.put(rec.clone());
        Ok(())
    }
}

/// Marks one workspace as having an operation in flight until dropped.
struct OpGuard {
    ws: Arc<Workspaces>,
    id: String,
}

impl Drop for OpGuard {
    fn drop(&mut self) {
        self.ws.release(&self.id);
    }
}

/// Claims `id` for one operation; a second concurrent one is refused as `busy`.
fn begin(ws: &Arc<Workspaces>, id: &str) -> Result<OpGuard, ProtocolError> {
    if !ws.claim(id) {
        return Err(conflict(
            ws,
            WorkspaceConflictKind::Busy,
            id,
            "another operation on this workspace is running",
            None,
        ));
    }
    Ok(OpGuard {
        ws: Arc::clone(ws),
        id: id.to_string(),
    })
}

/// A typed refusal (`CONFLICT` with [`WorkspaceConflictData`]), also announced to every
/// client as `workspace_conflict`.
fn conflict(
    ws: &Workspaces,
    kind: WorkspaceConflictKind,
    workspace_id: &str,
    reason: &str,
    confirm: Option<BranchDisposition>,
) -> ProtocolError {
    ws.core
        .broadcast_event(&Event::WorkspaceConflict(WorkspaceConflict {
            workspace_id: workspace_id.to_string(),
            reason: reason.to_string(),
        }));
    let data = WorkspaceConflictData {
        kind,
        workspace_id: workspace_id.to_string(),
        reason: reason.to_string(),
        confirmation_disposition: confirm,
    };
    ProtocolError::new(ErrorCode::Conflict, reason.to_string())
        .with_data(serde_json::to_value(data).ok())
}

fn invalid(msg: impl Into<String>) -> ProtocolError {
    ProtocolError::new(ErrorCode::InvalidRequest, msg)
}

fn not_found() -> ProtocolError {
    ProtocolError::new(ErrorCode::NotFound, "no such workspace")
}

/// Removes the repository's private paths from a git message before it reaches a client.
fn redact(msg: &str, common_dir: &str) -> String {
    if common_dir.is_empty() {
        return msg.to_string();
    }
    msg.replace(common_dir, "<git-dir>")
}

/// Only protocol version 1 of these commands exists (`version?: 1`).
fn check_version(v: Option<u32>) -> Result<(), ProtocolError> {
    match v {
        None | Some(1) => Ok(()),
        Some(n) => Err(invalid(format!(
            "workspace command version {n} is not supported (this daemon speaks 1)"
        ))),
    }
}
