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
//!
//! A workspace on a host runs the same git there ([`remote_argv`]): the same options, the
//! host's environment cleared the same way, every word passed as an argument.

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

/// Variables every git is started with: never wait for a password prompt nobody can
/// see (the daemon has no terminal); never fetch missing objects of a partial clone (a
/// transport is a program too); never take locks only a status refresh wants.
const SET_ENV: &[(&str, &str)] = &[
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_NO_LAZY_FETCH", "1"),
    ("GIT_OPTIONAL_LOCKS", "0"),
    ("GIT_PROTOCOL_FROM_USER", "0"),
];

/// What lists the repository's filter, diff and merge drivers (reading config runs
/// nothing); [`drivers_off`] turns each off.
pub(crate) const DRIVERS_QUERY: &[&str] = &[
    "config",
    "--null",
    "--name-only",
    "--get-regexp",
    r"^(filter|diff|merge)\.",
];

/// git's global options for every run: no pager, and each setting of [`OFF`] and
/// `extra` given with `-c`.
fn options(extra: &[String]) -> Vec<String> {
    let mut v = vec!["--no-pager".to_string()];
    for setting in OFF.iter().copied().chain(extra.iter().map(String::as_str)) {
        v.push("-c".into());
        v.push(setting.into());
    }
    v
}

/// The one builder of every git the daemon runs on its own machine: `git -C dir`, the
/// programs git could run turned off ([`options`]), a cleared environment
/// ([`KEEP_ENV`], [`SET_ENV`]), no terminal. [`remote_argv`] is its twin for a host.
fn command(dir: &Path, extra: &[String]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("git");
    cmd.env_clear();
    for k in KEEP_ENV {
        if let Some(v) = std::env::var_os(k) {
            cmd.env(k, v);
        }
    }
    for (k, v) in SET_ENV {
        cmd.env(k, v);
    }
    cmd.args(options(extra)).arg("-C").arg(dir);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// The program and arguments that run `git -C dir args…` on a host with exactly the
/// hardening of [`command`]: the same options, and `env -i` keeping only the host's own
/// [`KEEP_ENV`] variables plus [`SET_ENV`]. The script is built from those constants
/// alone; `dir`, the settings and `args` reach git as positional parameters (`"$@"`),
/// never as shell text.
pub(crate) fn remote_argv(dir: &str, extra: &[String], args: &[&str]) -> Vec<String> {
    let mut script = String::from("exec env -i");
    for k in KEEP_ENV {
        // Passed on only when set there: `${V+"V=$V"}` is one word or none.
        script.push_str(&format!(" ${{{k}+\"{k}=${k}\"}}"));
    }
    for (k, v) in SET_ENV {
        script.push_str(&format!(" {k}={v}"));
    }
    script.push_str(" git \"$@\"");
    let mut argv = vec!["sh".to_string(), "-c".into(), script, "sh".into()];
    argv.extend(options(extra));
    argv.push("-C".into());
    argv.push(dir.into());
    argv.extend(args.iter().map(|a| a.to_string()));
    argv
}

/// The filter, diff and merge drivers named in `names` (the NUL-separated output of
/// [`DRIVERS_QUERY`]), each turned off (`-c filter.NAME.clean=` …): their names are
/// chosen by the repository, so [`OFF`] cannot list them.
pub(crate) fn drivers_in(names: &[u8]) -> Vec<String> {
    let mut off = Vec::new();
    for name in String::from_utf8_lossy(names).split('\0') {
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
    off
}

/// The drivers every config file of the repository at `dir` defines, each turned off.
async fn drivers_off(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut cmd = command(dir, &[]);
    cmd.args(DRIVERS_QUERY);
    let out = crate::children::output(cmd).await?;
    Ok(drivers_in(&out.stdout))
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

    /// The host's twin of [`command`]: run here by `sh` as a host's shell would, with
    /// a `git` that prints what it was given.
    #[test]
    fn the_remote_git_gets_the_same_options_and_only_the_kept_environment() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join("git");
        std::fs::write(
            &git,
            "#!/bin/sh\nenv | sort\necho --\nprintf '%s\\n' \"$@\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755)).unwrap();
        let pwned = dir.path().join("pwned");
        let weird = format!("/x y/$(touch {})/'q'", pwned.display());
        let argv = remote_argv(&weird, &["filter.lfs.clean=".into()], &["status", "`id`"]);
        let out = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", dir.path().display()))
            .env("HOME", "/home/h")
            .env("ANTHROPIC_API_KEY", "secret")
            .env("GIT_DIR", "/elsewhere")
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let (env, args) = text.split_once("--\n").unwrap();
        // What the fake git's own shell sets is not the environment it was given.
        let names: Vec<&str> = env
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, _)| k)
            .filter(|k| !["PWD", "OLDPWD", "SHLVL", "_"].contains(k))
            .collect();
        assert_eq!(
            names,
            [
                "GIT_NO_LAZY_FETCH",
                "GIT_OPTIONAL_LOCKS",
                "GIT_PROTOCOL_FROM_USER",
                "GIT_TERMINAL_PROMPT",
                "HOME",
                "PATH"
            ],
            "{env}"
        );
        let args: Vec<&str> = args.lines().collect();
        let mut want = options(&["filter.lfs.clean=".into()]);
        want.extend([
            "-C".to_string(),
            weird.clone(),
            "status".into(),
            "`id`".into(),
        ]);
        assert_eq!(args, want);
        assert!(args.contains(&"core.hooksPath=/dev/null"));
        assert!(!pwned.exists());
    }

    #[test]
    fn drivers_named_by_the_repository_are_turned_off() {
        let off = drivers_in(b"filter.lfs.clean\0diff.x.textconv\0merge.m.name\0merge.m.driver\0");
        assert_eq!(
            off,
            [
                "diff.x.textconv=",
                "filter.lfs.clean=",
                "filter.lfs.required=false",
                "merge.m.driver="
            ]
        );
    }

    #[test]
    fn counts_and_refs() {
        assert_eq!(parse_counts("3\t5\n"), Some((3, 5)));
        assert_eq!(parse_counts("x"), None);
        assert_eq!(short_ref("refs/heads/a/b"), "a/b");
        assert_eq!(short_ref("refs/remotes/o/m"), "refs/remotes/o/m");
    }
}
