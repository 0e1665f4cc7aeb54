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
//! repository's own config defines, in every config context a child git reads) is turned
//! off by settings in the environment (`GIT_CONFIG_*`, taken whole, overriding every
//! config file), and git starts with an environment holding only what it needs (no key,
//! no token, no `GIT_*` variable of the daemon's). docs/workspaces.md lists it.
//!
//! A workspace on a host runs the same git there ([`remote_argv`]): the same settings, the
//! host's environment cleared the same way, every word passed as an argument.

use std::path::Path;

pub(crate) use super::porcelain::{
    StatusSummary, parse_counts, parse_status, parse_worktrees, short_ref,
};
use std::process::Stdio;

/// One config setting, key and value, as git is given it.
pub(crate) type Setting = (String, String);

/// Settings given to every git through `GIT_CONFIG_COUNT`/`_KEY_n`/`_VALUE_n`: each names
/// a program git would otherwise run (or a way to reach one). Git takes each key and
/// value whole from the environment and they win over every config file.
const OFF: &[(&str, &str)] = &[
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("sequence.editor", "false"),
    ("core.askPass", ""),
    ("core.sshCommand", "false"),
    ("core.gitProxy", ""),
    ("core.alternateRefsCommand", ""),
    ("diff.external", ""),
    ("credential.helper", ""),
    ("protocol.allow", "never"),
    ("submodule.recurse", "false"),
    // A submodule is a repository of its own, with its own config: never looked into.
    ("diff.ignoreSubmodules", "all"),
    ("status.submoduleSummary", "false"),
    ("log.showSignature", "false"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("gpg.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.x509.program", "false"),
    ("uploadpack.packObjectsHook", ""),
    ("receive.procReceiveRefs", ""),
];

/// A key of the daemon's own, given with [`OFF`]: a git that lists it back at `command`
/// scope takes settings from the environment. An older git (before 2.31) would ignore
/// every override and run what the repository names, so it is refused.
const PROBE: (&str, &str) = ("shard.overrides", "environment");

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

/// Why the daemon's git did not run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GitError {
    /// Git could not be started.
    #[error("could not run git (is it installed and on PATH?): {0}")]
    Spawn(#[source] std::io::Error),
    /// The repository or the git found cannot be run safely: nothing was run.
    #[error("{0}")]
    Refused(String),
}

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

    /// From raw bytes.
    pub fn from_raw(code: Option<i32>, stdout: &[u8], stderr: &[u8]) -> Self {
        Output {
            code,
            stdout: String::from_utf8_lossy(stdout).into_owned(),
            stderr: String::from_utf8_lossy(stderr).into_owned(),
        }
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

/// What lists the repository's filter, diff and merge drivers with the scope of each
/// (reading config runs nothing), and the daemon's [`PROBE`]; [`drivers_in`] reads it.
pub(crate) const DRIVERS_QUERY: &[&str] = &[
    "config",
    "--null",
    "--name-only",
    "--show-scope",
    "--get-regexp",
    r"^(filter|diff|merge|shard)\.",
];

/// The `GIT_CONFIG_*` variables giving git [`OFF`], [`PROBE`] and `extra`: each key and
/// value is one variable, so no name the repository chose can split into another setting.
fn config_env(extra: &[Setting]) -> Vec<(String, String)> {
    let all: Vec<(&str, &str)> = OFF
        .iter()
        .copied()
        .chain(std::iter::once(PROBE))
        .chain(extra.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .collect();
    let mut env = vec![("GIT_CONFIG_COUNT".to_string(), all.len().to_string())];
    for (i, (k, v)) in all.into_iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{i}"), k.to_string()));
        env.push((format!("GIT_CONFIG_VALUE_{i}"), v.to_string()));
    }
    env
}

/// The one builder of every git the daemon runs on its own machine: `git -C dir`, a
/// cleared environment ([`KEEP_ENV`], [`SET_ENV`]) holding the settings that turn off
/// every program git could run ([`config_env`]), no pager, no terminal.
/// [`remote_argv`] is its twin for a host.
fn command(dir: &Path, extra: &[Setting]) -> tokio::process::Command {
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
    cmd.envs(config_env(extra));
    cmd.arg("--no-pager").arg("-C").arg(dir);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// The program and arguments that run `git -C dir args…` on a host with exactly the
/// hardening of [`command`]: `env -i` keeping only the host's own [`KEEP_ENV`]
/// variables plus [`SET_ENV`], and the same `GIT_CONFIG_*` variables. The script is
/// built from those constants alone; the variables, `dir` and `args` reach `env` and git
/// as positional parameters (`"$@"`), never as shell text (`env` splits an assignment at
/// its first `=`, which ends the fixed variable name).
pub(crate) fn remote_argv(dir: &str, extra: &[Setting], args: &[&str]) -> Vec<String> {
    let mut script = String::from("exec env -i");
    for k in KEEP_ENV {
        // Passed on only when set there: `${V+"V=$V"}` is one word or none.
        script.push_str(&format!(" ${{{k}+\"{k}=${k}\"}}"));
    }
    for (k, v) in SET_ENV {
        script.push_str(&format!(" {k}={v}"));
    }
    script.push_str(" \"$@\"");
    let mut argv = vec!["sh".to_string(), "-c".into(), script, "sh".into()];
    argv.extend(
        config_env(extra)
            .into_iter()
            .map(|(k, v)| format!("{k}={v}")),
    );
    argv.extend([
        "git".to_string(),
        "--no-pager".into(),
        "-C".into(),
        dir.into(),
    ]);
    argv.extend(args.iter().map(|a| a.to_string()));
    argv
}

/// The filter, diff and merge drivers named in `out` (the output of [`DRIVERS_QUERY`]:
/// NUL-separated scope and name pairs), each turned off (`filter.NAME.clean` = ``…):
/// their names are chosen by the repository, so [`OFF`] cannot list them. Refused when
/// git did not list the [`PROBE`] back (it ignores settings from the environment) or a
/// driver's name is not UTF-8 (it could not cross to a host as an argument).
pub(crate) fn drivers_in(out: &[u8]) -> Result<Vec<Setting>, GitError> {
    let mut off = Vec::new();
    let mut probed = false;
    let mut fields = out.split(|b| *b == 0);
    while let (Some(scope), Some(name)) = (fields.next(), fields.next()) {
        if scope == b"command" && name == PROBE.0.as_bytes() {
            probed = true;
            continue;
        }
        // Section and key are what git canonicalised (ASCII, lower case); the driver
        // between them is the repository's own spelling, dots and all.
        let Some(first) = name.iter().position(|b| *b == b'.') else {
            continue;
        };
        let Some(last) = name.iter().rposition(|b| *b == b'.') else {
            continue;
        };
        if last <= first {
            continue;
        }
        let (section, driver, key) = (&name[..first], &name[first + 1..last], &name[last + 1..]);
        let runs = DRIVER_KEYS.iter().any(|(s, keys)| {
            s.as_bytes().eq_ignore_ascii_case(section)
                && keys.iter().any(|k| k.as_bytes().eq_ignore_ascii_case(key))
        });
        if !runs {
            continue;
        }
        let (Ok(section), Ok(driver), Ok(key)) = (
            std::str::from_utf8(section),
            std::str::from_utf8(driver),
            std::str::from_utf8(key),
        ) else {
            return Err(GitError::Refused(
                "the repository's git config names a filter, diff or merge driver whose name is not UTF-8; the daemon runs no git in it".into(),
            ));
        };
        off.push((format!("{section}.{driver}.{key}"), String::new()));
        if section.eq_ignore_ascii_case("filter") {
            // A required filter that no longer runs fails the command instead.
            off.push((format!("{section}.{driver}.required"), "false".into()));
        }
    }
    if !probed {
        return Err(GitError::Refused(
            "this git does not take settings from the environment (GIT_CONFIG_COUNT, git 2.31 or later): the daemon cannot turn off the programs a repository names, so it runs no git in it; install a newer git".into(),
        ));
    }
    off.sort();
    off.dedup();
    Ok(off)
}

/// Adds the drivers of one query's output to `all`; `Ok(Err(out))` when the query
/// itself failed (git cannot read that directory's config), which the caller returns
/// as the command's own failure, having run nothing.
pub(crate) fn add_drivers(
    all: &mut Vec<Setting>,
    query: Output,
    raw: &[u8],
) -> Result<Result<(), Output>, GitError> {
    // Exit 1 with nothing said is "no such key": a git that ignored the probe.
    let none_found = query.code == Some(1) && query.stderr.trim().is_empty();
    if !query.ok() && !none_found {
        return Ok(Err(query));
    }
    all.extend(drivers_in(raw)?);
    all.sort();
    all.dedup();
    Ok(Ok(()))
}

/// Runs `git -C dir args…` through [`command`] and waits for it, with the drivers of
/// `dir` and of each of `contexts` turned off: a directory where a child of that git
/// runs (the worktree `git worktree remove` checks) reads config its own way
/// (`includeIf "gitdir:…"`, `"onbranch:…"`). When git cannot even read the config of
/// one of them, nothing else is run and that failure is the answer.
pub(crate) async fn run(dir: &Path, contexts: &[&Path], args: &[&str]) -> Result<Output, GitError> {
    let mut extra = Vec::new();
    for ctx in std::iter::once(dir).chain(contexts.iter().copied()) {
        let mut cmd = command(ctx, &[]);
        cmd.args(DRIVERS_QUERY);
        let out = crate::children::output(cmd)
            .await
            .map_err(GitError::Spawn)?;
        let query = Output::from_raw(out.status.code(), &out.stdout, &out.stderr);
        if let Err(failed) = add_drivers(&mut extra, query, &out.stdout)? {
            return Ok(failed);
        }
    }
    let mut cmd = command(dir, &extra);
    cmd.args(args);
    let out = crate::children::output(cmd)
        .await
        .map_err(GitError::Spawn)?;
    Ok(Output::from_raw(
        out.status.code(),
        &out.stdout,
        &out.stderr,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let sneaky = format!("a=b $(touch {}).x", pwned.display());
        let extra = vec![(format!("filter.{sneaky}.clean"), String::new())];
        let argv = remote_argv(&weird, &extra, &["status", "`id`"]);
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
        let env: Vec<(&str, &str)> = env
            .lines()
            .filter_map(|l| l.split_once('='))
            // What the fake git's own shell sets is not the environment it was given.
            .filter(|(k, _)| !["PWD", "OLDPWD", "SHLVL", "_"].contains(k))
            .collect();
        let names: Vec<&str> = env
            .iter()
            .map(|(k, _)| *k)
            .filter(|k| !k.starts_with("GIT_CONFIG_"))
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
            "{env:?}"
        );
        let mut config: Vec<(String, String)> = env
            .iter()
            .filter(|(k, _)| k.starts_with("GIT_CONFIG_"))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut want = config_env(&extra);
        config.sort();
        want.sort();
        assert_eq!(config, want);
        assert!(want.contains(&(
            format!("GIT_CONFIG_KEY_{}", OFF.len() + 1),
            format!("filter.{sneaky}.clean")
        )));
        let args: Vec<&str> = args.lines().collect();
        assert_eq!(args, ["--no-pager", "-C", weird.as_str(), "status", "`id`"]);
        assert!(!pwned.exists());
    }

    /// Each setting is one variable: a key holding `=`, dots, spaces or quotes reaches
    /// git whole, which `-c` (split at the first `=`) never did.
    #[test]
    fn every_setting_travels_whole_in_the_environment() {
        let extra = vec![("filter.a=b.clean".to_string(), String::new())];
        let env = config_env(&extra);
        assert_eq!(
            env[0],
            ("GIT_CONFIG_COUNT".into(), (OFF.len() + 2).to_string())
        );
        let n = OFF.len() + 1;
        assert!(env.contains(&(format!("GIT_CONFIG_KEY_{n}"), "filter.a=b.clean".into())));
        assert!(env.contains(&(format!("GIT_CONFIG_VALUE_{n}"), String::new())));
        assert!(env.contains(&("GIT_CONFIG_KEY_1".into(), "core.hooksPath".into())));
        assert!(env.contains(&("GIT_CONFIG_VALUE_1".into(), "/dev/null".into())));
    }

    fn query(pairs: &[(&str, &[u8])]) -> Vec<u8> {
        let mut v = Vec::new();
        for (scope, name) in pairs {
            v.extend_from_slice(scope.as_bytes());
            v.push(0);
            v.extend_from_slice(name);
            v.push(0);
        }
        v
    }

    #[test]
    fn drivers_named_by_the_repository_are_turned_off_whatever_their_names() {
        let out = query(&[
            ("command", b"shard.overrides"),
            ("command", b"diff.external"),
            ("local", b"filter.lfs.clean"),
            ("local", b"filter.a=b.smudge"),
            ("local", b"filter.x.y z\"q.process"),
            ("local", b"diff.Up.textconv"),
            ("local", b"merge.m.name"),
            ("local", b"merge.m.driver"),
            ("local", b"shard.overrides"),
        ]);
        let off = drivers_in(&out).unwrap();
        let keys: Vec<&str> = off.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "diff.Up.textconv",
                "filter.a=b.required",
                "filter.a=b.smudge",
                "filter.lfs.clean",
                "filter.lfs.required",
                "filter.x.y z\"q.process",
                "filter.x.y z\"q.required",
                "merge.m.driver"
            ]
        );
        assert!(
            off.iter()
                .all(|(k, v)| v.is_empty() || (k.ends_with(".required") && v == "false"))
        );
    }

    #[test]
    fn a_git_that_ignores_the_environment_or_a_name_not_utf8_is_refused() {
        // The probe only at the repository's own scope: it did not come from us.
        let spoofed = query(&[("local", b"shard.overrides"), ("local", b"filter.x.clean")]);
        assert!(matches!(drivers_in(&spoofed), Err(GitError::Refused(_))));
        assert!(matches!(drivers_in(b""), Err(GitError::Refused(_))));
        let latin1 = query(&[
            ("command", b"shard.overrides"),
            ("local", b"filter.\xe9.clean"),
        ]);
        assert!(matches!(drivers_in(&latin1), Err(GitError::Refused(_))));
        // Exit 1 without a word is "nothing found": still refused for want of the probe.
        let mut all = Vec::new();
        let none = Output::from_raw(Some(1), b"", b"");
        assert!(add_drivers(&mut all, none, b"").is_err());
        let failed = Output::from_raw(Some(128), b"", b"fatal: cannot change to 'x'");
        assert!(matches!(add_drivers(&mut all, failed, b""), Ok(Err(_))));
    }
}
