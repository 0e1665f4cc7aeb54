//! `workspace.list` (from the registry, no git) and `workspace.status` (what git says
//! now). A worktree directory that is gone is reported `missing` and nothing else is
//! done: the daemon never recreates a worktree the user removed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use shard_protocol::orchestrator::{WorkspaceList, WorkspaceRef};
use shard_protocol::types::RuntimeState;
use shard_protocol::workspace::{
    WorkspaceGroup, WorkspaceLifecycle, WorkspaceListData, WorkspaceStatusData,
};

use super::Workspaces;
use super::git;
use super::record::WorkspaceRecord;
use super::{check_version, no_git, not_found};
use crate::reply::{ProtocolError, Reply};
use shard_protocol::command::kind;

/// `workspace.list`: grouped by repository (`repository_cwd`), oldest first in a group;
/// `cwd` narrows to the repository that directory belongs to (matched by its main
/// checkout or by one of its workspaces).
pub(super) async fn list(ws: &Arc<Workspaces>, l: &WorkspaceList) -> Result<Reply, ProtocolError> {
    check_version(l.version)?;
    // Resolving `cwd` touches the disk: never on the connection's read loop.
    let cwd = match &l.cwd {
        None => None,
        Some(c) => Some(
            tokio::fs::canonicalize(c)
                .await
                .unwrap_or_else(|_| PathBuf::from(c)),
        ),
    };
    let all = ws.all();
    let wanted: Option<String> = match cwd {
        None => None,
        Some(c) => {
            let hit = all
                .iter()
                .find(|r| c.starts_with(&r.repository_cwd) || c.starts_with(&r.cwd));
            match hit {
                Some(r) => Some(r.repository_cwd.clone()),
                None => {
                    return Reply::data::<kind::WorkspaceList>(&WorkspaceListData {
                        repositories: Vec::new(),
                    });
                }
            }
        }
    };
    let mut groups: BTreeMap<String, Vec<WorkspaceRecord>> = BTreeMap::new();
    for r in all {
        if r.lifecycle == WorkspaceLifecycle::Retired && !l.include_retired.unwrap_or(false) {
            continue;
        }
        if wanted.as_ref().is_some_and(|w| *w != r.repository_cwd) {
            continue;
        }
        groups.entry(r.repository_cwd.clone()).or_default().push(r);
    }
    let repositories = groups
        .into_iter()
        .map(|(repository_cwd, mut v)| {
            v.sort_by(|a, b| {
                a.created_at
                    .cmp(&b.created_at)
                    .then_with(|| a.workspace_id.cmp(&b.workspace_id))
            });
            WorkspaceGroup {
                repository_cwd,
                workspaces: v.iter().map(WorkspaceRecord::info).collect(),
            }
        })
        .collect();
    Reply::data::<kind::WorkspaceList>(&WorkspaceListData { repositories })
}

/// Agents of `rec` with a live Runtime, and those mid-turn.
pub(super) fn agents(ws: &Workspaces, rec: &WorkspaceRecord) -> (Vec<String>, Vec<String>) {
    let mut live = Vec::new();
    let mut busy = Vec::new();
    for id in &rec.agent_ids {
        for a in ws.core.list_agents(Some(id)) {
            if matches!(
                a.runtime_state,
                RuntimeState::Starting | RuntimeState::Running | RuntimeState::Stopping
            ) {
                live.push(a.agent_id.clone());
            }
            if a.status.is_active() {
                busy.push(a.agent_id.clone());
            }
        }
    }
    (live, busy)
}

/// The worktree directory is gone.
pub(super) async fn is_missing(cwd: &str) -> bool {
    !tokio::fs::metadata(cwd).await.is_ok_and(|m| m.is_dir())
}

/// The worktree's own git link (`.git` file) is present, so git in it talks about it
/// and not about some repository above it.
pub(super) async fn has_git_link(cwd: &str) -> bool {
    tokio::fs::symlink_metadata(Path::new(cwd).join(".git"))
        .await
        .is_ok()
}

/// `git status` of a present worktree: `None` when git cannot read it.
pub(super) async fn worktree_status(
    cwd: &str,
) -> Result<Option<git::StatusSummary>, ProtocolError> {
    if !has_git_link(cwd).await {
        return Ok(None);
    }
    let out = git::run(
        Path::new(cwd),
        &[
            "status",
            "--porcelain=v2",
            "--branch",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            "--ignore-submodules=none",
        ],
    )
    .await
    .map_err(|e| no_git(&e))?;
    Ok(out.ok().then(|| git::parse_status(&out.stdout)))
}

/// The current tip of the workspace branch (`None`: it no longer exists).
pub(super) async fn branch_tip(rec: &WorkspaceRecord) -> Result<Option<String>, ProtocolError> {
    let r = format!("refs/heads/{}", rec.branch);
    let out = git::run(
        Path::new(&rec.repository_cwd),
        &["rev-parse", "--verify", "--quiet", "--end-of-options", &r],
    )
    .await
    .map_err(|e| no_git(&e))?;
    Ok(out.ok().then(|| out.line().to_string()))
}

pub(super) async fn status(ws: &Arc<Workspaces>, r: WorkspaceRef) -> Result<Reply, ProtocolError> {
    check_version(r.version)?;
    let rec = ws.get(&r.workspace_id).ok_or_else(not_found)?;
    let (live_agents, busy_agents) = agents(ws, &rec);
    let mut out = WorkspaceStatusData {
        workspace: rec.info(),
        missing: false,
        head_branch: None,
        branch_tip: None,
        ahead: None,
        behind: None,
        dirty_files: None,
        live_agents,
        busy_agents,
    };
    if rec.lifecycle == WorkspaceLifecycle::Retired {
        out.branch_tip = rec.recorded_tip.clone();
        return Reply::data::<kind::WorkspaceStatus>(&out);
    }
    out.missing = is_missing(&rec.cwd).await;
    let counts = async {
        let Some(target) = &rec.integration_target else {
            return Ok(None);
        };
        let range = format!("{target}...refs/heads/{}", rec.branch);
        let o = git::run(
            Path::new(&rec.repository_cwd),
            &["rev-list", "--left-right", "--count", &range, "--"],
        )
        .await
        .map_err(|e| no_git(&e))?;
        Ok::<_, ProtocolError>(if o.ok() {
            git::parse_counts(&o.stdout)
        } else {
            None
        })
    };
    let wt = async {
        if out.missing {
            Ok(None)
        } else {
            worktree_status(&rec.cwd).await
        }
    };
    let (counts, wt) = tokio::join!(counts, wt);
    if let Some((behind, ahead)) = counts? {
        out.behind = Some(behind);
        out.ahead = Some(ahead);
    }
    if let Some(s) = wt? {
        // The worktree on its own branch already told us the tip: one git run saved.
        if s.head_branch.as_deref() == Some(rec.branch.as_str()) {
            out.branch_tip = s.head_oid;
        }
        out.head_branch = s.head_branch;
        out.dirty_files = Some(s.dirty);
    }
    if out.branch_tip.is_none() {
        out.branch_tip = branch_tip(&rec).await?;
    }
    Reply::data::<kind::WorkspaceStatus>(&out)
}
