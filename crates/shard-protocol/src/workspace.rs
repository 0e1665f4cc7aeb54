//! The transport-safe workspace projection (docs/protocol.md §10.1a). The spec names it without
//! defining it; this shape is pinned in `docs/decisions.md`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Lifecycle of a workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkspaceLifecycle {
    /// In use.
    Active,
    /// Retired; the worktree is gone.
    Retired,
}

/// A workspace as clients see it: no common-dir or git-dir paths.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceInfo {
    /// Opaque id.
    pub workspace_id: String,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The worktree directory.
    pub cwd: String,
    /// The original project's main checkout root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository_cwd: Option<String>,
    /// Branch.
    pub branch: String,
    /// Base ref.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_ref: Option<String>,
    /// Integration target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integration_target: Option<String>,
    /// Lifecycle.
    pub lifecycle: WorkspaceLifecycle,
    /// Agents launched in it.
    #[serde(default)]
    pub agent_ids: Vec<String>,
    /// Creation, ms since the epoch.
    pub created_at: u64,
    /// Retirement, ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired_at: Option<u64>,
    /// Additive: the `[hosts.NAME]` the repository and worktree are on, where the
    /// workspace's git and agents run; `cwd` and `repository_cwd` are paths there
    /// (absent: the daemon's machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// `workspace.create` / `workspace.attach` success data: the fresh agent and session the
/// daemon launched in the workspace, with the workspace itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceLaunched {
    /// The workspace.
    pub workspace: WorkspaceInfo,
    /// The new agent.
    pub agent_id: String,
    /// Its new session.
    pub session_id: String,
}

/// The workspaces of one repository, so clients group sibling worktrees by project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceGroup {
    /// The main checkout of the repository.
    pub repository_cwd: String,
    /// Additive: the `[hosts.NAME]` that checkout is on (absent: the daemon's machine);
    /// the same path on two machines is two groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Its workspaces, oldest first.
    pub workspaces: Vec<WorkspaceInfo>,
}

/// `workspace.list` success data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceListData {
    /// One group per repository, ordered by host (this machine first), then
    /// `repository_cwd`.
    pub repositories: Vec<WorkspaceGroup>,
}

/// `workspace.status` success data: what git and the registry say now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceStatusData {
    /// The workspace.
    pub workspace: WorkspaceInfo,
    /// The worktree directory is gone (removed by hand); it is never recreated.
    pub missing: bool,
    /// The branch the worktree has checked out now (absent: detached HEAD or missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_branch: Option<String>,
    /// The workspace branch's tip commit (absent: the branch no longer exists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_tip: Option<String>,
    /// Commits on the branch that the integration target lacks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ahead: Option<u64>,
    /// Commits on the integration target that the branch lacks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind: Option<u64>,
    /// Changed tracked files plus untracked, not ignored, files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirty_files: Option<u64>,
    /// Agents of the workspace whose Runtime is live.
    pub live_agents: Vec<String>,
    /// Agents of the workspace in the middle of a turn.
    pub busy_agents: Vec<String>,
}

/// `workspace.retire` success data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceRetiredData {
    /// The workspace, now retired.
    pub workspace: WorkspaceInfo,
    /// The branch was deleted.
    pub branch_deleted: bool,
    /// The branch tip recorded before any deletion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_tip: Option<String>,
    /// How to bring a deleted branch back (`git branch NAME SHA` in `repository_cwd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore: Option<String>,
    /// It was already retired; nothing was done.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub already_retired: bool,
}

/// Why a workspace operation was refused (`CONFLICT` data `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkspaceConflictKind {
    /// An agent of the workspace has a live Runtime.
    Live,
    /// An agent of the workspace is mid-turn, or another operation on it is running.
    Busy,
    /// Uncommitted changes or untracked (not ignored) files.
    Dirty,
    /// The repository or the worktree the record names is gone, so nothing can be proven.
    MissingAuthority,
    /// The worktree is not in a state the daemon can safely remove or use.
    Unsafe,
    /// Deleting the branch was not proven safe; retry with the confirming disposition.
    ConfirmationRequired,
}

/// Typed `data` of a workspace `CONFLICT` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceConflictData {
    /// Which refusal.
    pub kind: WorkspaceConflictKind,
    /// The workspace.
    pub workspace_id: String,
    /// Sanitized reason (no git-dir paths).
    pub reason: String,
    /// For `confirmation_required`: the disposition that confirms (`delete_confirmed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation_disposition: Option<crate::orchestrator::BranchDisposition>,
}
