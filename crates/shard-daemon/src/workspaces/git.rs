//! Every `git` the daemon runs, built by one function ([`command`]) and run as a child
//! process on the async executor (docs/workspaces.md), so a slow git never blocks the
//! daemon.
//!
//! The repositories git reads here are written by agents: their config, hooks and
//! attributes are agent-controlled whatever the tool sandbox allows (a sandbox that lacks
//! namespaces, `mode = "off"`, a repository written before). So nothing those files
//! name is ever run by the daemon, which holds the provider keys: every way git has of
//! starting a program (hooks, fsmonitor, pagers, editors, credential helpers, transports,
//! signing programs, external diff, textconv, and the filter and merge drivers the
//! repository's own config defines) is turned off on the command line, which overrides
//! every config file, and git starts with an environment holding only what it needs
//! (no key, no token, no `GIT_*` variable of the daemon's). docs/workspaces.md lists it.

use std::path::{Path, PathBuf};
use std::process::Stdio;

/// Settings given with `-c` to every git: each names a program git would otherwise run
/// (or a way to reach one), and `-c` wins over every config file.
const OFF: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.editor=false",
    "sequence.editor=false",
    "core.askPass=",
    "core.sshCommand=false",
    "core.gitProxy=",
    "core.alternateRefsCommand=",
    "diff.external=",
    "credential.helper=",
    "protocol.allow=never",
    "submodule.recurse=false",
    // A submodule is a repository of its own, with its own config: never looked into.
    "diff.ignoreSubmodules=all",
    "log.showSignature=false",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "gpg.program=false",
    "gpg.ssh.program=false",
    "gpg.x509.program=false",
    "uploadpack.packObjectsHook=",
    "receive.procReceiveRefs=",
];

/// Variables of the daemon's environment git may see: where to find programs and the
/// user's own git config, and the locale. Everything else (provider keys, tokens, the
/// daemon's `GIT_*`) stays behind.
const KEEP_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "XDG_CONFIG_HOME",
];

/// Per-driver keys that name a program: `<section>.<driver>.<key>`.
const DRIVER_KEYS: &[(&str, &[&str])] = &[
    ("filter", &["clean", "smudge", "process"]),
    ("diff", &["textconv", "command"]),
    ("merge", &["driver"]),
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

/// The one builder of every git the daemon runs: `git -C dir`, the programs git could
/// run turned off ([`OFF`], plus `extra` settings), a cleared environment, no terminal.
fn command(dir: &Path, extra: &[String]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("git");
    cmd.env_clear();
    for k in KEEP_ENV {
        if let Some(v) = std::env::var_os(k) {
            cmd.env(k, v);
        }
    }
    // Never wait for a password prompt nobody can see (the daemon has no terminal); never
    // fetch missing objects of a partial clone (a transport is a program too); never take
    // locks only a status refresh wants.
    cmd.env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_NO_LAZY_FETCH", "1")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_PROTOCOL_FROM_USER", "0");
    cmd.arg("--no-pager").arg("-C").arg(dir);
    for setting in OFF.iter().copied().chain(extra.iter().map(String::as_str)) {
        cmd.arg("-c").arg(setting);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// The filter, diff and merge drivers every config file of the repository at `dir`
/// defines, each turned off (`-c filter.NAME.clean=` …): their names are chosen by the
/// repository, so [`OFF`] cannot list them. Reading config runs nothing.
async fn drivers_off(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut cmd = command(dir, &[]);
    cmd.args([
        "config",
        "--null",
        "--name-only",
        "--get-regexp",
        r"^(filter|diff|merge)\.",
    ]);
    let out = crate::children::output(cmd).await?;
    let mut off = Vec::new();
    for name in String::from_utf8_lossy(&out.stdout).split('\0') {
        let name = name.trim();
        let Some((section, rest)) = name.split_once('.') else {
            continue;
        };
        let Some((driver, key)) = rest.rsplit_once('.') else {
            continue;
        };
        let runs = DRIVER_KEYS.iter().any(|(s, keys)| {
            s.eq_ignore_ascii_case(section) && keys.iter().any(|k| k.eq_ignore_ascii_case(key))
        });
        if runs {
            off.push(format!("{section}.{driver}.{key}="));
            if section.eq_ignore_ascii_case("filter") {
                // A required filter that no longer runs fails the command instead.
                off.push(format!("{section}.{driver}.required=false"));
            }
        }
    }
    off.sort();
    off.dedup();
    Ok(off)
}

/// Runs `git -C dir args…` through [`command`] and waits for it. `Err` only when git
/// cannot be started.
pub(crate) async fn run(dir: &Path, args: &[&str]) -> std::io::Result<Output> {
    let extra = drivers_off(dir).await?;
    let mut cmd = command(dir, &extra);
    cmd.args(args);
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
