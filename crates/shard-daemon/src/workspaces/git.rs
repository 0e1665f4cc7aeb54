//! The user's own `git` command line, run as a child process on the async executor
//! (ARCHITECTURE §10): their hooks, config and credentials apply, and a slow git never
//! blocks the daemon. Every call names its directory with `-C`; variables a calling git
//! hook may have left in the daemon's environment (`GIT_DIR`, …) are removed so they
//! cannot redirect a command to another repository.

use std::path::{Path, PathBuf};
use std::process::Stdio;

/// Variables that would make git act on another repository than the one `-C` names.
const REPO_VARS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_PREFIX",
];

/// What one git run produced.
#[derive(Debug)]
pub(crate) struct Output {
    /// Exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }

    /// The first line of stderr, for an error message (callers redact paths).
    pub fn why(&self) -> String {
        let line = self
            .stderr
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("git failed without a message");
        line.trim().to_string()
    }

    /// Stdout without its final newline.
    pub fn line(&self) -> &str {
        self.stdout.trim_end_matches('\n')
    }
}

/// Runs `git -C dir args…` and waits for it. `Err` only when git cannot be started.
pub(crate) async fn run(dir: &Path, args: &[&str]) -> std::io::Result<Output> {
    let mut cmd = tokio::process::Command::new("git");
    cmd.arg("-C").arg(dir).args(args);
    for v in REPO_VARS {
        cmd.env_remove(v);
    }
    // Never wait for a password prompt nobody can see (the daemon has no terminal).
    cmd.env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let out = crate::children::output(cmd).await?;
    Ok(Output {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// One entry of `git worktree list --porcelain`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct WorktreeEntry {
    pub path: PathBuf,
    pub head: Option<String>,
    /// `refs/heads/…`, absent when detached.
    pub branch: Option<String>,
    pub bare: bool,
    pub locked: bool,
    pub prunable: bool,
}

/// Parses `git worktree list --porcelain` (the first entry is the main worktree).
pub(crate) fn parse_worktrees(text: &str) -> Vec<WorktreeEntry> {
    let mut out = Vec::new();
    let mut cur: Option<WorktreeEntry> = None;
    for line in text.lines() {
        if let Some(p) = line.strip_prefix("worktree ") {
            if let Some(e) = cur.take() {
                out.push(e);
            }
            cur = Some(WorktreeEntry {
                path: PathBuf::from(p),
                ..Default::default()
            });
            continue;
        }
        let Some(e) = cur.as_mut() else { continue };
        let (key, value) = line.split_once(' ').unwrap_or((line, ""));
        match key {
            "HEAD" => e.head = Some(value.to_string()),
            "branch" => e.branch = Some(value.to_string()),
            "bare" => e.bare = true,
            "locked" => e.locked = true,
            "prunable" => e.prunable = true,
            _ => {}
        }
    }
    if let Some(e) = cur {
        out.push(e);
    }
    out
}

/// What `git status --porcelain=v2 --branch -z` says about a worktree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct StatusSummary {
    /// `branch.head`: the checked-out branch's short name, `None` when detached.
    pub head_branch: Option<String>,
    /// `branch.oid`: the commit HEAD points at (`None` before the first commit).
    pub head_oid: Option<String>,
    /// Changed tracked entries plus untracked files (ignored ones are not listed).
    pub dirty: u64,
}

/// Parses `git status --porcelain=v2 --branch -z --untracked-files=all --no-renames`.
pub(crate) fn parse_status(text: &str) -> StatusSummary {
    let mut s = StatusSummary::default();
    for rec in text.split('\0').filter(|r| !r.is_empty()) {
        if let Some(h) = rec.strip_prefix("# branch.head ") {
            if h != "(detached)" {
                s.head_branch = Some(h.to_string());
            }
        } else if let Some(o) = rec.strip_prefix("# branch.oid ") {
            if o != "(initial)" {
                s.head_oid = Some(o.to_string());
            }
        } else if rec.starts_with('#') {
        } else if rec.starts_with("1 ")
            || rec.starts_with("2 ")
            || rec.starts_with("u ")
            || rec.starts_with("? ")
        {
            s.dirty += 1;
        }
    }
    s
}

/// Parses `git rev-list --left-right --count A...B` into (left, right).
pub(crate) fn parse_counts(text: &str) -> Option<(u64, u64)> {
    let mut it = text.split_whitespace();
    let a = it.next()?.parse().ok()?;
    let b = it.next()?.parse().ok()?;
    Some((a, b))
}

/// `refs/heads/x` → `x`, other refs unchanged.
pub(crate) fn short_ref(r: &str) -> &str {
    r.strip_prefix("refs/heads/").unwrap_or(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worktree_list_is_parsed_with_flags() {
        let text = "worktree /r\nHEAD aaa\nbranch refs/heads/main\n\nworktree /w/1\nHEAD bbb\ndetached\nlocked reason\n\nworktree /w/2\nHEAD ccc\nbranch refs/heads/x\nprunable gitdir file points to non-existent location\n\n";
        let v = parse_worktrees(text);
        assert_eq!(v.len(), 3);
        assert_eq!(v[0].branch.as_deref(), Some("refs/heads/main"));
        assert!(v[1].locked && v[1].branch.is_none());
        assert!(v[2].prunable);
        assert_eq!(v[2].path, PathBuf::from("/w/2"));
    }

    #[test]
    fn status_counts_tracked_and_untracked_but_not_headers() {
        let text = "# branch.oid abc\x00# branch.head feature\x001 .M N... 100644 100644 100644 a a f.txt\x00? new.txt\x00u UU N... 1 2 3 4 a b c d c.txt\x00";
        let s = parse_status(text);
        assert_eq!(s.head_branch.as_deref(), Some("feature"));
        assert_eq!(s.head_oid.as_deref(), Some("abc"));
        assert_eq!(s.dirty, 3);
        let d = parse_status("# branch.oid (initial)\x00# branch.head (detached)\x00");
        assert_eq!(d, StatusSummary::default());
    }

    #[test]
    fn counts_and_refs() {
        assert_eq!(parse_counts("3\t5\n"), Some((3, 5)));
        assert_eq!(parse_counts("x"), None);
        assert_eq!(short_ref("refs/heads/a/b"), "a/b");
        assert_eq!(short_ref("refs/remotes/o/m"), "refs/remotes/o/m");
    }
}
