//! `workspace.list` (from the registry, no git) and `workspace.status` (what git says
//! now, on the workspace's machine). A worktree directory that is gone is reported `missing` and nothing else is
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
use super::site::{Site, SiteError};
use super::{check_version, not_found};
use crate::reply::{ProtocolError, Reply};
use shard_protocol::command::kind;

/// `workspace.list`: grouped by repository (`repository_cwd`), oldest first in a group;
/// `cwd` narrows to the repository that directory belongs to (matched by its main
/// checkout or by one of its workspaces).
pub(super) async fn list(ws: &Arc<Workspaces>, l: &WorkspaceList) -> Result<Reply, ProtocolError> {
    check_version(l.version)?;
    // Resolving `cwd` touches the disk: never on the connection's read loop. A path on
    // a host is compared as given.
    let cwd = match (&l.cwd, &l.host) {
        (None, _) => None,
        (Some(c), Some(_)) => Some(PathBuf::from(c)),
        (Some(c), None) => Some(
            tokio::fs::canonicalize(c)
                .await
                .unwrap_or_else(|_| PathBuf::from(c)),
        ),
    };
    let all = ws.all();
    let wanted: Option<String> = match cwd {
        None => None,
        Some(c) => {
            let hit = all.iter().find(|r| {
                r.host == l.host && (c.starts_with(&r.repository_cwd) || c.starts_with(&r.cwd))
            });
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
    // By host (this machine first), then path: one path on two machines is two groups.
    let mut groups: BTreeMap<(Option<String>, String), Vec<WorkspaceRecord>> = BTreeMap::new();
    for r in all {
        if r.lifecycle == WorkspaceLifecycle::Retired && !l.include_retired.unwrap_or(false) {
            continue;
        }
        if wanted
            .as_ref()
            .is_some_and(|w| *w != r.repository_cwd || r.host != l.host)
        {
            continue;
        }
        groups
            .entry((r.host.clone(), r.repository_cwd.clone()))
            .or_default()
            .push(r);
    }
    let repositories = groups
        .into_iter()
        .map(|((host, repository_cwd), mut v)| {
            v.sort_by(|a, b| {
                a.created_at
                    .cmp(&b.created_at)
                    .then_with(|| a.workspace_id.cmp(&b.workspace_id))
            });
            WorkspaceGroup {
                repository_cwd,
                host,
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
pub(super) async fn is_missing(site: &Site, cwd: &str) -> Result<bool, SiteError> {
    Ok(!site.is_dir(Path::new(cwd)).await?)
}

/// `git status` of a present worktree: `None` when git cannot read it. Only when the
/// worktree's own git link (`.git` file) is present, so git in it talks about it and
/// not about some repository above it. Never enters a submodule or a nested repository
/// (each has a config of its own, with programs of its own): a submodule is not looked
/// at, a nested repository that is not tracked is one untracked entry, and `git
/// worktree remove` refuses a worktree holding a checked-out submodule by itself.
pub(super) async fn worktree_status(
    site: &Site,
    cwd: &str,
) -> Result<Option<git::StatusSummary>, SiteError> {
    if !site.exists(&Path::new(cwd).join(".git")).await? {
        return Ok(None);
    }
    let out = site
        .git(
            Path::new(cwd),
            &[
                "status",
                "--porcelain=v2",
                "--branch",
                "-z",
                "--untracked-files=all",
                "--no-renames",
                "--ignore-submodules=all",
            ],
        )
        .await?;
    Ok(out.ok().then(|| git::parse_status(&out.stdout)))
}

/// Resolves `rev` to a commit id in `repo` (`None`: not a commit).
pub(super) async fn resolve(
    site: &Site,
    repo: &Path,
    rev: &str,
) -> Result<Option<String>, SiteError> {
    let spec = format!("{rev}^{{commit}}");
    let out = site
        .git(
            repo,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                &spec,
            ],
        )
        .await?;
    Ok(out.ok().then(|| out.line().to_string()))
}

/// The current tip of the workspace branch (`None`: it no longer exists).
pub(super) async fn branch_tip(
    site: &Site,
    rec: &WorkspaceRecord,
) -> Result<Option<String>, SiteError> {
    let r = format!("refs/heads/{}", rec.branch);
    let out = site
        .git(
            Path::new(&rec.repository_cwd),
            &["rev-parse", "--verify", "--quiet", "--end-of-options", &r],
        )
        .await?;
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
    let site = ws.site(rec.host.as_deref());
    out.missing = is_missing(&site, &rec.cwd).await?;
    let counts = async {
        let Some(target) = &rec.integration_target else {
            return Ok(None);
        };
        let range = format!("{target}...refs/heads/{}", rec.branch);
        let o = site
            .git(
                Path::new(&rec.repository_cwd),
                &["rev-list", "--left-right", "--count", &range, "--"],
            )
            .await?;
        Ok::<_, SiteError>(if o.ok() {
            git::parse_counts(&o.stdout)
        } else {
            None
        })
    };
    let wt = async {
        if out.missing {
            Ok(None)
        } else {
            worktree_status(&site, &rec.cwd).await
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
        out.branch_tip = branch_tip(&site, &rec).await?;
    }
    Reply::data::<kind::WorkspaceStatus>(&out)
}
