//! Attack suite: configuration an agent writes into a repository is never run outside the
//! tool sandbox. The real daemon runs `git` on a workspace whose config, hooks and
//! attributes name a program; that program must never start, and no git the daemon starts
//! may see a provider key.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::daemon::{Daemon, home};
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
