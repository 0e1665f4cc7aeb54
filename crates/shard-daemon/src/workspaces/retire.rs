//! `workspace.retire`: never loses a commit. Refusals come first (busy, live, missing
//! authority, unsafe, dirty, unproven deletion); the branch tip is written to the record
//! before anything is deleted; the worktree is removed with plain `git worktree remove`
//! (git refuses a dirty one too), and the branch is deleted with a compare-and-delete
//! (`git update-ref -d REF TIP`), so a commit that lands after the proof is never lost.

use std::path::Path;
use std::sync::Arc;

use shard_protocol::orchestrator::{BranchDisposition, WorkspaceEvent, WorkspaceRetire};
use shard_protocol::workspace::{
    WorkspaceConflictKind as K, WorkspaceLifecycle, WorkspaceRetiredData,
};
use shard_protocol::{ErrorCode, Event, ids};

use super::Workspaces;
use super::record::WorkspaceRecord;
use super::site::{Site, SiteError};
use super::status::{agents, branch_tip, is_missing, resolve, worktree_status};
use super::{begin, check_version, conflict, git, not_found, redact};
use crate::reply::{ProtocolError, Reply};
use shard_protocol::command::kind;

pub(super) async fn retire(
    ws: &Arc<Workspaces>,
    r: WorkspaceRetire,
) -> Result<Reply, ProtocolError> {
    check_version(r.version)?;
    let disposition = r
        .branch_disposition
        .unwrap_or(BranchDisposition::DeleteIfMerged);
    let rec = ws.get(&r.workspace_id).ok_or_else(not_found)?;
    if rec.lifecycle == WorkspaceLifecycle::Retired {
        return Reply::data::<kind::WorkspaceRetire>(&WorkspaceRetiredData {
            workspace: rec.info(),
            branch_deleted: rec.branch_deleted,
            branch_tip: rec.recorded_tip.clone(),
            restore: rec.branch_deleted.then(|| rec.restore_hint()).flatten(),
            already_retired: true,
        });
    }
    let _guard = begin(ws, &rec.workspace_id)?;
    let id = rec.workspace_id.clone();
    let refuse = |kind, reason: &str| conflict(ws, kind, &id, reason, None);
    let (live, busy) = agents(ws, &rec);
    if !busy.is_empty() {
        return Err(refuse(
            K::Busy,
            "an agent of the workspace is in the middle of a turn",
        ));
    }
    if !live.is_empty() {
        return Err(refuse(
            K::Live,
            "an agent of the workspace is live; terminate or kill it first",
        ));
    }
    let site = ws.site(rec.host.as_deref());
    let rc = Path::new(&rec.repository_cwd);
    let common = site
        .git(
            rc,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        )
        .await?;
    if !common.ok() || common.line() != rec.common_dir {
        return Err(refuse(
            K::MissingAuthority,
            "the repository's main checkout is gone or is no longer the repository this workspace was made from",
        ));
    }
    let list = site.git(rc, &["worktree", "list", "--porcelain"]).await?;
    let entry = git::parse_worktrees(&list.stdout)
        .into_iter()
        .skip(1)
        .find(|e| e.path == Path::new(&rec.cwd));
    let missing = is_missing(&site, &rec.cwd).await?;
    if !missing {
        match &entry {
            None => {
                return Err(refuse(
                    K::Unsafe,
                    "the directory is no longer a worktree of the repository; it is left alone",
                ));
            }
            Some(e) if e.locked => {
                return Err(refuse(
                    K::Unsafe,
                    "the worktree is locked (git worktree lock)",
                ));
            }
            Some(e) if e.branch.as_deref() != Some(&format!("refs/heads/{}", rec.branch)) => {
                return Err(refuse(
                    K::Unsafe,
                    "the worktree's HEAD is not on the workspace branch; commits there could be lost",
                ));
            }
            Some(_) => {}
        }
        match worktree_status(&site, &rec.cwd).await? {
            None => {
                return Err(refuse(K::Unsafe, "git cannot read the worktree's status"));
            }
            Some(s) if s.dirty > 0 => {
                let reason = format!(
                    "the worktree has {} uncommitted or untracked file(s); commit or remove them first",
                    s.dirty
                );
                return Err(refuse(K::Dirty, &reason));
            }
            Some(_) => {}
        }
    }
    let tip = branch_tip(&site, &rec).await?;
    // The worktree's own HEAD, which git keeps while its directory is gone: removing or
    // pruning the worktree deletes it with its reflog, so a commit only it holds (made
    // detached, then the directory deleted) must first be held by a ref.
    let head = entry
        .as_ref()
        .and_then(|e| e.head.clone())
        .filter(|h| Some(h) != tip.as_ref());
    if let Some(head) = &head
        && !held_by_a_ref(&site, rc, head).await?
    {
        let reason = format!(
            "the worktree's HEAD is at commit {head}, which no branch, tag or remote-tracking \
             ref holds; removing the worktree would lose it (`git branch NAME {head}` in the \
             repository keeps it)"
        );
        return Err(refuse(K::Unsafe, &reason));
    }
    let delete = match (disposition, &tip) {
        (BranchDisposition::Keep, _) | (_, None) => false,
        (BranchDisposition::DeleteConfirmed, Some(_)) => true,
        (BranchDisposition::DeleteIfMerged, Some(tip)) => match proven(&site, &rec, tip).await? {
            Ok(()) => true,
            Err(reason) => {
                return Err(conflict(
                    ws,
                    K::ConfirmationRequired,
                    &id,
                    &reason,
                    Some(BranchDisposition::DeleteConfirmed),
                ));
            }
        },
    };
    let mut next = rec.clone();
    next.recorded_tip = tip.clone();
    next.disposition = Some(disposition);
    ws.commit(&next).await?;
    // The worktree first: if its removal fails, the branch is untouched.
    // Only this worktree: `git worktree prune` would also drop every other worktree
    // whose directory is gone, with the HEADs that hold their commits.
    let removed = if missing && entry.is_none() {
        None
    } else if missing {
        Some(site.git(rc, &["worktree", "remove", &rec.cwd]).await?)
    } else {
        // Its clean check runs git inside the worktree, reading config its own way.
        Some(
            site.git_in(
                rc,
                &[Path::new(&rec.cwd)],
                &["worktree", "remove", &rec.cwd],
            )
            .await?,
        )
    };
    if let Some(removed) = removed.filter(|r| !r.ok()) {
        let why = redact(&removed.why(), &rec.common_dir);
        return Err(refuse(
            K::Unsafe,
            &format!("git refused to remove the worktree: {why}"),
        ));
    }
    if let Some(parent) = Path::new(&rec.cwd).parent()
        && parent
            .file_name()
            .is_some_and(|n| n.to_str() == Some(rec.workspace_id.as_str()))
    {
        site.remove_dir(parent).await;
    }
    let mut deleted = false;
    if delete && let Some(tip) = &tip {
        let r = format!("refs/heads/{}", rec.branch);
        let out = site.git(rc, &["update-ref", "-d", &r, tip]).await?;
        deleted = out.ok();
        if !deleted {
            tracing::warn!(workspace_id = %id, "branch not deleted: {}", redact(&out.why(), &rec.common_dir));
        }
    }
    next.lifecycle = WorkspaceLifecycle::Retired;
    next.retired_at = Some(ids::now_millis());
    next.branch_deleted = deleted;
    ws.commit(&next).await.map_err(|e| {
        ProtocolError::new(
            ErrorCode::InternalError,
            format!(
                "the workspace was retired but its record could not be updated: {}",
                e.message
            ),
        )
    })?;
    ws.core
        .broadcast_event(&Event::WorkspaceRetired(WorkspaceEvent {
            workspace: next.info(),
        }));
    // Its agents go with it, archived like `shard rm` (none is live: that was refused
    // above); their sessions stay.
    for agent_id in &rec.agent_ids {
        if let Ok((manifest, _)) = ws.core.archive(agent_id)
            && let Err(e) = ws.core.store.save(&manifest).await
        {
            tracing::warn!(agent_id = %agent_id, error = %e, "could not record the archive of a retired workspace's agent");
        }
    }
    Reply::data::<kind::WorkspaceRetire>(&WorkspaceRetiredData {
        workspace: next.info(),
        branch_deleted: deleted,
        branch_tip: next.recorded_tip.clone(),
        restore: if deleted { next.restore_hint() } else { None },
        already_retired: false,
    })
}

/// `Ok(Ok(()))` when every commit the workspace branch ever pointed at — its tip, its
/// reflog, and the worktree HEAD's reflog (commits made while detached) — is reachable
/// from the integration target's local ref (no fetch), else the reason it could not be
/// proven. Deleting the branch deletes its reflog: a commit only the reflog still names
/// (an amended or reset-away commit) would be lost with it.
async fn proven(
    site: &Site,
    rec: &WorkspaceRecord,
    tip: &str,
) -> Result<Result<(), String>, SiteError> {
    let Some(target) = &rec.integration_target else {
        return Ok(Err(
            "the workspace has no integration target, so a merge cannot be proven".into(),
        ));
    };
    let rc = Path::new(&rec.repository_cwd);
    let short = git::short_ref(target).to_string();
    let Some(t) = resolve(site, rc, target).await? else {
        return Ok(Err(format!(
            "the integration target {short} no longer exists locally"
        )));
    };
    let mut commits = vec![tip.to_string()];
    commits.extend(reflog(site, rc, &format!("refs/heads/{}", rec.branch)).await?);
    if !is_missing(site, &rec.cwd).await? {
        commits.extend(reflog(site, Path::new(&rec.cwd), "HEAD").await?);
    }
    commits.sort();
    commits.dedup();
    let not = format!("^{t}");
    let mut args = vec!["rev-list", "--count", "--ignore-missing", &not];
    args.extend(commits.iter().map(String::as_str));
    let out = site.git(rc, &args).await?;
    let unmerged: Option<u64> = out.ok().then(|| out.line().parse().ok()).flatten();
    Ok(match unmerged {
        Some(0) => Ok(()),
        Some(n) => Err(format!(
            "branch {} is not merged into {short}: {n} commit(s) it held (its tip or its \
             reflog) are not in {short}; deleting it needs confirmation",
            rec.branch
        )),
        None => Err(format!(
            "git could not decide whether branch {} is merged into {short}",
            rec.branch
        )),
    })
}

/// Whether `commit` is reachable from a branch, a tag or a remote-tracking ref (not from
/// a worktree's HEAD); a commit git cannot read counts as not held.
async fn held_by_a_ref(site: &Site, rc: &Path, commit: &str) -> Result<bool, SiteError> {
    let out = site
        .git(
            rc,
            &[
                "rev-list",
                "--count",
                "--not",
                "--branches",
                "--tags",
                "--remotes",
                "--not",
                "--end-of-options",
                commit,
            ],
        )
        .await?;
    Ok(out.ok() && out.line() == "0")
}

/// The commits `reference` pointed at, from its reflog (none when it has no reflog).
async fn reflog(site: &Site, dir: &Path, reference: &str) -> Result<Vec<String>, SiteError> {
    let out = site
        .git(
            dir,
            &[
                "log",
                "--walk-reflogs",
                "--format=%H",
                "--end-of-options",
                reference,
            ],
        )
        .await?;
    Ok(out
        .stdout
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(str::to_string)
        .collect())
}
