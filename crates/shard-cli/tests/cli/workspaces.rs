//! Workspaces end to end: real git repositories made in each test, the real
//! daemon driving the user's `git`, scripted Runtimes in the worktrees. Every refusal kind
//! and the no-data-loss cases (uncommitted work, an unmerged branch, a daemon restart).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;

use serde_json::{Value, json};
use shard_client::Client;
use shard_protocol::ErrorCode;
use shard_protocol::Event;
use shard_protocol::command::AttachRole;
use shard_protocol::orchestrator::BranchDisposition;
use shard_protocol::workspace::{WorkspaceConflictData, WorkspaceConflictKind};

use super::daemon::{Daemon, home, orchestrator_until, prompt, script, until};

/// `git` is needed by the daemon and these tests; without it they are skipped.
pub(super) fn have_git() -> bool {
    let ok = StdCommand::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        crate::skip::skip("`git` is not installed (Debian package: git)");
    }
    ok
}

/// A `SHARD_HOME` inside the test's directory (outside every repository).
pub(super) fn shard_home(dir: &Path) -> PathBuf {
    let p = dir.join("home");
    std::fs::create_dir_all(&p).unwrap();
    p
}

/// Runs git in `dir` with a fixed identity; panics with git's message on failure.
pub(super) fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_raw(dir, args);
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

pub(super) fn git_raw(dir: &Path, args: &[&str]) -> std::process::Output {
    StdCommand::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .output()
        .unwrap()
}

/// A repository with one commit on `main` (a tracked file and a `.gitignore`).
pub(super) fn repo(parent: &Path, name: &str) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("README.md"), "hello\n").unwrap();
    std::fs::write(dir.join(".gitignore"), "target/\n").unwrap();
    git(&dir, &["add", "."]);
    git(&dir, &["commit", "-q", "-m", "first"]);
    std::fs::canonicalize(dir).unwrap()
}

pub(super) fn commit_all(dir: &Path, msg: &str) {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", msg]);
}

pub(super) async fn call(c: &Client, cmd: Value) -> Value {
    let r = c
        .request(serde_json::from_value(cmd).unwrap())
        .await
        .unwrap();
    serde_json::to_value(r).unwrap()
}

pub(super) async fn ok(c: &Client, cmd: Value) -> Value {
    let r = call(c, cmd.clone()).await;
    assert_eq!(r["success"], true, "{cmd} → {r}");
    r["data"].clone()
}

/// Asserts a typed workspace refusal (`CONFLICT` with its data) and returns the data.
pub(super) async fn refused(
    c: &Client,
    cmd: Value,
    kind: WorkspaceConflictKind,
) -> WorkspaceConflictData {
    let r = c
        .request(serde_json::from_value(cmd.clone()).unwrap())
        .await
        .unwrap();
    assert!(!r.success, "{cmd} → {r:?}");
    let error = r.error.expect("an error body");
    assert_eq!(error.code, ErrorCode::Conflict, "{error:?}");
    let data: WorkspaceConflictData =
        serde_json::from_value(error.data.expect("conflict data")).unwrap();
    assert_eq!(data.kind, kind, "{data:?}");
    data
}

pub(super) fn empty_script(dir: &Path) -> String {
    script(dir, "s.json", json!([]))
}

pub(super) async fn create(c: &Client, repo: &Path, s: &str, extra: Value) -> Value {
    let mut cmd = json!({"type":"workspace.create","cwd":repo.display().to_string(),
        "provider":"scripted","model":s});
    for (k, v) in extra.as_object().unwrap() {
        cmd[k] = v.clone();
    }
    ok(c, cmd).await
}

pub(super) async fn status(c: &Client, ws: &str) -> Value {
    ok(c, json!({"type":"workspace.status","workspace_id":ws})).await
}

fn retire(ws: &str, disposition: Option<&str>) -> Value {
    let mut v = json!({"type":"workspace.retire","workspace_id":ws});
    if let Some(d) = disposition {
        v["branch_disposition"] = json!(d);
    }
    v
}

/// Kills the agents of a workspace, so it is no longer live.
pub(super) async fn stop_agents(c: &Client, created: &Value) {
    for a in created["workspace"]["agent_ids"].as_array().unwrap() {
        ok(c, json!({"type":"agent.kill","agent_id":a,"force":true})).await;
    }
}

fn branch_exists(repo: &Path, branch: &str) -> bool {
    git_raw(
        repo,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ],
    )
    .status
    .success()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_work_commit_merge_retire_deletes_the_branch_and_records_its_tip() {
    if !have_git() {
        return;
    }
    let h = home();
    let r = repo(h.path(), "project");
    let d = Daemon::start(&shard_home(h.path()), &[]);
    let s = empty_script(h.path());
    let c = d.client().await;
    let watcher = d.client().await;
    let created = create(&c, &r, &s, json!({"label":"Fix login"})).await;
    let ws = created["workspace"]["workspace_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(ws.starts_with("ws-"), "{created}");
    assert!(created["agent_id"].as_str().unwrap().starts_with("agent-"));
    assert!(created["session_id"].as_str().unwrap().starts_with("sess-"));
    let w = &created["workspace"];
    assert_eq!(w["repository_cwd"], r.display().to_string());
    assert_eq!(w["integration_target"], "main");
    assert_eq!(w["lifecycle"], "active");
    let branch = w["branch"].as_str().unwrap().to_string();
    assert!(branch.starts_with("shard/fix-login"), "{branch}");
    let wt = PathBuf::from(w["cwd"].as_str().unwrap());
    assert!(
        wt.starts_with(h.path().join("home").join("workspaces")),
        "{wt:?}"
    );
    assert!(!wt.starts_with(&r), "never inside the user's checkout");
    assert!(wt.join("README.md").exists());
    // No git-dir or common-dir path in the response.
    assert!(!created.to_string().contains(".git/"), "{created}");
    assert!(git(&r, &["worktree", "list"]).contains(wt.to_str().unwrap()));
    // The agent runs in the worktree.
    let agents = ok(&c, json!({"type":"agent.list"})).await;
    assert_eq!(agents["agents"][0]["cwd"], wt.display().to_string());
    // Events: created, then attached with the new agent and session.
    let ev = orchestrator_until(&watcher, |e| matches!(e, Event::WorkspaceCreated(_))).await;
    let Event::WorkspaceCreated(ev) = ev else {
        unreachable!()
    };
    assert_eq!(ev.workspace.workspace_id, ws);
    let ev = orchestrator_until(&watcher, |e| matches!(e, Event::WorkspaceAttached(_))).await;
    let Event::WorkspaceAttached(ev) = ev else {
        unreachable!()
    };
    assert_eq!(ev.agent_id, created["agent_id"].as_str().unwrap());
    assert_eq!(ev.session_id, created["session_id"].as_str().unwrap());

    // Work: an untracked file is dirty; a live agent is refused first.
    std::fs::write(wt.join("login.rs"), "fn login() {}\n").unwrap();
    let st = status(&c, &ws).await;
    assert_eq!(st["dirty_files"], 1, "{st}");
    assert_eq!(st["missing"], false);
    assert_eq!(st["head_branch"], branch);
    assert_eq!(st["live_agents"].as_array().unwrap().len(), 1, "{st}");
    refused(&c, retire(&ws, None), WorkspaceConflictKind::Live).await;
    let ev = orchestrator_until(&watcher, |e| matches!(e, Event::WorkspaceConflict(_))).await;
    let Event::WorkspaceConflict(ev) = ev else {
        unreachable!()
    };
    assert_eq!(ev.workspace_id, ws);
    stop_agents(&c, &created).await;
    refused(
        &c,
        retire(&ws, Some("delete_confirmed")),
        WorkspaceConflictKind::Dirty,
    )
    .await;
    assert!(wt.join("login.rs").exists(), "uncommitted work untouched");

    // Commit: ahead by one, clean; unmerged → confirmation required.
    commit_all(&wt, "login");
    let st = status(&c, &ws).await;
    assert_eq!(
        (st["ahead"].as_u64(), st["behind"].as_u64()),
        (Some(1), Some(0)),
        "{st}"
    );
    assert_eq!(st["dirty_files"], 0);
    let tip = git(&wt, &["rev-parse", "HEAD"]);
    assert_eq!(st["branch_tip"], tip);
    let data = refused(
        &c,
        retire(&ws, Some("delete_if_merged")),
        WorkspaceConflictKind::ConfirmationRequired,
    )
    .await;
    assert_eq!(
        data.confirmation_disposition,
        Some(BranchDisposition::DeleteConfirmed)
    );
    assert_eq!(data.workspace_id, ws);
    assert!(branch_exists(&r, &branch) && wt.exists());

    // Merge into main in the main checkout: now provably merged, the branch goes.
    git(&r, &["merge", "-q", "--ff-only", &branch]);
    let done = ok(&c, retire(&ws, None)).await;
    assert_eq!(done["branch_deleted"], true, "{done}");
    assert_eq!(done["branch_tip"], tip);
    assert_eq!(done["restore"], format!("git branch {branch} {tip}"));
    assert_eq!(done["workspace"]["lifecycle"], "retired");
    assert!(!branch_exists(&r, &branch));
    assert!(!wt.exists());
    assert!(!git(&r, &["worktree", "list"]).contains(wt.to_str().unwrap()));
    let ev = orchestrator_until(&watcher, |e| matches!(e, Event::WorkspaceRetired(_))).await;
    let Event::WorkspaceRetired(ev) = ev else {
        unreachable!()
    };
    assert_eq!(ev.workspace.workspace_id, ws);
    // The durable record keeps the tip; the restore command works.
    let rec: Value = serde_json::from_slice(
        &std::fs::read(h.path().join("home/workspaces").join(format!("{ws}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(rec["recorded_tip"], tip);
    assert_eq!(rec["lifecycle"], "retired");
    // Its agent is archived with it: listed only on request, its session kept.
    let agents = ok(&c, json!({"type":"agent.list"})).await;
    let agent = &agents["agents"][0];
    assert_eq!(agent["agent_id"], created["agent_id"], "{agents}");
    assert_eq!(agent["archived"], true, "{agents}");
    assert!(
        h.path()
            .join("home/sessions")
            .join(created["session_id"].as_str().unwrap())
            .exists()
    );
    git(&r, &["branch", &branch, &tip]);
    assert!(branch_exists(&r, &branch));
    // Listing: retired ones only on request; retiring again is a no-op success.
    let l = ok(&c, json!({"type":"workspace.list"})).await;
    assert_eq!(l["repositories"], json!([]));
    let l = ok(&c, json!({"type":"workspace.list","include_retired":true})).await;
    assert_eq!(l["repositories"][0]["workspaces"][0]["workspace_id"], ws);
    let again = ok(&c, retire(&ws, None)).await;
    assert_eq!(again["already_retired"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unmerged_branch_is_deleted_only_when_confirmed_and_can_be_restored() {
    if !have_git() {
        return;
    }
    let h = home();
    let r = repo(h.path(), "project");
    let d = Daemon::start(&shard_home(h.path()), &[]);
    let s = empty_script(h.path());
    let c = d.client().await;
    let created = create(&c, &r, &s, json!({"branch":"feature/x"})).await;
    let ws = created["workspace"]["workspace_id"]
        .as_str()
        .unwrap()
        .to_string();
    let wt = PathBuf::from(created["workspace"]["cwd"].as_str().unwrap());
    stop_agents(&c, &created).await;
    std::fs::write(wt.join("work.txt"), "precious\n").unwrap();
    commit_all(&wt, "precious work");
    let tip = git(&wt, &["rev-parse", "HEAD"]);
    refused(
        &c,
        retire(&ws, None),
        WorkspaceConflictKind::ConfirmationRequired,
    )
    .await;
    assert!(branch_exists(&r, "feature/x"), "never deleted unconfirmed");
    let done = ok(&c, retire(&ws, Some("delete_confirmed"))).await;
    assert_eq!(done["branch_deleted"], true);
    assert_eq!(done["branch_tip"], tip);
    assert!(!branch_exists(&r, "feature/x"));
    // The response says how to restore; doing so brings the commit back.
    let restore = done["restore"].as_str().unwrap();
    let args: Vec<&str> = restore.split_whitespace().skip(1).collect();
    git(&r, &args);
    assert_eq!(git(&r, &["show", "feature/x:work.txt"]), "precious");
}

/// A commit the branch once held but no longer points at (reset away, amended) lives
/// only in the branch's reflog, which deleting the branch deletes: not merged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_only_the_reflog_holds_keeps_the_branch_unless_confirmed() {
    if !have_git() {
        return;
    }
    let h = home();
    let r = repo(h.path(), "project");
    let d = Daemon::start(&shard_home(h.path()), &[]);
    let s = empty_script(h.path());
    let c = d.client().await;
    for detached in [false, true] {
        let created = create(&c, &r, &s, json!({})).await;
        let ws = created["workspace"]["workspace_id"]
            .as_str()
            .unwrap()
            .to_string();
        let branch = created["workspace"]["branch"].as_str().unwrap().to_string();
        let wt = PathBuf::from(created["workspace"]["cwd"].as_str().unwrap());
        stop_agents(&c, &created).await;
        if detached {
            // Committed on a detached HEAD, then back on the branch: only HEAD's reflog.
            git(&wt, &["checkout", "-q", "--detach"]);
        }
        std::fs::write(wt.join("work.txt"), "precious\n").unwrap();
        commit_all(&wt, "precious work");
        let lost = git(&wt, &["rev-parse", "HEAD"]);
        if detached {
            git(&wt, &["checkout", "-q", &branch]);
        } else {
            git(&wt, &["reset", "-q", "--hard", "HEAD~1"]);
        }
        // The tip is merged (it is main's commit); the reflogs are not.
        assert_eq!(
            git(&wt, &["rev-parse", "HEAD"]),
            git(&r, &["rev-parse", "main"])
        );
        let data = refused(
            &c,
            retire(&ws, None),
            WorkspaceConflictKind::ConfirmationRequired,
        )
        .await;
        assert!(data.reason.contains("reflog"), "{data:?}");
        assert!(branch_exists(&r, &branch), "never deleted unconfirmed");
        assert_eq!(git(&r, &["cat-file", "-t", &lost]), "commit");
        ok(&c, retire(&ws, Some("keep"))).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_retires_without_deleting_and_tracked_edits_are_dirty_but_ignored_files_are_not() {
    if !have_git() {
        return;
    }
    let h = home();
    let r = repo(h.path(), "project");
    let d = Daemon::start(&shard_home(h.path()), &[]);
    let s = empty_script(h.path());
    let c = d.client().await;
    let created = create(&c, &r, &s, json!({})).await;
    let ws = created["workspace"]["workspace_id"]
        .as_str()
        .unwrap()
        .to_string();
    let branch = created["workspace"]["branch"].as_str().unwrap().to_string();
    let wt = PathBuf::from(created["workspace"]["cwd"].as_str().unwrap());
    stop_agents(&c, &created).await;
    std::fs::create_dir_all(wt.join("target")).unwrap();
    std::fs::write(wt.join("target/build.o"), "x").unwrap();
    assert_eq!(
        status(&c, &ws).await["dirty_files"],
        0,
        "ignored files are not dirty"
    );
    std::fs::write(wt.join("README.md"), "edited\n").unwrap();
    assert_eq!(status(&c, &ws).await["dirty_files"], 1);
    refused(&c, retire(&ws, Some("keep")), WorkspaceConflictKind::Dirty).await;
    assert_eq!(
        std::fs::read_to_string(wt.join("README.md")).unwrap(),
        "edited\n"
    );
    git(&wt, &["checkout", "--", "README.md"]);
    let done = ok(&c, retire(&ws, Some("keep"))).await;
    assert_eq!(done["branch_deleted"], false);
    assert!(done.get("restore").is_none(), "{done}");
    assert!(branch_exists(&r, &branch));
    assert!(!wt.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktree_removed_by_hand_is_missing_and_never_recreated() {
    if !have_git() {
        return;
    }
    let h = home();
    let r = repo(h.path(), "project");
    let d = Daemon::start(&shard_home(h.path()), &[]);
    let s = empty_script(h.path());
    let c = d.client().await;
    let created = create(&c, &r, &s, json!({})).await;
    let ws = created["workspace"]["workspace_id"]
        .as_str()
        .unwrap()
        .to_string();
    let branch = created["workspace"]["branch"].as_str().unwrap().to_string();
    let wt = PathBuf::from(created["workspace"]["cwd"].as_str().unwrap());
    stop_agents(&c, &created).await;
    commit_all_file(&wt, "kept.txt");
    std::fs::remove_dir_all(&wt).unwrap();
    let st = status(&c, &ws).await;
    assert_eq!(st["missing"], true, "{st}");
    assert!(st.get("dirty_files").is_none());
    let data = refused(
        &c,
        json!({"type":"workspace.attach","workspace_id":ws,"provider":"scripted","model":s}),
        WorkspaceConflictKind::MissingAuthority,
    )
    .await;
    assert_eq!(data.workspace_id, ws);
    assert!(!wt.exists(), "never recreated");
    // The branch with its commit lives in the repository: an unmerged one still needs
    // confirmation; `keep` retires and cleans the stale worktree entry.
    refused(
        &c,
        retire(&ws, None),
        WorkspaceConflictKind::ConfirmationRequired,
    )
    .await;
    ok(&c, retire(&ws, Some("keep"))).await;
    assert!(branch_exists(&r, &branch));
    assert!(!wt.exists());
}

fn commit_all_file(dir: &Path, name: &str) {
    std::fs::write(dir.join(name), "data\n").unwrap();
    commit_all(dir, name);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workspaces_are_grouped_by_repository_and_survive_a_daemon_restart() {
    if !have_git() {
        return;
    }
    let h = home();
    let a = repo(h.path(), "alpha");
    let b = repo(h.path(), "beta");
    let s = empty_script(h.path());
    let shard_home = shard_home(h.path());
    let (a1, a2, b1);
    {
        let mut d = Daemon::start(&shard_home, &[]);
        let c = d.client().await;
        let x = create(&c, &a, &s, json!({})).await;
        // Created from a subdirectory of the checkout: the same repository.
        std::fs::create_dir_all(a.join("sub")).unwrap();
        let y = create(&c, &a.join("sub"), &s, json!({})).await;
        let z = create(&c, &b, &s, json!({})).await;
        a1 = x["workspace"].clone();
        a2 = y["workspace"].clone();
        b1 = z["workspace"].clone();
        assert_eq!(a2["repository_cwd"], a.display().to_string());
        let l = ok(&c, json!({"type":"workspace.list"})).await;
        let groups = l["repositories"].as_array().unwrap();
        assert_eq!(groups.len(), 2, "{l}");
        assert_eq!(groups[0]["repository_cwd"], a.display().to_string());
        let ids: Vec<&Value> = groups[0]["workspaces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| &w["workspace_id"])
            .collect();
        assert_eq!(ids, [&a1["workspace_id"], &a2["workspace_id"]]);
        assert_eq!(
            groups[1]["workspaces"][0]["workspace_id"],
            b1["workspace_id"]
        );
        // Narrowed by cwd: a workspace's own directory names its repository.
        let l = ok(&c, json!({"type":"workspace.list","cwd":a2["cwd"]})).await;
        assert_eq!(l["repositories"].as_array().unwrap().len(), 1);
        assert_eq!(
            l["repositories"][0]["repository_cwd"],
            a.display().to_string()
        );
        // Uncommitted work in one, a commit in another, then the daemon goes away.
        let wt1 = PathBuf::from(a1["cwd"].as_str().unwrap());
        std::fs::write(wt1.join("draft.txt"), "not yet committed\n").unwrap();
        commit_all_file(Path::new(b1["cwd"].as_str().unwrap()), "b.txt");
        let r = call(&c, json!({"type":"daemon.shutdown","force":true})).await;
        assert_eq!(r["success"], true);
        assert!(d.wait_exit().success());
    }
    let d = Daemon::start(&shard_home, &[]);
    let c = d.client().await;
    let l = ok(&c, json!({"type":"workspace.list"})).await;
    let n: usize = l["repositories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["workspaces"].as_array().unwrap().len())
        .sum();
    assert_eq!(n, 3, "{l}");
    let ws1 = a1["workspace_id"].as_str().unwrap();
    let st = status(&c, ws1).await;
    assert_eq!(st["dirty_files"], 1, "{st}");
    assert_eq!(st["live_agents"], json!([]), "no Runtime after a restart");
    refused(
        &c,
        retire(ws1, Some("delete_confirmed")),
        WorkspaceConflictKind::Dirty,
    )
    .await;
    assert!(
        Path::new(a1["cwd"].as_str().unwrap())
            .join("draft.txt")
            .exists(),
        "uncommitted work survived"
    );
    let wsb = b1["workspace_id"].as_str().unwrap();
    assert_eq!(status(&c, wsb).await["ahead"], 1);
    refused(
        &c,
        retire(wsb, None),
        WorkspaceConflictKind::ConfirmationRequired,
    )
    .await;
    // A fresh agent in an existing workspace, after the restart.
    let att = ok(
        &c,
        json!({"type":"workspace.attach","workspace_id":a2["workspace_id"],
            "provider":"scripted","model":s}),
    )
    .await;
    assert_eq!(att["workspace"]["agent_ids"].as_array().unwrap().len(), 2);
    assert_eq!(att["workspace"]["cwd"], a2["cwd"]);
    assert!(att["session_id"].as_str().unwrap().starts_with("sess-"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pre_commit_hook_runs_and_a_detached_main_checkout_has_no_integration_target() {
    if !have_git() {
        return;
    }
    let h = home();
    let r = repo(h.path(), "project");
    let hook = r.join(".git/hooks/pre-commit");
    let marker = h.path().join("hook-ran");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\necho ran >> '{}'\nif git diff --cached | grep -q FORBIDDEN; then exit 1; fi\n",
            marker.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let head = git(&r, &["rev-parse", "HEAD"]);
    git(&r, &["checkout", "-q", "--detach"]);
    let d = Daemon::start(&shard_home(h.path()), &[]);
    let s = empty_script(h.path());
    let c = d.client().await;
    let created = create(&c, &r, &s, json!({})).await;
    let w = &created["workspace"];
    assert!(w.get("integration_target").is_none(), "{w}");
    let ws = w["workspace_id"].as_str().unwrap().to_string();
    let wt = PathBuf::from(w["cwd"].as_str().unwrap());
    assert_eq!(git(&wt, &["rev-parse", "HEAD"]), head);
    stop_agents(&c, &created).await;
    // The user's hook applies in the worktree.
    std::fs::write(wt.join("bad.txt"), "FORBIDDEN\n").unwrap();
    git(&wt, &["add", "bad.txt"]);
    assert!(
        !git_raw(&wt, &["commit", "-q", "-m", "bad"])
            .status
            .success()
    );
    assert!(marker.exists(), "the pre-commit hook ran");
    refused(&c, retire(&ws, None), WorkspaceConflictKind::Dirty).await;
    std::fs::write(wt.join("bad.txt"), "fine\n").unwrap();
    commit_all(&wt, "good");
    let st = status(&c, &ws).await;
    assert!(st.get("ahead").is_none(), "no target, no counts: {st}");
    // Nothing to prove a merge against: confirmation required.
    let data = refused(
        &c,
        retire(&ws, None),
        WorkspaceConflictKind::ConfirmationRequired,
    )
    .await;
    assert!(data.reason.contains("integration target"), "{data:?}");
    // An explicit integration target works on a detached main checkout.
    let second = create(&c, &r, &s, json!({"integration_target":"main"})).await;
    assert_eq!(second["workspace"]["integration_target"], "main");
    stop_agents(&c, &second).await;
    let id2 = second["workspace"]["workspace_id"].as_str().unwrap();
    let done = ok(&c, retire(id2, None)).await;
    assert_eq!(
        done["branch_deleted"], true,
        "an untouched branch is merged: {done}"
    );
    ok(&c, retire(&ws, Some("keep"))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsafe_busy_and_missing_authority_are_refused() {
    if !have_git() {
        return;
    }
    let h = home();
    let r = repo(h.path(), "project");
    let d = Daemon::start(&shard_home(h.path()), &[]);
    let slow = script(
        h.path(),
        "slow.json",
        json!([{"steps":[{"text":"working"},{"delay_ms":60000},{"text":"late"}]}]),
    );
    let c = d.client().await;
    // Busy: an agent mid-turn.
    let busy = create(&c, &r, &slow, json!({})).await;
    let agent = busy["agent_id"].as_str().unwrap().to_string();
    let wsb = busy["workspace"]["workspace_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, mut e) = c.attach(&agent, AttachRole::Interactive).await.unwrap();
    c.call(prompt(&agent, "go")).await.unwrap();
    until(&mut e, |e| matches!(e, Event::MessageDelta(_))).await;
    refused(&c, retire(&wsb, Some("keep")), WorkspaceConflictKind::Busy).await;
    assert_eq!(status(&c, &wsb).await["busy_agents"], json!([agent]));
    stop_agents(&c, &busy).await;

    // Unsafe: the worktree moved to another branch (commits there could be lost), or
    // is locked.
    let s = empty_script(h.path());
    let u = create(&c, &r, &s, json!({})).await;
    let wsu = u["workspace"]["workspace_id"].as_str().unwrap().to_string();
    let wt = PathBuf::from(u["workspace"]["cwd"].as_str().unwrap());
    stop_agents(&c, &u).await;
    git(&wt, &["switch", "-q", "-c", "elsewhere"]);
    refused(
        &c,
        retire(&wsu, Some("keep")),
        WorkspaceConflictKind::Unsafe,
    )
    .await;
    let branch = u["workspace"]["branch"].as_str().unwrap().to_string();
    git(&wt, &["switch", "-q", &branch]);
    git(&r, &["worktree", "lock", wt.to_str().unwrap()]);
    refused(
        &c,
        retire(&wsu, Some("keep")),
        WorkspaceConflictKind::Unsafe,
    )
    .await;
    assert!(wt.exists());
    git(&r, &["worktree", "unlock", wt.to_str().unwrap()]);
    ok(&c, retire(&wsu, None)).await;

    // Missing authority: the repository's main checkout is gone.
    let m = create(&c, &r, &s, json!({})).await;
    let wsm = m["workspace"]["workspace_id"].as_str().unwrap().to_string();
    stop_agents(&c, &m).await;
    let moved = h.path().join("moved");
    std::fs::rename(&r, &moved).unwrap();
    refused(
        &c,
        retire(&wsm, Some("keep")),
        WorkspaceConflictKind::MissingAuthority,
    )
    .await;
    assert!(Path::new(m["workspace"]["cwd"].as_str().unwrap()).exists());
    std::fs::rename(&moved, &r).unwrap();
    ok(&c, retire(&wsm, Some("keep"))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_touch_nothing() {
    if !have_git() {
        return;
    }
    let h = home();
    let r = repo(h.path(), "project");
    let plain = h.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let d = Daemon::start(&shard_home(h.path()), &[]);
    let s = empty_script(h.path());
    let c = d.client().await;
    let bad = |cmd: Value| {
        let c = &c;
        async move {
            let r = call(c, cmd.clone()).await;
            assert_eq!(r["success"], false, "{cmd} → {r}");
            r["error"]["code"].as_str().unwrap().to_string()
        }
    };
    let base = json!({"type":"workspace.create","cwd":plain.display().to_string(),
        "provider":"scripted","model":s});
    assert_eq!(bad(base).await, "INVALID_REQUEST");
    let mut cmd = json!({"type":"workspace.create","cwd":r.display().to_string(),
        "provider":"scripted","model":s});
    cmd["base_ref"] = json!("no-such-ref");
    assert_eq!(bad(cmd.clone()).await, "INVALID_REQUEST");
    cmd["base_ref"] = json!("HEAD");
    cmd["branch"] = json!("main");
    assert_eq!(bad(cmd.clone()).await, "INVALID_REQUEST", "existing branch");
    cmd["branch"] = json!("bad..name");
    assert_eq!(bad(cmd.clone()).await, "INVALID_REQUEST");
    cmd["branch"] = json!("ok-name");
    cmd["integration_target"] = json!("nope");
    assert_eq!(bad(cmd.clone()).await, "INVALID_REQUEST");
    // A refused agent (unknown mode) rolls the worktree and branch back.
    cmd.as_object_mut().unwrap().remove("integration_target");
    cmd["mode"] = json!("no-such-mode");
    assert_eq!(bad(cmd).await, "INVALID_REQUEST");
    assert!(!branch_exists(&r, "ok-name"));
    assert_eq!(git(&r, &["worktree", "list"]).lines().count(), 1);
    let l = ok(&c, json!({"type":"workspace.list","include_retired":true})).await;
    assert_eq!(l["repositories"], json!([]));
    assert_eq!(
        bad(json!({"type":"workspace.status","workspace_id":"ws-01J00000000000000000000000"}))
            .await,
        "NOT_FOUND"
    );
    assert_eq!(
        bad(json!({"type":"workspace.list","version":2})).await,
        "INVALID_REQUEST"
    );
}

/// `shard ws …` against the daemon of `home`.
fn ws_cli(home: &Path, args: &[&str]) -> (bool, String, String) {
    let out = StdCommand::new(env!("CARGO_BIN_EXE_shard"))
        .arg("ws")
        .args(args)
        .env("SHARD_HOME", home)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_line_creates_lists_shows_and_retires() {
    if !have_git() {
        return;
    }
    let h = home();
    let r = repo(h.path(), "project");
    let sh = shard_home(h.path());
    let _d = Daemon::start(&sh, &[]);
    let s = empty_script(h.path());
    let repo_arg = r.display().to_string();
    let (ok1, out, err) = ws_cli(
        &sh,
        &[
            "create", "--cwd", &repo_arg, "--script", &s, "--label", "cli work",
        ],
    );
    assert!(ok1, "{err}");
    let first: Vec<&str> = out.lines().next().unwrap().split('\t').collect();
    let (ws, agent, wt) = (first[0], first[1], PathBuf::from(first[2]));
    assert!(
        ws.starts_with("ws-") && agent.starts_with("agent-"),
        "{out}"
    );
    assert!(out.contains("shard attach"), "{out}");
    let (_, out, _) = ws_cli(&sh, &["list"]);
    assert!(out.contains(&repo_arg) && out.contains(ws), "{out}");
    let (_, out, _) = ws_cli(&sh, &["list", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["repositories"][0]["workspaces"][0]["workspace_id"], ws);
    commit_all_file(&wt, "cli.txt");
    let (_, out, _) = ws_cli(&sh, &["status", ws]);
    assert!(out.contains("ahead 1, behind 0 of main"), "{out}");
    assert!(out.contains("dirty     0"), "{out}");
    let (ok2, _, err) = ws_cli(&sh, &["retire", ws]);
    assert!(!ok2);
    assert!(err.contains("live"), "{err}");
    let kill = StdCommand::new(env!("CARGO_BIN_EXE_shard"))
        .args(["kill", "--force", agent])
        .env("SHARD_HOME", &sh)
        .output()
        .unwrap();
    assert!(kill.status.success());
    let (ok3, _, err) = ws_cli(&sh, &["retire", ws]);
    assert!(!ok3);
    assert!(err.contains("--delete-confirmed"), "{err}");
    let (ok4, out, err) = ws_cli(&sh, &["retire", ws, "--delete-confirmed"]);
    assert!(ok4, "{err}");
    assert!(
        out.contains("restore it with: git branch shard/cli-work"),
        "{out}"
    );
    assert!(!wt.exists());
}

/// A repository of `n` small files in directories of 100, committed once.
fn big_repo(parent: &Path, name: &str, n: usize) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    for i in 0..n {
        let d = dir.join(format!("d{:04}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&d).unwrap();
        }
        std::fs::write(d.join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
    }
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "many files"]);
    std::fs::canonicalize(dir).unwrap()
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The benchmark (docs/performance.md): `workspace.create` on a 100,000-file
/// repository against `git worktree add` alone, and `workspace.status` with 50
/// workspaces. Run with `cargo test -p shard-cli --test cli bench_workspaces -- --ignored
/// --nocapture` (`SHARD_BENCH_FILES` changes the size).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run on purpose"]
async fn bench_workspaces() {
    if !have_git() {
        return;
    }
    let n: usize = std::env::var("SHARD_BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let h = home();
    let t = std::time::Instant::now();
    let big = big_repo(h.path(), "big", n);
    eprintln!(
        "made a {n}-file repository in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let sh = shard_home(h.path());
    let d = Daemon::start(&sh, &[]);
    let s = empty_script(h.path());
    let c = d.client().await;
    let plain_root = h.path().join("plain");
    std::fs::create_dir_all(&plain_root).unwrap();
    let mut plain = Vec::new();
    let mut create_times = Vec::new();
    for i in 0..3 {
        let p = plain_root.join(format!("w{i}"));
        let t = std::time::Instant::now();
        git(
            &big,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                &format!("plain{i}"),
                p.to_str().unwrap(),
                "HEAD",
            ],
        );
        plain.push(ms(t.elapsed()));
        let t = std::time::Instant::now();
        let created = create(&c, &big, &s, json!({})).await;
        create_times.push(ms(t.elapsed()));
        stop_agents(&c, &created).await;
    }
    plain.sort_by(f64::total_cmp);
    create_times.sort_by(f64::total_cmp);
    eprintln!(
        "git worktree add: median {:.0} ms {plain:.0?}; workspace.create: median {:.0} ms {create_times:.0?}; ratio {:.2}",
        plain[1],
        create_times[1],
        create_times[1] / plain[1]
    );

    let small = repo(h.path(), "small");
    let mut ids = Vec::new();
    for _ in 0..50 {
        let created = create(&c, &small, &s, json!({})).await;
        stop_agents(&c, &created).await;
        ids.push(
            created["workspace"]["workspace_id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    let mut each = Vec::new();
    for id in &ids {
        let t = std::time::Instant::now();
        status(&c, id).await;
        each.push(ms(t.elapsed()));
    }
    each.sort_by(f64::total_cmp);
    let t = std::time::Instant::now();
    let all = futures::future::join_all(ids.iter().map(|id| status(&c, id))).await;
    let together = ms(t.elapsed());
    assert_eq!(all.len(), 50);
    let t = std::time::Instant::now();
    ok(&c, json!({"type":"workspace.list"})).await;
    let list = ms(t.elapsed());
    eprintln!(
        "workspace.status with 50 workspaces: one at a time p50 {:.1} ms, max {:.1} ms, all 50 sequentially {:.0} ms; all 50 at once {together:.0} ms; workspace.list {list:.1} ms",
        each[25],
        each[49],
        each.iter().sum::<f64>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_commits_in_its_own_worktree() {
    if !have_git() {
        return;
    }
    let h = home();
    let r = repo(h.path(), "project");
    let d = Daemon::start(&shard_home(h.path()), &[]);
    let cmd = "echo agent > agent.txt && git add agent.txt && git -c user.name=A -c user.email=a@example.com commit -q -m agent-work && echo committed";
    let s = script(h.path(), "s.json", super::daemon::bash_turns(cmd));
    let c = d.client().await;
    let created = create(&c, &r, &s, json!({})).await;
    let agent = created["agent_id"].as_str().unwrap().to_string();
    let ws = created["workspace"]["workspace_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, mut e) = c.attach(&agent, AttachRole::Interactive).await.unwrap();
    c.call(prompt(&agent, "commit")).await.unwrap();
    let (req, _) = until(&mut e, |e| matches!(e, Event::PermissionRequest(_))).await;
    let Event::PermissionRequest(req) = req else {
        unreachable!()
    };
    ok(&c, json!({"type":"permission_response","agent_id":agent,"request_id":req.request_id,"decision":"allow"})).await;
    let (res, _) = until(&mut e, |e| matches!(e, Event::ToolResult(_))).await;
    let Event::ToolResult(res) = res else {
        unreachable!()
    };
    assert!(!res.is_error, "{res:?}");
    let st = status(&c, &ws).await;
    assert_eq!(
        st["ahead"], 1,
        "the agent's commit is on the workspace branch: {st} {res:?}"
    );
    assert_eq!(st["dirty_files"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_root_holds_the_worktrees() {
    if !have_git() {
        return;
    }
    let h = home();
    let r = repo(h.path(), "project");
    let trees = h.path().join("trees");
    let sh = shard_home(h.path());
    std::fs::write(
        sh.join("config.toml"),
        format!("[workspaces]\nroot = \"{}\"\n", trees.display()),
    )
    .unwrap();
    // The daemon and the agents it starts both accept the section.
    let d = Daemon::start(&sh, &[]);
    let s = empty_script(h.path());
    let c = d.client().await;
    let created = create(&c, &r, &s, json!({})).await;
    let wt = PathBuf::from(created["workspace"]["cwd"].as_str().unwrap());
    assert!(
        wt.starts_with(trees.canonicalize().unwrap()),
        "{} is not under {}",
        wt.display(),
        trees.display()
    );
    assert!(wt.join("README.md").exists());
    stop_agents(&c, &created).await;
}

/// A commit only the worktree's HEAD holds (made detached, then the directory deleted,
/// every reflog expired) is never lost by retiring: refused until a ref holds it; and
/// retiring removes only its own worktree entry, never another worktree whose directory
/// is gone too (`git worktree prune` would, with the commit its HEAD holds).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retire_never_loses_a_commit_only_a_gone_worktrees_head_holds() {
    if !have_git() {
        return;
    }
    let h = home();
    let r = repo(h.path(), "project");
    let d = Daemon::start(&shard_home(h.path()), &[]);
    let s = empty_script(h.path());
    let c = d.client().await;
    let created = create(&c, &r, &s, json!({})).await;
    stop_agents(&c, &created).await;
    let ws = created["workspace"]["workspace_id"]
        .as_str()
        .unwrap()
        .to_string();
    let wt = PathBuf::from(created["workspace"]["cwd"].as_str().unwrap());
    git(&wt, &["checkout", "-q", "--detach"]);
    commit_all_file(&wt, "detached.txt");
    let lone = git(&wt, &["rev-parse", "HEAD"]);
    // The user's own worktree, also detached with a commit of its own, also deleted.
    let other = h.path().join("other");
    git(
        &r,
        &["worktree", "add", "-q", "--detach", other.to_str().unwrap()],
    );
    commit_all_file(&other, "other.txt");
    let theirs = git(&other, &["rev-parse", "HEAD"]);
    std::fs::remove_dir_all(&wt).unwrap();
    std::fs::remove_dir_all(&other).unwrap();
    git(&r, &["reflog", "expire", "--all", "--expire=now"]);
    let held = |commit: &str| {
        !git(&r, &["for-each-ref", "--contains", commit]).is_empty()
            || git(&r, &["worktree", "list", "--porcelain"]).contains(commit)
    };
    for disposition in ["keep", "delete_if_merged", "delete_confirmed"] {
        let data = refused(
            &c,
            retire(&ws, Some(disposition)),
            WorkspaceConflictKind::Unsafe,
        )
        .await;
        assert!(data.reason.contains(&lone), "{data:?}");
        assert!(held(&lone), "{disposition}: the commit was lost");
    }
    git(&r, &["branch", "rescued", &lone]);
    ok(&c, retire(&ws, Some("keep"))).await;
    assert!(held(&lone));
    assert!(
        held(&theirs),
        "another worktree's HEAD was pruned with its commit"
    );
    assert!(git(&r, &["worktree", "list"]).contains(other.to_str().unwrap()));
}
