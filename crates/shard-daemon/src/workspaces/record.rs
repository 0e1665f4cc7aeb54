//! Durable workspace records (`SHARD_HOME/workspaces/<workspace_id>.json`,
//! docs/architecture.md#storage): written atomically before an operation answers, so a daemon restart finds every
//! workspace it created, and a branch tip recorded before a deletion survives a crash.
//! The record keeps the common-dir for the daemon's own checks; it never leaves the
//! daemon ([`WorkspaceRecord::info`] is the client projection).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use shard_protocol::ids;
use shard_protocol::orchestrator::BranchDisposition;
use shard_protocol::workspace::{WorkspaceInfo, WorkspaceLifecycle};

/// Format version of a record file of a workspace on this machine.
pub(crate) const RECORD_VERSION: u32 = 1;
/// Format version of a record of a workspace on a host: a daemon that predates hosts
/// skips it (unknown version) instead of running git on this machine for a path that is
/// the host's (docs/decisions.md, "Workspaces on hosts").
pub(crate) const HOST_RECORD_VERSION: u32 = 2;

/// The format version a record with this `host` is written with.
pub(crate) fn version_for(host: Option<&str>) -> u32 {
    if host.is_some() {
        HOST_RECORD_VERSION
    } else {
        RECORD_VERSION
    }
}

/// One workspace as the daemon remembers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WorkspaceRecord {
    pub version: u32,
    pub workspace_id: String,
    #[serde(default)]
    pub label: Option<String>,
    /// The worktree directory the daemon created.
    pub cwd: String,
    /// The repository's main checkout.
    pub repository_cwd: String,
    /// The repository's common git dir (private: never in a response or event).
    pub common_dir: String,
    /// Short branch name (`refs/heads/` + this).
    pub branch: String,
    /// The base ref as asked for (`HEAD` by default).
    pub base_ref: String,
    /// The commit the branch started at.
    pub base_sha: String,
    /// Full ref of the integration target (`refs/heads/main`); absent when the main
    /// checkout was on a detached HEAD and none was given.
    #[serde(default)]
    pub integration_target: Option<String>,
    pub lifecycle: WorkspaceLifecycle,
    #[serde(default)]
    pub agent_ids: Vec<String>,
    pub created_at: u64,
    #[serde(default)]
    pub retired_at: Option<u64>,
    /// The branch tip recorded before any deletion, so `git branch NAME SHA` restores it.
    #[serde(default)]
    pub recorded_tip: Option<String>,
    #[serde(default)]
    pub branch_deleted: bool,
    #[serde(default)]
    pub disposition: Option<BranchDisposition>,
    /// The `[hosts.NAME]` its repository and worktree are on (`None`: this machine);
    /// every git of the workspace runs there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl WorkspaceRecord {
    /// The transport-safe projection (docs/protocol.md §10.1a): no common-dir or git-dir path.
    pub fn info(&self) -> WorkspaceInfo {
        WorkspaceInfo {
            workspace_id: self.workspace_id.clone(),
            label: self.label.clone(),
            cwd: self.cwd.clone(),
            repository_cwd: Some(self.repository_cwd.clone()),
            branch: self.branch.clone(),
            base_ref: Some(self.base_ref.clone()),
            integration_target: self
                .integration_target
                .as_deref()
                .map(|t| super::git::short_ref(t).to_string()),
            lifecycle: self.lifecycle,
            agent_ids: self.agent_ids.clone(),
            created_at: self.created_at,
            retired_at: self.retired_at,
            host: self.host.clone(),
        }
    }

    /// The command that restores a deleted branch, run in the main checkout.
    pub fn restore_hint(&self) -> Option<String> {
        self.recorded_tip
            .as_ref()
            .map(|sha| format!("git branch {} {sha}", self.branch))
    }
}

/// Where records live and how they are read and written.
#[derive(Debug, Clone)]
pub(crate) struct RecordStore {
    dir: PathBuf,
}

impl RecordStore {
    pub fn new(home: &Path) -> Self {
        RecordStore {
            dir: home.join("workspaces"),
        }
    }

    /// The default root of worktrees (`SHARD_HOME/workspaces`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes one record atomically (temp file, fsync, rename), owner-only.
    pub async fn save(&self, rec: &WorkspaceRecord) -> std::io::Result<()> {
        if !ids::is_valid(ids::WORKSPACE, &rec.workspace_id) {
            return Err(std::io::Error::other("invalid workspace id"));
        }
        let bytes = serde_json::to_vec_pretty(rec).map_err(std::io::Error::other)?;
        let dir = self.dir.clone();
        let path = dir.join(format!("{}.json", rec.workspace_id));
        crate::fsutil::save_record(dir, path, bytes).await
    }

    /// Removes the record of a workspace whose creation was rolled back.
    pub async fn remove(&self, workspace_id: &str) -> std::io::Result<()> {
        if !ids::is_valid(ids::WORKSPACE, workspace_id) {
            return Err(std::io::Error::other("invalid workspace id"));
        }
        match tokio::fs::remove_file(self.dir.join(format!("{workspace_id}.json"))).await {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Every readable record. A record that cannot be parsed is logged and skipped, never
    /// deleted: it still names a worktree and a branch the user may need.
    pub async fn load_all(&self) -> std::io::Result<Vec<WorkspaceRecord>> {
        let dir = self.dir.clone();
        let records = tokio::task::spawn_blocking(move || {
            crate::fsutil::load_records::<WorkspaceRecord>(&dir)
        })
        .await
        .map_err(std::io::Error::other)??;
        Ok(records
            .into_iter()
            .filter(|r| {
                if r.version == version_for(r.host.as_deref()) {
                    return true;
                }
                tracing::error!(
                    workspace_id = %r.workspace_id,
                    version = r.version,
                    "workspace record has an unknown version; skipped"
                );
                false
            })
            .collect())
    }
}

impl crate::fsutil::StoredRecord for WorkspaceRecord {
    const ID_KIND: &'static str = ids::WORKSPACE;
    const WHAT: &'static str = "workspace record";
    fn id(&self) -> &str {
        &self.workspace_id
    }
    fn created_at(&self) -> u64 {
        self.created_at
    }
}
