//! Attack suite: configuration an agent writes into a repository is never run outside the
//! tool sandbox. The real daemon runs `git` on a workspace whose config, hooks and
//! attributes name a program; that program must never start, and no git the daemon starts
//! may see a provider key.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::daemon::{Daemon, home};
use super::harness::Sandbox;
use super::sandbox::{complete, run_bash};
use super::workspaces::{
    create, empty_script, git, have_git, repo, shard_home, status, stop_agents,
};

const KEY: &str = "sk-ant-test-git-outside-5e1f";

fn executable(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A program that records that it ran (with its environment) and passes its input on,
/// so it works as a hook, a filter, a pager or an fsmonitor.
fn evil(dir: &Path, marks: &Path) -> PathBuf {
    let p = dir.join("evil.sh");
    executable(
        &p,
        &format!(
            "#!/bin/sh\nenv > \"{}/ran-$$\"\ncat 2>/dev/null\nexit 0\n",
            marks.display()
        ),
    );
    p
}

/// A `git` ahead of the real one on the daemon's PATH, logging each environment it gets.
fn logging_git(dir: &Path, log: &Path) -> PathBuf {
    let real = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    executable(
        &bin.join("git"),
        &format!(
            "#!/bin/sh\n{{ env; echo ----; }} >> \"{}\"\nexec {} \"$@\"\n",
            log.display(),
            real.trim()
        ),
    );
    bin
}

fn marks_left(marks: &Path) -> Vec<String> {
    std::fs::read_dir(marks)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_written_git_config_never_runs_in_the_daemon_and_git_gets_no_key() {
    if !have_git() {
        return;
    }
    let h = home();
    let r = repo(h.path(), "project");
    let marks = h.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let program = evil(h.path(), &marks);
    let log = h.path().join("git-env.log");
    let bin = logging_git(h.path(), &log);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let d = Daemon::start_with_env(
        &shard_home(h.path()),
        &[],
        &[("ANTHROPIC_API_KEY", Some(KEY)), ("PATH", Some(&path))],
    );
    let s = empty_script(h.path());
    let c = d.client().await;
    let created = create(&c, &r, &s, json!({})).await;
    stop_agents(&c, &created).await;
    let ws = created["workspace"]["workspace_id"]
        .as_str()
        .unwrap()
        .to_string();
    let wt = PathBuf::from(created["workspace"]["cwd"].as_str().unwrap());

    // What a model could write from a workspace whose sandbox lacks namespaces (or one
    // written before the config was protected): every way git has to run a program.
    let p = program.display().to_string();
    let hooks = h.path().join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    for hook in [
        "post-checkout",
        "pre-commit",
        "reference-transaction",
        "post-index-change",
    ] {
        executable(&hooks.join(hook), &format!("#!/bin/sh\nexec {p}\n"));
    }
    for (k, v) in [
        ("core.fsmonitor", p.as_str()),
        ("core.hooksPath", hooks.to_str().unwrap()),
        ("core.pager", p.as_str()),
        ("diff.external", p.as_str()),
        ("filter.evil.clean", p.as_str()),
        ("filter.evil.smudge", p.as_str()),
        ("filter.evil.required", "true"),
        ("diff.evil.textconv", p.as_str()),
    ] {
        git(&wt, &["config", k, v]);
    }
    let common = PathBuf::from(git(
        &r,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    ));
    std::fs::create_dir_all(common.join("info")).unwrap();
    std::fs::write(common.join("info/attributes"), "* filter=evil diff=evil\n").unwrap();
    // A changed tracked file makes status hash it (through the clean filter).
    std::fs::write(wt.join("README.md"), "changed by the agent\n").unwrap();

    let st = status(&c, &ws).await;
    assert_eq!(st["dirty_files"], 1, "{st}");
    // A new workspace checks files out (smudge filter, post-checkout hook).
    let second = create(&c, &r, &s, json!({})).await;
    stop_agents(&c, &second).await;
    let ws2 = second["workspace"]["workspace_id"].as_str().unwrap();
    status(&c, ws2).await;

    let ran = marks_left(&marks);
    assert!(
        ran.is_empty(),
        "agent-written config ran outside the sandbox: {ran:?}"
    );
    let envs = std::fs::read_to_string(&log).unwrap();
    assert!(
        envs.contains("----"),
        "the daemon's git was not the logging one"
    );
    assert!(!envs.contains(KEY), "a git child saw the provider key");
    assert!(!envs.contains("ANTHROPIC_API_KEY"), "{envs}");
}

/// A real `shard agent`: its `bash` cannot change the repository's config or hooks,
/// though it commits.
#[test]
fn bash_in_the_agent_cannot_change_git_config_or_hooks_but_commits() {
    if !have_git() {
        return;
    }
    let sb = Sandbox::new();
    sb.config("[permissions]\n");
    git(&sb.work(), &["init", "-q", "-b", "main"]);
    let config = sb.work().join(".git/config");
    let before = std::fs::read_to_string(&config).unwrap();
    let (hello, out) = run_bash(
        &sb,
        &["git config core.fsmonitor /bin/evil && echo CONFIG_SET; \
             echo '#!/bin/sh' > .git/hooks/post-checkout && echo HOOK_WRITTEN; \
             mv .git .git-old && echo MOVED; echo x > a.txt && git add a.txt && \
             git -c user.name=A -c user.email=a@example.com commit -q -m agent && echo COMMITTED"],
        &[],
    );
    if !complete(&hello) {
        return;
    }
    for bad in ["CONFIG_SET", "HOOK_WRITTEN", "MOVED"] {
        assert!(!out[0].contains(bad), "{bad}: {}", out[0]);
    }
    assert!(out[0].contains("COMMITTED"), "{}", out[0]);
    assert_eq!(std::fs::read_to_string(&config).unwrap(), before);
    assert!(!sb.work().join(".git/hooks/post-checkout").exists());
}

/// A real `shard agent`: what its `bash` writes into the git dir off the allow-list
/// (`commondir`, a new file at the root, another worktree's link, `info/`) is gone when
/// the call ends, while a commit, a branch and a rebase made in the next calls are there.
#[test]
fn bash_in_the_agent_plants_nothing_off_the_git_allow_list_but_commits_and_rebases() {
    if !have_git() {
        return;
    }
    let sb = Sandbox::new();
    sb.config("[permissions]\n");
    let w = sb.work();
    git(&w, &["init", "-q", "-b", "main"]);
    std::fs::write(w.join("README.md"), "hello\n").unwrap();
    git(&w, &["add", "."]);
    git(&w, &["commit", "-q", "-m", "first"]);
    let other = sb.dir.path().join("other");
    git(
        &w,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "other",
            other.to_str().unwrap(),
        ],
    );
    let g = w.join(".git");
    let other_link = std::fs::read_to_string(g.join("worktrees/other/gitdir")).unwrap();
    let ident = "export GIT_AUTHOR_NAME=A GIT_AUTHOR_EMAIL=a@example.com \
                 GIT_COMMITTER_NAME=A GIT_COMMITTER_EMAIL=a@example.com";
    let (hello, out) = run_bash(
        &sb,
        &[
            "echo /elsewhere > .git/commondir; echo x > .git/foo; \
             echo /elsewhere/.git > .git/worktrees/other/gitdir; \
             echo '* filter=evil' > .git/info/attributes; true",
            &format!(
                "{ident}; git checkout -q -b topic && echo t > t.txt && git add t.txt && \
                 git commit -q -m t1 && echo COMMITTED"
            ),
            &format!(
                "{ident}; git checkout -q main && echo m > m.txt && git add m.txt && \
                 git commit -q -m m1 && git checkout -q topic && git rebase -q main && \
                 echo REBASED"
            ),
        ],
        &[],
    );
    if !complete(&hello) {
        return;
    }
    // The next call no longer sees what the first planted: git works again.
    assert!(out[1].contains("COMMITTED"), "{}", out[1]);
    assert!(out[2].contains("REBASED"), "{}", out[2]);
    assert!(!g.join("commondir").exists(), "{}", out[0]);
    assert!(!g.join("foo").exists(), "{}", out[0]);
    assert!(!g.join("info/attributes").exists(), "{}", out[0]);
    assert_eq!(
        std::fs::read_to_string(g.join("worktrees/other/gitdir")).unwrap(),
        other_link
    );
    assert_eq!(git(&w, &["symbolic-ref", "--short", "HEAD"]), "topic");
    assert_eq!(git(&w, &["log", "--format=%s", "-3"]), "t1\nm1\nfirst");
    assert_eq!(git(&w, &["status", "--porcelain"]), "");
}

/// A `.git` file and a git dir the model wrote, naming another repository as their
/// common dir, make nothing of that repository writable to the next Runtime.
#[test]
fn a_forged_git_file_makes_no_other_repository_writable_to_the_next_runtime() {
    if !have_git() {
        return;
    }
    let sb = Sandbox::new();
    sb.config("[permissions]\n");
    let other = repo(sb.dir.path(), "other");
    let other_git = std::fs::canonicalize(other.join(".git")).unwrap();
    let forged = sb.work().join("forged");
    std::fs::create_dir_all(&forged).unwrap();
    std::fs::write(sb.work().join(".git"), "gitdir: forged\n").unwrap();
    std::fs::write(
        forged.join("commondir"),
        format!("{}\n", other_git.display()),
    )
    .unwrap();
    let hook = other_git.join("hooks/post-checkout");
    let (hello, out) = run_bash(
        &sb,
        &[&format!(
            "echo '#!/bin/sh' > {} && echo PLANTED",
            hook.display()
        )],
        &[],
    );
    if !complete(&hello) {
        return;
    }
    assert!(!out[0].contains("PLANTED"), "{}", out[0]);
    assert!(!hook.exists());
}

/// A program that leaves `marks/ran-NAME-PID` for the name it is given, and passes its
/// input on (so a filter still works when it runs).
fn marker(dir: &Path, marks: &Path) -> String {
    let p = dir.join("mark.sh");
    executable(
        &p,
        &format!(
            "#!/bin/sh\necho \"$1\" > \"{}/ran-$1-$$\"\ncat 2>/dev/null\nexit 0\n",
            marks.display()
        ),
    );
    p.display().to_string()
}

/// Every file's modification time moved, its content unchanged: git must hash it again,
/// through the clean filter, to know it is unchanged.
fn restat(dir: &Path, names: &[&str]) {
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
    for n in names {
        let f = std::fs::File::options()
            .write(true)
            .open(dir.join(n))
            .unwrap();
        f.set_modified(later).unwrap();
    }
}

fn ran(marks: &Path) -> Vec<String> {
    let mut v: Vec<String> = marks_left(marks)
        .into_iter()
        .map(|s| s.trim().to_string())
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Filter, diff and merge drivers whose names `-c NAME=` would split (`=`), dots,
/// quotes, an upper-case section, and drivers only an `include.path` or an
/// `includeIf` (matching only in a worktree, or only on the workspace branch) defines:
/// the daemon's create, status and retire run none of them, while the user's own git
/// runs every one (the control at the end).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn driver_names_git_would_split_or_only_a_worktree_sees_never_run_in_the_daemon() {
    if !have_git() {
        return;
    }
    let h = home();
    let r = repo(h.path(), "project");
    let marks = h.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let m = marker(h.path(), &marks);
    let files = ["f-eq", "f-quote", "f-up", "f-dot", "f-inc", "f-wt", "f-br"];
    for f in files {
        std::fs::write(r.join(f), format!("{f}\n")).unwrap();
    }
    std::fs::write(
        r.join(".gitattributes"),
        "f-eq filter=a=b diff=d=1 merge=m=1\nf-quote filter=Q\"uote\nf-up filter=Up\n\
         f-dot filter=x.y\nf-inc filter=inc=1\nf-wt filter=wt=1\nf-br filter=br=1\n",
    )
    .unwrap();
    super::workspaces::commit_all(&r, "files with attributes");
    // Written after the commit: from here on the user's own git would run them.
    let section = |name: &str, keys: &[&str]| {
        let mut s = format!("[filter \"{name}\"]\n");
        for k in keys {
            let mark = name.replace(['"', '\\'], "");
            s.push_str(&format!("\t{k} = {m} {mark}\n"));
        }
        s
    };
    let inc = h.path().join("agent-include");
    std::fs::write(&inc, section("inc=1", &["clean", "smudge"])).unwrap();
    let wt_only = h.path().join("agent-worktrees");
    std::fs::write(&wt_only, section("wt=1", &["clean", "smudge"])).unwrap();
    let br_only = h.path().join("agent-branch");
    std::fs::write(&br_only, section("br=1", &["clean", "smudge"])).unwrap();
    let mut config = String::new();
    config.push_str(&section("a=b", &["clean", "smudge"]));
    config.push_str("\trequired = true\n");
    config.push_str(&section("Q\\\"uote", &["clean", "smudge"]));
    config.push_str(&section("Up", &["clean", "smudge"]).replace("[filter", "[FILTER"));
    config.push_str(&section("x.y", &["clean", "smudge"]));
    config.push_str(&format!(
        "[diff \"d=1\"]\n\ttextconv = {m} textconv\n\tcommand = {m} diffcmd\n\
         [merge \"m=1\"]\n\tdriver = {m} merge\n\
         [include]\n\tpath = {}\n\
         [includeIf \"gitdir:**/worktrees/**\"]\n\tpath = {}\n\
         [includeIf \"onbranch:shard/**\"]\n\tpath = {}\n",
        inc.display(),
        wt_only.display(),
        br_only.display()
    ));
    let cfg = r.join(".git/config");
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    text.push_str(&config);
    std::fs::write(&cfg, text).unwrap();

    let d = Daemon::start(&shard_home(h.path()), &[]);
    let s = empty_script(h.path());
    let c = d.client().await;
    // Create checks the files out (smudge), in the worktree's own config context.
    let created = create(&c, &r, &s, json!({})).await;
    stop_agents(&c, &created).await;
    let ws = created["workspace"]["workspace_id"]
        .as_str()
        .unwrap()
        .to_string();
    let wt = PathBuf::from(created["workspace"]["cwd"].as_str().unwrap());
    for f in files {
        assert_eq!(
            std::fs::read_to_string(wt.join(f)).unwrap(),
            format!("{f}\n")
        );
    }
    // Status and retire hash every file again (clean), git's own check in the worktree
    // included.
    restat(&wt, &files);
    let st = status(&c, &ws).await;
    assert_eq!(st["dirty_files"], 0, "{st}");
    restat(&wt, &files);
    let r2 = c
        .request(
            serde_json::from_value(json!({"type":"workspace.retire","workspace_id":ws,
                "branch_disposition":"keep"}))
            .unwrap(),
        )
        .await
        .unwrap();
    assert!(r2.success, "{r2:?}");
    assert!(!wt.exists());
    let left = ran(&marks);
    assert!(
        left.is_empty(),
        "the repository's drivers ran in the daemon: {left:?}"
    );

    // Control: the user's own git runs each of them, so the attack is real.
    restat(&r, &files);
    git(&r, &["status", "--porcelain"]);
    let control = h.path().join("control");
    git(
        &r,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "shard/control",
            control.to_str().unwrap(),
        ],
    );
    let left = ran(&marks);
    for name in ["a=b", "Quote", "Up", "x.y", "inc=1", "wt=1", "br=1"] {
        assert!(
            left.iter().any(|l| l == name),
            "control: {name} did not run ({left:?})"
        );
    }
}

/// Status never enters a submodule or a nested repository: each has its own config,
/// which no override of the outer repository covers (git does not even pass settings
/// from the environment on to a submodule's git).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_never_enters_a_submodule_or_nested_repository() {
    if !have_git() {
        return;
    }
    let h = home();
    let r = repo(h.path(), "project");
    let marks = h.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let m = marker(h.path(), &marks);
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
    let inner = |dir: &Path| {
        std::fs::create_dir_all(dir).unwrap();
        git(dir, &["init", "-q", "-b", "main"]);
        std::fs::write(dir.join("s.txt"), "s\n").unwrap();
        std::fs::write(dir.join(".gitattributes"), "s.txt filter=inner\n").unwrap();
        super::workspaces::commit_all(dir, "inner");
    };
    // A submodule (a gitlink in the worktree's index, checked out) …
    inner(&wt.join("sub"));
    git(&wt, &["add", "sub"]);
    git(&wt, &["commit", "-q", "-m", "gitlink"]);
    // … an untracked nested repository, and a planted `.git` file naming the first.
    inner(&wt.join("nested"));
    std::fs::create_dir_all(wt.join("planted")).unwrap();
    std::fs::write(
        wt.join("planted/.git"),
        format!("gitdir: {}\n", wt.join("sub/.git").display()),
    )
    .unwrap();
    for dir in [wt.join("sub"), wt.join("nested")] {
        for (k, v) in [
            ("filter.inner.clean", format!("{m} inner")),
            ("core.fsmonitor", format!("{m} fsmonitor")),
            ("status.showUntrackedFiles", "all".to_string()),
        ] {
            git(&dir, &["config", k, &v]);
        }
        restat(&dir, &["s.txt"]);
    }
    let st = status(&c, &ws).await;
    // The nested repository and the planted directory are two untracked entries.
    assert_eq!(st["dirty_files"], 2, "{st}");
    let left = ran(&marks);
    assert!(
        left.is_empty(),
        "a nested repository's config ran: {left:?}"
    );
    // Control: a git that enters the submodule runs its filter.
    git(&wt, &["status", "--porcelain", "--ignore-submodules=none"]);
    assert!(ran(&marks).iter().any(|l| l == "inner"), "control");
}
