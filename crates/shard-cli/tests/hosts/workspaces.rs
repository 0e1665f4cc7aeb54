//! Workspaces on a host: `workspace.create` with `host` makes the worktree there, the
//! agent runs there in it, and every git of the workspace — create, status, retire —
//! runs on the host through the host's link (docs/hosts.md). The host's `PATH` has a
//! `git` that logs each run (its arguments and the names of its environment) and runs
//! the real one; the daemon's `PATH` starts with a `git` that logs and fails, so a git
//! run on the daemon's machine would show.

use super::*;

/// The logging `git`s of one test.
struct Gits {
    /// Runs of the host's git: `ENV NAMES|ARGS` per line.
    host_log: PathBuf,
    /// Runs of a git on the daemon's machine (there must be none).
    local_log: PathBuf,
    /// The folder holding the daemon's failing git, first on its PATH.
    local_bin: PathBuf,
}

/// The real git, for the host's logging one to run.
fn real_git() -> String {
    let out = StdCommand::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The host's `PATH` in a test whose directory is `dir`: the logging git first.
fn host_path(dir: &Path) -> String {
    format!(
        "{}:/usr/local/bin:/usr/bin:/bin",
        dir.join("hbin").display()
    )
}

/// Writes both gits into `dir`.
fn gits(dir: &Path) -> Gits {
    let g = Gits {
        host_log: dir.join("host-git.log"),
        local_log: dir.join("local-git.log"),
        local_bin: dir.join("lbin"),
    };
    executable(
        &dir.join("hbin/git"),
        &format!(
            "#!/bin/sh\ni=0; cfg=''\nwhile [ \"$i\" -lt \"${{GIT_CONFIG_COUNT:-0}}\" ]; do eval \"cfg=\\\"\\$cfg \\$GIT_CONFIG_KEY_$i=\\$GIT_CONFIG_VALUE_$i;\\\"\"; i=$((i+1)); done\nprintf '%s|%s|%s\\n' \"$(env | cut -d= -f1 | sort | tr '\\n' ' ')\" \"$*\" \"$cfg\" 2>/dev/null >> '{}'\nexec '{}' \"$@\"\n",
            g.host_log.display(),
            real_git()
        ),
    );
    executable(
        &g.local_bin.join("git"),
        &format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\necho 'not this machine' >&2\nexit 1\n",
            g.local_log.display()
        ),
    );
    g
}

impl Gits {
    /// The daemon's runs of git on the host (they start with `--no-pager`; an agent's own
    /// git in its tool runs the logging git too). Each had every hardening setting and
    /// none of the session's environment; none ran on the daemon's machine.
    fn daemon_runs_on_host(&self) -> Vec<String> {
        assert!(
            !self.local_log.exists(),
            "git ran on the daemon's machine: {}",
            std::fs::read_to_string(&self.local_log).unwrap_or_default()
        );
        let log = std::fs::read_to_string(&self.host_log).unwrap_or_default();
        // Exactly what git.rs keeps is its unit test's to check; here, that what the
        // host's session had does not reach git.
        let session_only = [
            "SSH_CONNECTION",
            "SSH_CLIENT",
            "SHELL",
            "MAIL",
            "PYENV_ROOT",
        ];
        let runs: Vec<String> = log
            .lines()
            .filter_map(|l| {
                let (env, rest) = l.split_once('|')?;
                let (args, cfg) = rest.rsplit_once('|')?;
                Some((env, args, cfg))
            })
            .filter(|(_, args, _)| args.starts_with("--no-pager"))
            .map(|(env, args, cfg)| {
                let names: Vec<&str> = env.split_whitespace().collect();
                assert!(names.contains(&"GIT_TERMINAL_PROMPT"), "{env}");
                for name in session_only {
                    assert!(!names.contains(&name), "{name} reached git: {env}");
                }
                // Every setting whole in the environment (GIT_CONFIG_KEY_n/VALUE_n).
                for setting in [
                    " core.hooksPath=/dev/null;",
                    " core.fsmonitor=false;",
                    " diff.external=;",
                    " protocol.allow=never;",
                ] {
                    assert!(cfg.contains(setting), "{setting} missing: {cfg} ({args})");
                }
                assert!(!args.contains(" -c "), "{args}");
                args.to_string()
            })
            .collect();
        assert!(!runs.is_empty(), "no git ran on the host: {log}");
        runs
    }
}

/// Runs the real git in `dir` (the test acts on the host's files as a user there would).
fn git(dir: &Path, args: &[&str]) -> String {
    let out = StdCommand::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=T", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A repository at `dir` with one commit on `main`.
fn repo(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("README.md"), "hello\n").unwrap();
    git(dir, &["add", "README.md"]);
    git(dir, &["commit", "-q", "-m", "first"]);
    dir.to_path_buf()
}

fn branch_exists(repo: &Path, branch: &str) -> bool {
    StdCommand::new("git")
        .arg("-C")
        .arg(repo)
        .args(["rev-parse", "--verify", "--quiet"])
        .arg(format!("refs/heads/{branch}"))
        .output()
        .unwrap()
        .status
        .success()
}

/// An `ssh` host whose git logs, and a daemon whose own git would fail.
fn ssh_git_world() -> Option<(World, Gits, Daemon)> {
    let w = World::with_sshd_config(None, |dir| format!("SetEnv PATH={}\n", host_path(dir)))?;
    let g = gits(w.dir.path());
    w.ssh_host(SHARD, "");
    let d = Daemon::start_path(&w.home(), &[], Some(&g.local_bin));
    Some((w, g, d))
}

fn ws(v: Value) -> Command {
    serde_json::from_value(v).unwrap()
}

async fn ok(c: &Client, v: Value) -> Value {
    c.call(ws(v)).await.unwrap().unwrap_or(Value::Null)
}

async fn fails(c: &Client, v: Value) -> String {
    let e = c.call(ws(v)).await.unwrap_err().to_string();
    assert!(!e.contains('\n'), "one line: {e}");
    e
}

/// `workspace.create` on host box of the repository at `cwd`, the agent scripted by `script`.
fn create_on_box(cwd: &Path, script: &str, extra: Value) -> Value {
    let mut v = json!({
        "type": "workspace.create", "cwd": cwd.display().to_string(), "host": "box",
        "provider": "scripted", "model": script
    });
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

/// Nothing of a refused create: no record with the daemon, no worktree on the host.
fn nothing_made(w: &World) {
    let records = std::fs::read_dir(w.home().join("workspaces")).map_or(0, |r| r.count());
    assert_eq!(records, 0, "no workspace record");
    let worktrees = std::fs::read_dir(w.rhome().join("workspaces")).map_or(0, |r| r.count());
    assert_eq!(worktrees, 0, "no worktree on the host");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_on_a_host_runs_its_git_and_its_agent_there() {
    let Some((mut w, g, d)) = ssh_git_world() else {
        return;
    };
    let r = repo(&w.work().join("project"));
    let cmd = "pwd > here.txt && git add here.txt && git -c user.name=A -c user.email=a@example.com commit -q -m agent-work && echo committed";
    let s = w.script(
        "s.json",
        json!([
            {"steps":[{"tool_call":{"id":"b1","name":"bash","args":{"command":cmd}}}]},
            {"steps":[{"text":"done"}]}
        ]),
    );
    let c = d.client().await;
    let created = ok(&c, create_on_box(&r, &s, json!({"label": "Fix login"}))).await;
    let info = &created["workspace"];
    assert_eq!(info["host"], "box", "{created}");
    assert_eq!(info["repository_cwd"], r.display().to_string());
    let id = info["workspace_id"].as_str().unwrap().to_string();
    let branch = info["branch"].as_str().unwrap().to_string();
    assert!(branch.starts_with("shard/fix-login"), "{branch}");
    // The worktree is on the host, under its SHARD_HOME; the branch is in its repository.
    let wt = PathBuf::from(info["cwd"].as_str().unwrap());
    assert!(wt.starts_with(w.rhome().join("workspaces")), "{wt:?}");
    assert!(wt.join("README.md").exists());
    assert!(branch_exists(&r, &branch));
    assert!(git(&r, &["worktree", "list"]).contains(wt.to_str().unwrap()));
    // The agent runs on the host, in the worktree.
    let agent = created["agent_id"].as_str().unwrap().to_string();
    let listed = c.list().await.unwrap();
    let a = listed.iter().find(|a| a.agent_id == agent).unwrap();
    assert_eq!(a.host.as_deref(), Some("box"));
    assert_eq!(a.cwd, wt.display().to_string());
    let (_, mut ev) = c.attach(&agent, AttachRole::Interactive).await.unwrap();
    c.call(prompt(&agent, "commit")).await.unwrap();
    let req = until(&mut ev, |v| v["type"] == "permission_request").await;
    let allow = json!({"type":"permission_response","agent_id":agent,"request_id":req["request_id"],"decision":"allow"});
    c.request(ws(allow)).await.unwrap();
    let result = until(&mut ev, |v| v["type"] == "tool_result").await;
    assert_eq!(result["is_error"], false, "{result}");
    assert_eq!(
        std::fs::read_to_string(wt.join("here.txt")).unwrap().trim(),
        wt.display().to_string(),
        "the agent's tool ran in the worktree"
    );
    // Status reads git on the host: the agent's commit is on the workspace branch.
    let st = ok(&c, json!({"type":"workspace.status","workspace_id":id})).await;
    assert_eq!(
        (st["ahead"].as_u64(), st["behind"].as_u64()),
        (Some(1), Some(0)),
        "{st}"
    );
    assert_eq!(st["dirty_files"], 0, "{st}");
    assert_eq!(st["head_branch"], branch.as_str());
    let tip = git(&wt, &["rev-parse", "HEAD"]);
    assert_eq!(st["branch_tip"], tip.as_str());
    // Listed with its host; a host's path is only matched with that host.
    let list = ok(
        &c,
        json!({"type":"workspace.list","cwd":r.display().to_string(),"host":"box"}),
    )
    .await;
    assert_eq!(list["repositories"][0]["host"], "box", "{list}");
    let here = ok(
        &c,
        json!({"type":"workspace.list","cwd":r.display().to_string()}),
    )
    .await;
    assert_eq!(here["repositories"], json!([]), "{here}");
    // Not merged: retiring with the branch needs confirmation; merged, it goes.
    ok(
        &c,
        json!({"type":"agent.kill","agent_id":agent,"force":true}),
    )
    .await;
    let e = fails(&c, json!({"type":"workspace.retire","workspace_id":id})).await;
    assert!(e.contains("not merged"), "{e}");
    git(&r, &["merge", "-q", "--ff-only", &branch]);
    let done = ok(&c, json!({"type":"workspace.retire","workspace_id":id})).await;
    assert_eq!(done["branch_deleted"], true, "{done}");
    assert_eq!(done["branch_tip"], tip.as_str());
    assert!(!wt.exists(), "the worktree is removed on the host");
    assert!(
        !branch_exists(&r, &branch),
        "the branch is deleted on the host"
    );
    assert!(!git(&r, &["worktree", "list"]).contains(wt.to_str().unwrap()));
    // Every one of those git runs was on the host, hardened.
    let runs = g.daemon_runs_on_host();
    for what in [
        "worktree add --no-checkout -b",
        "reset --hard",
        "status --porcelain=v2",
        "update-ref -d",
    ] {
        assert!(runs.iter().any(|r| r.contains(what)), "{what}: {runs:?}");
    }
    // The record keeps its host across a restart of the daemon.
    let record = std::fs::read_to_string(w.home().join(format!("workspaces/{id}.json"))).unwrap();
    assert!(record.contains("\"host\": \"box\""), "{record}");
    // A host that is down: the status says so in one line.
    let c2 = ok(&c, create_on_box(&r, &s, json!({}))).await;
    let id2 = c2["workspace"]["workspace_id"]
        .as_str()
        .unwrap()
        .to_string();
    w.sshd().stop();
    let e = fails(&c, json!({"type":"workspace.status","workspace_id":id2})).await;
    assert!(e.contains("host box"), "{e}");
}

/// A repository path, a branch and a label full of shell syntax reach git on the host as
/// literal arguments: nothing in them runs there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_syntax_in_paths_and_branch_names_runs_nothing_on_the_host() {
    let Some((w, g, d)) = ssh_git_world() else {
        return;
    };
    let pwned = w.dir.path().join("pwned");
    let p = pwned.display();
    let name = format!("it's \"q\" $(touch {p}-path) `touch {p}-tick`; touch {p}-semi & x");
    let r = repo(&w.work().join(&name));
    let branch = format!("x;touch$IFS{p}-branch$(touch$IFS{p}-sub)'q'\"`id`");
    let s = w.script("s.json", json!([]));
    let c = d.client().await;
    let label = format!("$(touch {p}-label)");
    let created = ok(
        &c,
        create_on_box(&r, &s, json!({"branch": branch, "label": label})),
    )
    .await;
    let info = &created["workspace"];
    assert_eq!(info["branch"], branch.as_str());
    assert_eq!(info["repository_cwd"], r.display().to_string());
    let wt = PathBuf::from(info["cwd"].as_str().unwrap());
    // The absolute paths in the name make folders: the worktree is named after the last.
    assert!(wt.ends_with(r.file_name().unwrap()), "{wt:?}");
    assert!(wt.join("README.md").exists());
    assert!(branch_exists(&r, &branch));
    let id = info["workspace_id"].as_str().unwrap().to_string();
    let st = ok(&c, json!({"type":"workspace.status","workspace_id":id})).await;
    assert_eq!(st["head_branch"], branch.as_str(), "{st}");
    ok(
        &c,
        json!({"type":"agent.kill","agent_id":created["agent_id"],"force":true}),
    )
    .await;
    let done = ok(
        &c,
        json!({"type":"workspace.retire","workspace_id":id,"branch_disposition":"delete_confirmed"}),
    )
    .await;
    assert_eq!(done["branch_deleted"], true, "{done}");
    assert!(!wt.exists() && !branch_exists(&r, &branch));
    g.daemon_runs_on_host();
    let ran: Vec<_> = std::fs::read_dir(w.dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("pwned"))
        .map(|e| e.file_name())
        .collect();
    assert!(ran.is_empty(), "shell syntax ran on the host: {ran:?}");
}

/// The host down, a directory that is no repository, an agent the host refuses, a
/// record that cannot be written: one line each, and nothing made — no record with the
/// daemon, no worktree or branch on the host. (Git missing there: the command host test.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_host_or_a_directory_without_a_repository_is_one_line_and_makes_nothing() {
    let Some((mut w, _g, d)) = ssh_git_world() else {
        return;
    };
    let r = repo(&w.work().join("project"));
    let s = w.script("s.json", json!([]));
    let c = d.client().await;
    let e = fails(&c, create_on_box(&w.work(), &s, json!({}))).await;
    assert!(
        e.contains("is not inside a git repository on host box"),
        "{e}"
    );
    let e = fails(&c, create_on_box(&w.work().join("nope"), &s, json!({}))).await;
    assert!(e.contains("is not a directory on host box"), "{e}");
    let mut other = create_on_box(&r, &s, json!({}));
    other["host"] = json!("nowhere");
    let e = fails(&c, other).await;
    assert!(e.contains("unknown host \"nowhere\""), "{e}");
    nothing_made(&w);
    // The agent refused by the host's Runtime: the worktree and branch made on the host
    // are taken back there.
    let e = fails(&c, create_on_box(&r, &s, json!({"mode": "nope"}))).await;
    assert!(e.contains("unknown mode `nope`"), "{e}");
    nothing_made(&w);
    assert_eq!(
        git(&r, &["branch", "--list", "shard/*"]),
        "",
        "no branch left"
    );
    // The record cannot be written: git is never asked to make the worktree.
    let _ = std::fs::remove_dir(w.home().join("workspaces"));
    std::fs::write(w.home().join("workspaces"), "not a folder").unwrap();
    let e = fails(&c, create_on_box(&r, &s, json!({}))).await;
    assert!(e.contains("could not record the workspace"), "{e}");
    std::fs::remove_file(w.home().join("workspaces")).unwrap();
    nothing_made(&w);
    assert_eq!(
        git(&r, &["worktree", "list"]).lines().count(),
        1,
        "no worktree"
    );
    w.sshd().stop();
    drop(c);
    drop(d);
    // A fresh daemon: its first connection to the host fails.
    let d = Daemon::start_path(&w.home(), &[], None);
    let c = d.client().await;
    let e = fails(&c, create_on_box(&r, &s, json!({}))).await;
    assert!(e.contains("host box"), "{e}");
    assert!(e.contains("refused") || e.contains("connect"), "{e}");
    nothing_made(&w);
    assert!(c.list().await.unwrap().is_empty(), "no agent");
    // The command line says the same, in one line.
    let out = StdCommand::new(SHARD)
        .args(["ws", "create", "--host", "box", "--cwd"])
        .arg(&r)
        .env("SHARD_HOME", w.home())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("host box"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    nothing_made(&w);
}

/// A `command` host (a container engine's `exec -i`, here a wrapper script): the same
/// workspace life through the prefix, and a host without git is one line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_host_runs_workspace_git_through_its_prefix() {
    let w = World::new();
    let g = gits(w.dir.path());
    let log = w.wrapper_host_path(Some(&host_path(w.dir.path())));
    let d = Daemon::start_path(&w.home(), &[], Some(&g.local_bin));
    let r = repo(&w.work().join("project"));
    let s = w.script("s.json", json!([]));
    let c = d.client().await;
    let created = ok(&c, create_on_box(&r, &s, json!({}))).await;
    let info = &created["workspace"];
    assert_eq!(info["host"], "box");
    let id = info["workspace_id"].as_str().unwrap().to_string();
    let wt = PathBuf::from(info["cwd"].as_str().unwrap());
    assert!(wt.starts_with(w.rhome().join("workspaces")), "{wt:?}");
    // A second agent in it: on the host too, in the same worktree.
    let attached = ok(
        &c,
        json!({"type":"workspace.attach","workspace_id":id,"provider":"scripted","model":s}),
    )
    .await;
    let second = attached["agent_id"].as_str().unwrap().to_string();
    let listed = c.list().await.unwrap();
    let a = listed.iter().find(|a| a.agent_id == second).unwrap();
    assert_eq!(a.host.as_deref(), Some("box"));
    assert_eq!(a.cwd, wt.display().to_string());
    std::fs::write(wt.join("new.txt"), "x\n").unwrap();
    let st = ok(&c, json!({"type":"workspace.status","workspace_id":id})).await;
    assert_eq!(st["dirty_files"], 1, "{st}");
    assert_eq!(st["live_agents"].as_array().unwrap().len(), 2, "{st}");
    for a in [&created["agent_id"], &attached["agent_id"]] {
        ok(&c, json!({"type":"agent.kill","agent_id":a,"force":true})).await;
    }
    let e = fails(&c, json!({"type":"workspace.retire","workspace_id":id})).await;
    assert!(e.contains("uncommitted or untracked"), "{e}");
    std::fs::remove_file(wt.join("new.txt")).unwrap();
    let done = ok(&c, json!({"type":"workspace.retire","workspace_id":id})).await;
    assert_eq!(done["branch_deleted"], true, "{done}");
    assert!(!wt.exists());
    g.daemon_runs_on_host();
    let through = std::fs::read_to_string(&log).unwrap();
    assert!(through.contains("sh -c exec env -i"), "{through}");
    drop(c);
    drop(d);
    // The same host without git: its PATH holds only what the shell needs.
    let bare = w.dir.path().join("nogit");
    std::fs::create_dir_all(&bare).unwrap();
    for tool in ["sh", "env", "cat"] {
        let real = StdCommand::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .unwrap();
        let real = String::from_utf8(real.stdout).unwrap();
        std::os::unix::fs::symlink(real.trim(), bare.join(tool)).unwrap();
    }
    w.wrapper_host_path(Some(&bare.display().to_string()));
    let d = Daemon::start_path(&w.home(), &[], Some(&g.local_bin));
    let c = d.client().await;
    let e = fails(&c, create_on_box(&r, &s, json!({}))).await;
    assert!(
        e.contains("git is not available on host box") && e.contains("install git there"),
        "{e}"
    );
    assert_eq!(
        std::fs::read_dir(w.home().join("workspaces"))
            .unwrap()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .count(),
        1,
        "only the retired workspace's record"
    );
}
