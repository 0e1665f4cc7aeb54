//! Files git trusts stay read-only in the sandbox while commits still work, and a
//! forged `.git` file makes no other repository writable.

use super::*;

/// Runs git with a fixed identity outside the sandbox; panics on failure.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "T")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "T")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn have_git() -> bool {
    let ok = which("git");
    if !ok {
        eprintln!("skipped: `git` is not installed (Debian package: git)");
    }
    ok
}

/// A repository with one commit at `dir`.
fn repo(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("README.md"), "hello\n").unwrap();
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "first"]);
}

/// The full sandbox with `root` as its one workspace root, or None where the kernel
/// lacks a part.
fn at(env: &Env, root: &Path) -> Option<Sandbox> {
    let sb = env.sandbox_at(SandboxConfig::default(), root);
    if !sb.missing().is_empty() {
        eprintln!("skipped: the kernel lacks {:?}", sb.missing());
        return None;
    }
    Some(sb)
}

/// What a model tries against a git dir from inside: each line prints a word when it
/// got through. Then it commits, which must work.
const TAMPER: &str = "G=$(git rev-parse --path-format=absolute --git-common-dir); \
    git config core.fsmonitor /bin/evil 2>/dev/null && echo CONFIG_SET; \
    echo '[core] fsmonitor = /bin/evil' >> \"$G/config\" 2>/dev/null && echo CONFIG_APPENDED; \
    echo '#!/bin/sh' > \"$G/hooks/pre-commit\" 2>/dev/null && echo HOOK_WRITTEN; \
    mv \"$G/hooks\" \"$G/hooks-old\" 2>/dev/null && echo HOOKS_MOVED; \
    mv \"$G/config\" \"$G/config-old\" 2>/dev/null && echo CONFIG_MOVED; \
    mv \"$G\" \"$G-old\" 2>/dev/null && echo GITDIR_MOVED; \
    rm -rf \"$G/hooks\" 2>/dev/null; test -d \"$G/hooks\" || echo HOOKS_REMOVED; \
    echo x > agent.txt && git add agent.txt && \
    git -c user.name=A -c user.email=a@example.com commit -q -m agent && echo COMMITTED";

fn assert_tamper_refused(out: &Output, config: &Path, before: &str) {
    let t = text(out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    for bad in [
        "CONFIG_SET",
        "CONFIG_APPENDED",
        "HOOK_WRITTEN",
        "HOOKS_MOVED",
        "CONFIG_MOVED",
        "GITDIR_MOVED",
        "HOOKS_REMOVED",
    ] {
        assert!(!stdout.contains(bad), "{bad}: {t}");
    }
    assert!(stdout.contains("COMMITTED"), "commits must still work: {t}");
    assert_eq!(std::fs::read_to_string(config).unwrap(), before, "{t}");
}

both!(git_config_and_hooks_are_read_only_but_commits_work);
fn git_config_and_hooks_are_read_only_but_commits_work(via: Via) {
    if !have_git() {
        return;
    }
    let env = Env::new();
    repo(&env.work());
    let Some(sb) = at(&env, &env.work()) else {
        return;
    };
    let config = env.work().join(".git/config");
    let before = std::fs::read_to_string(&config).unwrap();
    let out = run(via, &sb, &env.work(), TAMPER);
    assert_tamper_refused(&out, &config, &before);
    assert_eq!(git(&env.work(), &["log", "-1", "--format=%s"]), "agent");
}

both!(a_linked_worktree_commits_but_cannot_touch_the_common_config);
fn a_linked_worktree_commits_but_cannot_touch_the_common_config(via: Via) {
    if !have_git() {
        return;
    }
    let env = Env::new();
    let main = env.outside().join("repo");
    repo(&main);
    let wt = env.work().join("wt");
    git(
        &main,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "feature",
            wt.to_str().unwrap(),
        ],
    );
    let Some(sb) = at(&env, &wt) else {
        return;
    };
    let config = main.join(".git/config");
    let before = std::fs::read_to_string(&config).unwrap();
    let out = run(
        via,
        &sb,
        &wt,
        &format!(
            "{TAMPER}; echo 'gitdir: /elsewhere' > .git 2>/dev/null && echo LINK_REWRITTEN; \
             echo /elsewhere > \"$(git rev-parse --absolute-git-dir)/commondir\" 2>/dev/null && echo COMMONDIR_REWRITTEN"
        ),
    );
    assert_tamper_refused(&out, &config, &before);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("LINK_REWRITTEN"), "{}", text(&out));
    assert!(!stdout.contains("COMMONDIR_REWRITTEN"), "{}", text(&out));
    assert_eq!(
        git(&main, &["log", "-1", "--format=%s", "feature"]),
        "agent"
    );
}

both!(a_forged_git_file_makes_no_other_repository_writable);
fn a_forged_git_file_makes_no_other_repository_writable(via: Via) {
    if !have_git() {
        return;
    }
    let env = Env::new();
    let other = env.outside().join("other");
    repo(&other);
    let other_git = std::fs::canonicalize(other.join(".git")).unwrap();
    // Written by a model in an earlier call: a `.git` file and a git dir of its own whose
    // `commondir` (and even a back-link) name the other repository.
    let forged = env.work().join("forged");
    std::fs::create_dir_all(&forged).unwrap();
    std::fs::write(env.work().join(".git"), "gitdir: forged\n").unwrap();
    std::fs::write(
        forged.join("commondir"),
        format!("{}\n", other_git.display()),
    )
    .unwrap();
    std::fs::write(
        forged.join("gitdir"),
        format!("{}\n", env.work().join(".git").display()),
    )
    .unwrap();
    // The next Runtime's sandbox.
    let Some(sb) = at(&env, &env.work()) else {
        return;
    };
    let out = run(
        via,
        &sb,
        &env.work(),
        &format!(
            "echo '#!/bin/sh' > {g}/hooks/post-checkout && echo PLANTED; \
             echo x > {g}/refs/heads/planted && echo REF_WRITTEN",
            g = other_git.display()
        ),
    );
    let t = text(&out);
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("PLANTED"),
        "{t}"
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("REF_WRITTEN"),
        "{t}"
    );
    assert!(!other_git.join("hooks/post-checkout").exists(), "{t}");
}

/// Git dirs by allow-list.
#[path = "git_allow.rs"]
mod allow_list;
