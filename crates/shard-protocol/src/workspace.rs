//! The transport-safe workspace projection (PROTOCOL §10.1a). The spec names it without
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
}
