//! `workspace.create` and `workspace.attach`: a worktree and branch from `base_ref` in a
//! root outside the user's checkout, then a fresh daemon-generated agent and session in
//! it — on this machine or, with `host`, on that host, where its git and its agent run.
//! The record is written before the worktree exists, so a crash never leaves a
//! worktree the daemon has forgotten; a creation whose agent is refused is rolled back
//! (the fresh worktree is clean and its branch still at the base commit).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use shard_protocol::command::AgentCreate;
use shard_protocol::orchestrator::{WorkspaceAttach, WorkspaceCreate, WorkspaceEvent};
use shard_protocol::workspace::{WorkspaceConflictKind, WorkspaceLaunched, WorkspaceLifecycle};
use shard_protocol::{ErrorCode, Event, ids};

use super::Workspaces;
use super::git;
use super::record::{WorkspaceRecord, version_for};
use super::site::Site;
use super::status::resolve;
use super::{begin, check_version, conflict, invalid, not_found, redact};
use crate::reply::{ProtocolError, Reply};
use shard_protocol::CommandSpec;
use shard_protocol::command::kind;

/// What git says about the repository a `cwd` belongs to.
pub(super) struct Repo {
    /// The main checkout (first entry of `git worktree list`).
    pub repository_cwd: PathBuf,
    pub common_dir: String,
    /// The branch checked out in the main checkout (full ref), if any.
    pub main_branch: Option<String>,
}

/// Finds the repository of `cwd`; refuses a directory outside git and a bare repository.
pub(super) async fn inspect(site: &Site, cwd: &Path) -> Result<Repo, ProtocolError> {
    let common = site
        .git(
            cwd,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        )
        .await?;
    if !common.ok() {
        return Err(invalid(format!(
            "cwd {} is not inside a git repository{}",
            cwd.display(),
            site.on()
        )));
    }
    let common_dir = common.line().to_string();
    let list = site.git(cwd, &["worktree", "list", "--porcelain"]).await?;
    if !list.ok() {
        return Err(invalid(format!(
            "git worktree list failed: {}",
            redact(&list.why(), &common_dir)
        )));
    }
    let main = git::parse_worktrees(&list.stdout)
        .into_iter()
        .next()
        .ok_or_else(|| invalid("git lists no worktree for this repository"))?;
    if main.bare {
        return Err(invalid(
            "the repository is bare: there is no main checkout to integrate into",
        ));
    }
    let repository_cwd = site.canonical_dir(&main.path).await?.unwrap_or(main.path);
    Ok(Repo {
        repository_cwd,
        common_dir,
        main_branch: main.branch,
    })
}

/// The full ref of an integration target given as `main`, `refs/heads/main` or a
/// remote-tracking `origin/main` — local refs only, nothing is fetched.
async fn target_ref(site: &Site, repo: &Path, t: &str) -> Result<String, ProtocolError> {
    let candidates = if t.starts_with("refs/") {
        vec![t.to_string()]
    } else {
        vec![format!("refs/heads/{t}"), format!("refs/remotes/{t}")]
    };
    for c in candidates {
        if resolve(site, repo, &c).await?.is_some() {
            return Ok(c);
        }
    }
    Err(invalid(format!(
        "integration_target {t:?} is not a local branch or remote-tracking ref"
    )))
}

/// A branch name from a label: lower-case letters, digits and dashes.
fn slug(label: &str) -> String {
    let mut s = String::new();
    for ch in label.chars().flat_map(char::to_lowercase) {
        if ch.is_ascii_alphanumeric() {
            s.push(ch);
        } else if !s.ends_with('-') && !s.is_empty() {
            s.push('-');
        }
        if s.len() >= 40 {
            break;
        }
    }
    s.trim_end_matches('-').to_string()
}

/// `[workspaces] root` of `SHARD_HOME/config.toml` (read once at daemon start), else
/// `SHARD_HOME/workspaces`. The default is made owner-only like the rest of `SHARD_HOME`; a
/// root the user chose is created when missing but its permissions are theirs.
async fn root(ws: &Workspaces) -> Result<PathBuf, ProtocolError> {
    let default = ws.store.dir().to_path_buf();
    let (dir, own) = match &ws.core.cfg.workspaces_root {
        Some(r) => (r.clone(), false),
        None => (default, true),
    };
    let made = dir.clone();
    tokio::task::spawn_blocking(move || {
        if own {
            crate::fsutil::ensure_private_dir(&made)
        } else {
            std::fs::create_dir_all(&made)
        }
    })
    .await
    .map_err(|e| ProtocolError::new(ErrorCode::InternalError, e.to_string()))?
    .map_err(|e| {
        ProtocolError::new(
            ErrorCode::InternalError,
            format!("could not create the workspaces root: {e}"),
        )
    })?;
    Ok(tokio::fs::canonicalize(&dir).await.unwrap_or(dir))
}

pub(super) async fn create(
    ws: &Arc<Workspaces>,
    c: WorkspaceCreate,
) -> Result<Reply, ProtocolError> {
    check_version(c.version)?;
    if let Some(l) = &c.label
        && (l.len() > 200 || l.chars().any(char::is_control))
    {
        return Err(invalid(
            "label must be at most 200 bytes without control characters",
        ));
    }
    let site = ws.site(c.host.as_deref());
    if let Some(host) = &c.host {
        // Configured, and `cwd` an absolute path (it is one on the host).
        crate::hosts::check_create(&ws.core.cfg, host, &c.cwd).map_err(invalid)?;
    }
    let cwd = site
        .canonical_dir(Path::new(&c.cwd))
        .await?
        .ok_or_else(|| invalid(format!("cwd {:?} is not a directory{}", c.cwd, site.on())))?;
    let repo = inspect(&site, &cwd).await?;
    let rc = repo.repository_cwd.clone();
    let workspace_id = ids::new_id(ids::WORKSPACE);
    let tail = workspace_id
        .rsplit('-')
        .next()
        .unwrap_or_default()
        .to_lowercase();
    let branch = match &c.branch {
        Some(b) => b.clone(),
        None => match c.label.as_deref().map(slug).filter(|s| !s.is_empty()) {
            Some(s) => format!("shard/{s}-{}", &tail[tail.len().saturating_sub(6)..]),
            None => format!("shard/{tail}"),
        },
    };
    let check = site
        .git(&rc, &["check-ref-format", "--branch", &branch])
        .await?;
    if branch.starts_with('-') || !check.ok() {
        return Err(invalid(format!("{branch:?} is not a valid branch name")));
    }
    if resolve(&site, &rc, &format!("refs/heads/{branch}"))
        .await?
        .is_some()
    {
        return Err(invalid(format!("branch {branch:?} already exists")));
    }
    let base_ref = c.base_ref.clone().unwrap_or_else(|| "HEAD".to_string());
    if base_ref.starts_with('-') {
        return Err(invalid("base_ref must not start with '-'"));
    }
    let base_sha = resolve(&site, &rc, &base_ref)
        .await?
        .ok_or_else(|| invalid(format!("base_ref {base_ref:?} does not name a commit")))?;
    let integration_target = match &c.integration_target {
        Some(t) => Some(target_ref(&site, &rc, t).await?),
        None => repo.main_branch.clone(),
    };
    let root = match site.host_root().await? {
        Some(r) => r,
        None => root(ws).await?,
    };
    if root.starts_with(&rc) {
        return Err(conflict(
            ws,
            WorkspaceConflictKind::Unsafe,
            &workspace_id,
            "the workspaces root is inside the repository's checkout; configure [workspaces] root elsewhere",
            None,
        ));
    }
    let name = rc
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "repo".into());
    let path = root.join(&workspace_id).join(name);
    let mut rec = WorkspaceRecord {
        version: version_for(c.host.as_deref()),
        workspace_id: workspace_id.clone(),
        label: c.label.clone(),
        cwd: path.display().to_string(),
        repository_cwd: rc.display().to_string(),
        common_dir: repo.common_dir.clone(),
        branch: branch.clone(),
        base_ref,
        base_sha: base_sha.clone(),
        integration_target,
        lifecycle: WorkspaceLifecycle::Active,
        agent_ids: Vec::new(),
        created_at: ids::now_millis(),
        retired_at: None,
        recorded_tip: None,
        branch_deleted: false,
        disposition: None,
        host: c.host.clone(),
    };
    let guard = begin(ws, &workspace_id)?;
    ws.commit(&rec).await?;
    let parent = root.join(&workspace_id);
    site.make_private_dir(&parent).await;
    let path_arg = path.display().to_string();
    let kept = |why: String| {
        // Git may have made the worktree (it reported a failure after, or the host's
        // connection went during it): it is kept and recorded, never deleted behind the
        // user's back.
        ProtocolError::new(
            ErrorCode::InternalError,
            format!("{why}; the workspace is kept — retire it to remove it"),
        )
        .with_data(Some(serde_json::json!({ "workspace_id": workspace_id })))
    };
    // Checked out in a second step, from inside the worktree: its config is read there
    // (`includeIf "gitdir:…"`, `"onbranch:…"` may match only there), so the filters
    // that config names are the ones turned off.
    let add = match site
        .git(
            &rc,
            &[
                "worktree",
                "add",
                "--no-checkout",
                "-b",
                &branch,
                &path_arg,
                &base_sha,
            ],
        )
        .await
    {
        Ok(add) => add,
        Err(e) if e.maybe_ran() => return Err(kept(e.to_string())),
        // Git not even starting leaves nothing: the record committed above goes with
        // the empty directory.
        Err(e) => {
            unmake(ws, &site, &workspace_id, &parent).await;
            return Err(e.into());
        }
    };
    if !add.ok() {
        let why = redact(&add.why(), &repo.common_dir);
        if let Ok(false) = site.exists(&path).await {
            unmake(ws, &site, &workspace_id, &parent).await;
            return Err(invalid(format!("git worktree add failed: {why}")));
        }
        return Err(kept(format!(
            "git worktree add reported a failure after creating the worktree: {why}"
        )));
    }
    let checkout = site
        .git(
            &path,
            &["reset", "--hard", "--quiet", "--no-recurse-submodules"],
        )
        .await
        .map_err(|e| kept(e.to_string()))?;
    if !checkout.ok() {
        let why = redact(&checkout.why(), &repo.common_dir);
        return Err(kept(format!(
            "git could not check out the new worktree: {why}"
        )));
    }
    let launched = launch(
        ws,
        &mut rec,
        c.name.or(c.title),
        c.model,
        c.provider,
        c.mode,
    )
    .await;
    let (agent_id, session_id) = match launched {
        Ok(ok) => ok,
        Err((e, true)) => {
            // The agent exists (its Runtime failed to start): so does the workspace.
            ws.core
                .broadcast_event(&Event::WorkspaceCreated(WorkspaceEvent {
                    workspace: rec.info(),
                }));
            return Err(e);
        }
        Err((e, false)) => {
            rollback(ws, &site, &rec).await;
            return Err(e);
        }
    };
    drop(guard);
    ws.core
        .broadcast_event(&Event::WorkspaceCreated(WorkspaceEvent {
            workspace: rec.info(),
        }));
    finish::<kind::WorkspaceCreate>(ws, rec, agent_id, session_id)
}

/// Forgets a creation that made nothing but its record and the empty directory.
async fn unmake(ws: &Workspaces, site: &Site, workspace_id: &str, parent: &Path) {
    let _ = ws.store.remove(workspace_id).await;
    ws.forget(workspace_id);
    site.remove_dir(parent).await;
}

/// Undoes a creation whose agent was refused before anything was started: the worktree
/// is fresh (`git worktree remove` without force still refuses if anything appeared in
/// it) and the branch is deleted only while it still points at the base commit.
async fn rollback(ws: &Workspaces, site: &Site, rec: &WorkspaceRecord) {
    let rc = PathBuf::from(&rec.repository_cwd);
    let cwd = Path::new(&rec.cwd);
    let removed = site
        .git_in(&rc, &[cwd], &["worktree", "remove", &rec.cwd])
        .await
        .is_ok_and(|o| o.ok());
    if !removed {
        tracing::warn!(workspace_id = %rec.workspace_id, "rollback kept the worktree; the workspace record stays");
        return;
    }
    let r = format!("refs/heads/{}", rec.branch);
    let _ = site
        .git(&rc, &["update-ref", "-d", &r, &rec.base_sha])
        .await;
    unmake(ws, site, &rec.workspace_id, cwd.parent().unwrap_or(cwd)).await;
}

/// Launches a fresh agent and session in the workspace and records its id. `Err(e,
/// kept)`: `kept` is true when the agent exists (its Runtime failed to start) and was
/// recorded, so the workspace must stay.
async fn launch(
    ws: &Arc<Workspaces>,
    rec: &mut WorkspaceRecord,
    name: Option<String>,
    model: Option<String>,
    provider: Option<String>,
    mode: Option<String>,
) -> Result<(String, String), (ProtocolError, bool)> {
    let req = AgentCreate {
        cwd: rec.cwd.clone(),
        // A workspace on a host: its agent runs there, in the worktree.
        host: rec.host.clone(),
        name,
        model,
        provider,
        mode,
        ..Default::default()
    };
    let created = crate::create::create(&ws.core, req).await;
    let agent_id = match &created {
        Ok(created) => Some(created.agent_id.as_str()),
        Err(e) => e
            .data
            .as_ref()
            .and_then(|d| d.get("agent_id"))
            .and_then(|a| a.as_str()),
    }
    .map(str::to_string);
    let Some(agent_id) = agent_id else {
        let e = created.err().unwrap_or_else(|| {
            ProtocolError::new(
                ErrorCode::InternalError,
                "agent.create returned no agent id",
            )
        });
        return Err((e, false));
    };
    rec.agent_ids.push(agent_id.clone());
    if let Err(e) = ws.commit(rec).await {
        return Err((e, true));
    }
    if let Err(mut e) = created {
        e.data = Some(serde_json::json!({
            "agent_id": agent_id, "workspace_id": rec.workspace_id
        }));
        return Err((e, true));
    }
    let session_id = ws
        .core
        .list_agents(Some(&agent_id))
        .into_iter()
        .next()
        .and_then(|a| a.session_id)
        .unwrap_or_default();
    Ok((agent_id, session_id))
}

/// Announces the launch and answers `K` (`workspace.create` or `workspace.attach`, both
/// answered with the launch).
fn finish<K: CommandSpec<Response = WorkspaceLaunched>>(
    ws: &Workspaces,
    rec: WorkspaceRecord,
    agent_id: String,
    session_id: String,
) -> Result<Reply, ProtocolError> {
    let out = WorkspaceLaunched {
        workspace: rec.info(),
        agent_id,
        session_id,
    };
    ws.core.broadcast_event(&Event::WorkspaceAttached(
        shard_protocol::orchestrator::WorkspaceAttached {
            workspace: out.workspace.clone(),
            agent_id: out.agent_id.clone(),
            session_id: out.session_id.clone(),
        },
    ));
    Reply::data::<K>(&out)
}

pub(super) async fn attach(
    ws: &Arc<Workspaces>,
    a: WorkspaceAttach,
) -> Result<Reply, ProtocolError> {
    check_version(a.version)?;
    ws.get(&a.workspace_id).ok_or_else(not_found)?;
    let guard = begin(ws, &a.workspace_id)?;
    // Read under the guard: a retire that finished just before must not be overwritten
    // by a stale active copy when the new agent is recorded.
    let mut rec = ws.get(&a.workspace_id).ok_or_else(not_found)?;
    if rec.lifecycle == WorkspaceLifecycle::Retired {
        return Err(invalid("the workspace is retired"));
    }
    if !ws
        .site(rec.host.as_deref())
        .is_dir(Path::new(&rec.cwd))
        .await?
    {
        return Err(conflict(
            ws,
            WorkspaceConflictKind::MissingAuthority,
            &rec.workspace_id,
            "the worktree was removed; the daemon never recreates it (retire the workspace)",
            None,
        ));
    }
    let (agent_id, session_id) = match launch(
        ws,
        &mut rec,
        a.name.or(a.title),
        a.model,
        a.provider,
        a.mode,
    )
    .await
    {
        Ok(ok) => ok,
        Err((e, _)) => return Err(e),
    };
    drop(guard);
    finish::<kind::WorkspaceAttach>(ws, rec, agent_id, session_id)
}

#[cfg(test)]
mod tests {
    #[test]
    fn slugs_are_branch_safe() {
        assert_eq!(super::slug("Fix the Login bug!"), "fix-the-login-bug");
        assert_eq!(super::slug("  ..  "), "");
        assert!(super::slug(&"a".repeat(100)).len() <= 40);
    }
}
