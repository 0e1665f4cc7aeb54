//! Git dirs by allow-list: nothing but objects, refs, logs and the state files git
//! rewrites survives a call, in any git dir the sandbox shows (the main `.git`, other
//! worktrees' and submodules' git dirs, a linked worktree's own and common git dir),
//! while commit, branch, packed refs, stash and rebase keep working on both ways in.

use super::*;

/// A repository at `outside/lib` to use as a submodule.
fn lib(env: &Env) -> PathBuf {
    let lib = env.outside().join("lib");
    repo(&lib);
    lib
}

/// `dir` (a checkout) with a submodule `sub` and a second worktree at `outside/other`.
fn decorate(env: &Env, dir: &Path) {
    let lib = lib(env);
    git(
        dir,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            lib.to_str().unwrap(),
            "sub",
        ],
    );
    git(dir, &["commit", "-q", "-m", "submodule"]);
    let other = env.outside().join("other");
    git(
        dir,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "other",
            other.to_str().unwrap(),
        ],
    );
}

/// What a path is outside the sandbox: absent, a symlink and its target, a directory, or
/// a file and its content.
fn state(p: &Path) -> String {
    match std::fs::symlink_metadata(p) {
        Err(_) => "absent".into(),
        Ok(m) if m.is_symlink() => format!("link {:?}", std::fs::read_link(p).unwrap()),
        Ok(m) if m.is_dir() => "dir".into(),
        Ok(_) => format!("file {:?}", std::fs::read(p).unwrap()),
    }
}

/// The ways a command may try to plant or change the file at `{p}`, each run as a call
/// of its own.
const SPELLINGS: &[&str] = &[
    "printf '/elsewhere\\n' > \"{p}\"",
    "printf '[core]\\n\\tfsmonitor = /bin/evil\\n' >> \"{p}\"",
    "echo /elsewhere > \"$TMPDIR/s\" && cp \"$TMPDIR/s\" \"{p}\"",
    "echo /elsewhere > staged && mv -f staged \"{p}\"",
    "ln -sfn /elsewhere \"{p}\"",
    "rm -rf \"{p}\" && mkdir -p \"{p}/x\"",
    "touch \"{p}\"",
    "cd \"$(dirname \"{p}\")\" && echo '#!/bin/sh' | tee \"$(basename \"{p}\")\" && chmod +x \"$(basename \"{p}\")\"",
];

/// Runs every spelling against each of `paths` and asserts that none changed outside.
fn assert_cannot_plant(via: Via, sb: &Sandbox, cwd: &Path, paths: &[PathBuf]) {
    for path in paths {
        let before = state(path);
        for spelling in SPELLINGS {
            let script = spelling.replace("{p}", path.to_str().unwrap());
            let out = run(via, sb, cwd, &format!("{script}; true"));
            assert_eq!(
                state(path),
                before,
                "`{script}` changed {} outside the sandbox: {}",
                path.display(),
                text(&out)
            );
        }
    }
    // The repository still works outside.
    git(cwd, &["status", "--porcelain"]);
}

both!(nothing_but_the_allow_list_can_be_planted_in_a_checkout);
fn nothing_but_the_allow_list_can_be_planted_in_a_checkout(via: Via) {
    if !have_git() {
        return;
    }
    let env = Env::new();
    let w = env.work();
    repo(&w);
    decorate(&env, &w);
    let Some(sb) = at(&env, &w) else {
        return;
    };
    let g = std::fs::canonicalize(w.join(".git")).unwrap();
    let paths: Vec<PathBuf> = [
        "commondir",
        "foo",
        "description",
        "info/attributes",
        "info/exclude",
        "worktrees/other/commondir",
        "worktrees/other/gitdir",
        "worktrees/other/HEAD",
        "modules/sub/config",
        "modules/sub/hooks/post-checkout",
        "modules/sub/commondir",
        "modules/sub/info/attributes",
        "hooks/post-checkout",
    ]
    .iter()
    .map(|p| g.join(p))
    .collect();
    assert_cannot_plant(via, &sb, &w, &paths);
}

both!(nothing_but_the_allow_list_can_be_planted_from_a_linked_worktree);
fn nothing_but_the_allow_list_can_be_planted_from_a_linked_worktree(via: Via) {
    if !have_git() {
        return;
    }
    let env = Env::new();
    let main = env.outside().join("repo");
    repo(&main);
    decorate(&env, &main);
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
    let c = std::fs::canonicalize(main.join(".git")).unwrap();
    let paths: Vec<PathBuf> = [
        "commondir",
        "foo",
        "config",
        "worktrees/other/commondir",
        "worktrees/other/gitdir",
        "worktrees/wt/commondir",
        "worktrees/wt/gitdir",
        "worktrees/wt/locked",
        "worktrees/wt/config.worktree",
        "worktrees/wt/foo",
        "modules/sub/config",
        "modules/sub/hooks/post-checkout",
    ]
    .iter()
    .map(|p| c.join(p))
    .collect();
    assert_cannot_plant(via, &sb, &wt, &paths);
}

// `mv` of a directory holding these (`modules/`, say) falls back to copying and
// deleting, which empties `objects/` and `refs/`: that destroys, as `rm -r` could, but
// plants nothing.
both!(the_writable_parts_of_a_git_dir_cannot_be_renamed_away);
fn the_writable_parts_of_a_git_dir_cannot_be_renamed_away(via: Via) {
    if !have_git() {
        return;
    }
    let env = Env::new();
    let w = env.work();
    repo(&w);
    decorate(&env, &w);
    let Some(sb) = at(&env, &w) else {
        return;
    };
    let g = w.join(".git");
    for dir in [
        "objects",
        "refs",
        "logs",
        "modules/sub/objects",
        "modules/sub/refs",
        "modules/sub",
        "hooks",
        "",
    ] {
        let p = g.join(dir);
        let p = p.to_str().unwrap().trim_end_matches('/');
        let out = run(
            via,
            &sb,
            &w,
            &format!(
                "mv \"{p}\" \"{p}-away\" && echo MOVED; \
                 mkdir -p \"{p}-new\" && mv -T \"{p}-new\" \"{p}\" && echo REPLACED; true"
            ),
        );
        let t = text(&out);
        let stdout = String::from_utf8_lossy(&out.stdout);
        for bad in ["MOVED", "REPLACED"] {
            assert!(!stdout.contains(bad), "{dir}: {bad}: {t}");
        }
        assert!(Path::new(p).is_dir(), "{dir}: {t}");
        assert!(!Path::new(&format!("{p}-away")).exists(), "{dir}: {t}");
    }
    git(&w, &["fsck", "--no-dangling"]);
    git(&w.join("sub"), &["fsck", "--no-dangling"]);
}

/// A commit, a branch made and deleted (also once packed), a stash and its pop, and a
/// two-commit rebase onto the branch that was checked out, in the checkout at the
/// working directory. Prints DONE when every step worked.
const WORKFLOW: &str = "set -e; \
    export GIT_AUTHOR_NAME=A GIT_AUTHOR_EMAIL=a@example.com \
           GIT_COMMITTER_NAME=A GIT_COMMITTER_EMAIL=a@example.com; \
    B=$(git symbolic-ref --short HEAD); \
    echo a > a.txt; git add a.txt; git commit -q -m a; \
    git branch x; git branch -d -q x; \
    git branch y; git pack-refs --all; git branch -d -q y; \
    echo s >> README.md; git stash -q; test -z \"$(git status --porcelain)\"; \
    git stash pop -q; git commit -q -a -m stashed; \
    git checkout -q -b topic; \
    echo 1 > t1.txt; git add t1.txt; git commit -q -m t1; \
    echo 2 > t2.txt; git add t2.txt; git commit -q -m t2; \
    git checkout -q \"$B\"; echo m > m.txt; git add m.txt; git commit -q -m m1; \
    git checkout -q topic; git rebase -q \"$B\"; \
    echo DONE";

/// What [`WORKFLOW`] leaves, seen from outside the sandbox in the checkout `dir`.
fn assert_workflow_done(out: &Output, dir: &Path) {
    let t = text(out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("DONE"), "{t}");
    assert_eq!(
        git(dir, &["symbolic-ref", "--short", "HEAD"]),
        "topic",
        "{t}"
    );
    assert_eq!(
        git(dir, &["log", "--format=%s", "-5"]),
        "t2\nt1\nm1\nstashed\na",
        "{t}"
    );
    assert_eq!(git(dir, &["status", "--porcelain"]), "", "{t}");
    assert_eq!(git(dir, &["stash", "list"]), "", "{t}");
    assert_eq!(git(dir, &["branch", "--list", "x", "y"]), "", "{t}");
    let git_dir = PathBuf::from(git(dir, &["rev-parse", "--absolute-git-dir"]));
    assert!(!git_dir.join("rebase-merge").exists(), "{t}");
    assert!(!git_dir.join("index.lock").exists(), "{t}");
    assert_eq!(
        git(dir, &["reflog", "-1", "--format=%gs", "topic"]),
        "rebase (finish): refs/heads/topic onto ".to_string() + &git(dir, &["rev-parse", "HEAD~2"]),
        "{t}"
    );
    git(dir, &["fsck", "--no-dangling"]);
}

both!(commit_branch_stash_and_rebase_work_in_a_checkout);
fn commit_branch_stash_and_rebase_work_in_a_checkout(via: Via) {
    if !have_git() {
        return;
    }
    let env = Env::new();
    let w = env.work();
    repo(&w);
    let Some(sb) = at(&env, &w) else {
        return;
    };
    let out = run(via, &sb, &w, WORKFLOW);
    assert_workflow_done(&out, &w);
}

both!(commit_branch_stash_and_rebase_work_in_a_linked_worktree);
fn commit_branch_stash_and_rebase_work_in_a_linked_worktree(via: Via) {
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
    let out = run(via, &sb, &wt, WORKFLOW);
    assert_workflow_done(&out, &wt);
    // The main worktree was left alone.
    assert_eq!(git(&main, &["symbolic-ref", "--short", "HEAD"]), "main");
    assert_eq!(git(&main, &["log", "--format=%s", "-1"]), "first");
}

both!(a_rebase_stopped_by_a_conflict_goes_on_in_the_next_call);
fn a_rebase_stopped_by_a_conflict_goes_on_in_the_next_call(via: Via) {
    if !have_git() {
        return;
    }
    let env = Env::new();
    let w = env.work();
    repo(&w);
    let Some(sb) = at(&env, &w) else {
        return;
    };
    let ident = "export GIT_AUTHOR_NAME=A GIT_AUTHOR_EMAIL=a@example.com \
                 GIT_COMMITTER_NAME=A GIT_COMMITTER_EMAIL=a@example.com";
    let out = run(
        via,
        &sb,
        &w,
        &format!(
            "{ident}; git checkout -q -b topic; echo topic > README.md; \
             git commit -q -a -m t1; git checkout -q main; echo main > README.md; \
             git commit -q -a -m m1; git checkout -q topic; \
             git rebase main >/dev/null 2>&1 || echo STOPPED"
        ),
    );
    let t = text(&out);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("STOPPED"),
        "{t}"
    );
    // Outside, between the calls: the rebase is in progress.
    assert!(w.join(".git/rebase-merge").is_dir(), "{t}");
    assert!(git(&w, &["status"]).contains("rebase in progress"), "{t}");
    let out = run(
        via,
        &sb,
        &w,
        &format!(
            "{ident}; echo both > README.md; git add README.md; \
             GIT_EDITOR=true git rebase --continue >/dev/null && echo CONTINUED"
        ),
    );
    let t = text(&out);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("CONTINUED"),
        "{t}"
    );
    assert!(!w.join(".git/rebase-merge").exists(), "{t}");
    assert_eq!(
        git(&w, &["log", "--format=%s", "-3"]),
        "t1\nm1\nfirst",
        "{t}"
    );
    assert_eq!(
        git(&w, &["symbolic-ref", "--short", "HEAD"]),
        "topic",
        "{t}"
    );
    assert_eq!(git(&w, &["status", "--porcelain"]), "", "{t}");
}

both!(a_submodule_commits_through_its_own_view);
fn a_submodule_commits_through_its_own_view(via: Via) {
    if !have_git() {
        return;
    }
    let env = Env::new();
    let w = env.work();
    repo(&w);
    decorate(&env, &w);
    let Some(sb) = at(&env, &w) else {
        return;
    };
    let out = run(
        via,
        &sb,
        &w,
        "set -e; export GIT_AUTHOR_NAME=A GIT_AUTHOR_EMAIL=a@example.com \
         GIT_COMMITTER_NAME=A GIT_COMMITTER_EMAIL=a@example.com; \
         cd sub; git checkout -q -b work; echo s > s.txt; git add s.txt; \
         git commit -q -m in-sub; cd ..; git add sub; git commit -q -m bump; echo DONE",
    );
    let t = text(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("DONE"), "{t}");
    let sub = w.join("sub");
    assert_eq!(
        git(&sub, &["symbolic-ref", "--short", "HEAD"]),
        "work",
        "{t}"
    );
    assert_eq!(git(&sub, &["log", "--format=%s", "-1"]), "in-sub", "{t}");
    assert_eq!(git(&w, &["log", "--format=%s", "-1"]), "bump", "{t}");
    assert_eq!(git(&w, &["status", "--porcelain"]), "", "{t}");
}

both!(each_call_sees_what_git_did_outside_before_it);
fn each_call_sees_what_git_did_outside_before_it(via: Via) {
    if !have_git() {
        return;
    }
    let env = Env::new();
    let w = env.work();
    repo(&w);
    let Some(sb) = at(&env, &w) else {
        return;
    };
    let commit = |msg: &str| {
        format!(
            "export GIT_AUTHOR_NAME=A GIT_AUTHOR_EMAIL=a@example.com \
             GIT_COMMITTER_NAME=A GIT_COMMITTER_EMAIL=a@example.com; \
             git log -1 --format=%s; echo {msg} > {msg}.txt; git add {msg}.txt; \
             git commit -q -m {msg}"
        )
    };
    let out = run(via, &sb, &w, &commit("inside1"));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "first",
        "{}",
        text(&out)
    );
    // Outside, between the calls (the zygote's next call may already be waiting).
    git(&w, &["checkout", "-q", "-b", "outside"]);
    std::fs::write(w.join("o.txt"), "o\n").unwrap();
    git(&w, &["add", "o.txt"]);
    git(&w, &["commit", "-q", "-m", "outside"]);
    let out = run(via, &sb, &w, &commit("inside2"));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "outside",
        "{}",
        text(&out)
    );
    assert_eq!(
        git(&w, &["log", "--format=%s", "-4"]),
        "inside2\noutside\ninside1\nfirst"
    );
    assert_eq!(git(&w, &["symbolic-ref", "--short", "HEAD"]), "outside");
    assert_eq!(git(&w, &["status", "--porcelain"]), "");
}

both!(what_git_does_outside_during_a_call_is_not_overwritten);
fn what_git_does_outside_during_a_call_is_not_overwritten(via: Via) {
    if !have_git() {
        return;
    }
    let env = Env::new();
    let w = env.work();
    repo(&w);
    let Some(sb) = at(&env, &w) else {
        return;
    };
    let (staged, go) = (w.join("staged.fifo"), w.join("go.fifo"));
    for f in [&staged, &go] {
        assert!(Command::new("mkfifo").arg(f).status().unwrap().success());
    }
    let script = format!(
        "echo x > x.txt; git add x.txt; echo staged > '{}'; read _ < '{}'; echo DONE",
        staged.display(),
        go.display()
    );
    let out = std::thread::scope(|s| {
        let call = s.spawn(|| run(via, &sb, &w, &script));
        // The call has staged x.txt in its view; now the person stages y.txt outside.
        assert_eq!(std::fs::read_to_string(&staged).unwrap(), "staged\n");
        std::fs::write(w.join("y.txt"), "y\n").unwrap();
        git(&w, &["add", "y.txt"]);
        std::fs::write(&go, "go\n").unwrap();
        call.join().unwrap()
    });
    let t = text(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("DONE"), "{t}");
    // The person's index stands; the call's version of it, made from the older one, is
    // dropped (its x.txt is still in the worktree, unstaged).
    assert_eq!(
        git(&w, &["diff", "--cached", "--name-only"]),
        "y.txt",
        "{t}"
    );
    assert!(w.join("x.txt").exists(), "{t}");
}
