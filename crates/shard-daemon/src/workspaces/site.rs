//! Where a workspace's repository and worktree are: this machine, or a `[hosts.NAME]`
//! of `config.toml` (docs/hosts.md). Every git call and every look at the disk an
//! operation makes goes through its [`Site`], so the operations read the same on both:
//! on a host, git runs there with exactly the local hardening ([`git::remote_argv`]), and
//! the few directory checks are `sh` scripts fixed here, their paths passed as
//! positional parameters. Both travel over the link the host's Runtimes use.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use shard_protocol::ErrorCode;

use super::git;
use crate::hosts::last_line;
use crate::launcher::{HostOutput, HostRunError, RuntimeLauncher};
use crate::reply::ProtocolError;

/// The canonical path of a directory (fails when it is not one).
const CANONICAL_DIR: &str = r#"cd -P -- "$1" 2>/dev/null && pwd -P"#;
/// A directory.
const IS_DIR: &str = r#"test -d "$1""#;
/// Anything at the path, a dangling symlink too.
const EXISTS: &str = r#"test -e "$1" || test -h "$1""#;
/// A directory only the user reads, with its missing parents.
const PRIVATE_DIR: &str = r#"umask 077 && mkdir -p -- "$1" && chmod 700 -- "$1""#;
/// An empty directory removed.
const REMOVE_DIR: &str = r#"rmdir -- "$1""#;
/// The host's worktree root, `HOME/workspaces` of its `SHARD_HOME` (`~` expanded there),
/// made owner-only, printed canonical.
const HOST_ROOT: &str = r#"h=$1; case $h in "~") h=$HOME;; "~/"*) h=$HOME/${h#"~/"};; esac; r=$h/workspaces; umask 077 && mkdir -p -- "$r" && chmod 700 -- "$r" && cd -P -- "$r" && pwd -P"#;

/// Where a workspace's git runs.
pub(super) enum Site {
    /// The daemon's machine.
    Local,
    /// A configured host.
    Host {
        /// Its `[hosts.NAME]`.
        name: String,
        /// The launcher holding the host's link.
        launcher: Arc<dyn RuntimeLauncher>,
        /// Its `SHARD_HOME` as configured (`~/…` expanded on the host).
        home: String,
    },
}

/// Why git or a directory check could not run.
#[derive(Debug, thiserror::Error)]
pub(super) enum SiteError {
    /// Git could not be started on this machine.
    #[error("could not run git (is it installed and on PATH?): {0}")]
    NoGit(#[source] std::io::Error),
    /// The host has no git (the shell there could not find or run it).
    #[error("git is not available on host {host} ({said}): install git there")]
    NoGitOnHost { host: String, said: String },
    /// The host could not be reached, or the connection ended during the command.
    #[error(transparent)]
    Host(#[from] HostRunError),
    /// A path that cannot cross to a host (not UTF-8).
    #[error("the path {0:?} is not valid UTF-8")]
    Path(String),
    /// The repository (or the git found) cannot be run safely; nothing was run.
    #[error("{0}")]
    Refused(String),
}

impl From<git::GitError> for SiteError {
    fn from(e: git::GitError) -> Self {
        match e {
            git::GitError::Spawn(e) => SiteError::NoGit(e),
            git::GitError::Refused(why) => SiteError::Refused(why),
        }
    }
}

impl SiteError {
    /// The command may have run on the host (the connection ended during it): what it
    /// may have made must not be forgotten.
    pub fn maybe_ran(&self) -> bool {
        matches!(self, SiteError::Host(HostRunError::Lost(_)))
    }
}

impl From<SiteError> for ProtocolError {
    fn from(e: SiteError) -> Self {
        let code = match &e {
            SiteError::NoGit(_) => ErrorCode::InternalError,
            _ => ErrorCode::InvalidRequest,
        };
        ProtocolError::new(code, e.to_string())
    }
}

fn utf8(p: &Path) -> Result<&str, SiteError> {
    p.to_str()
        .ok_or_else(|| SiteError::Path(p.display().to_string()))
}

impl Site {
    /// The host's name, `None` on this machine.
    pub fn host(&self) -> Option<&str> {
        match self {
            Site::Local => None,
            Site::Host { name, .. } => Some(name),
        }
    }

    /// Runs `git -C dir args…` here or on the host, hardened the same way (git.rs).
    pub async fn git(&self, dir: &Path, args: &[&str]) -> Result<git::Output, SiteError> {
        self.git_in(dir, &[], args).await
    }

    /// [`Site::git`], with the drivers of each of `contexts` turned off too: the
    /// directories where a child of this git runs (see [`git::run`]).
    pub async fn git_in(
        &self,
        dir: &Path,
        contexts: &[&Path],
        args: &[&str],
    ) -> Result<git::Output, SiteError> {
        let Site::Host { .. } = self else {
            return git::run(dir, contexts, args).await.map_err(SiteError::from);
        };
        let dir = utf8(dir)?;
        let mut extra = Vec::new();
        for ctx in std::iter::once(Ok(dir)).chain(contexts.iter().map(|c| utf8(c))) {
            let q = self.host_git(ctx?, &[], git::DRIVERS_QUERY).await?;
            let query = git::Output::from_raw(q.code, &q.stdout, &q.stderr);
            if let Err(failed) = git::add_drivers(&mut extra, query, &q.stdout)? {
                return Ok(failed);
            }
        }
        let out = self.host_git(dir, &extra, args).await?;
        Ok(git::Output::from_raw(out.code, &out.stdout, &out.stderr))
    }

    async fn host_git(
        &self,
        dir: &str,
        extra: &[git::Setting],
        args: &[&str],
    ) -> Result<HostOutput, SiteError> {
        let out = self.on_host(git::remote_argv(dir, extra, args)).await?;
        if let (Site::Host { name, .. }, Some(126 | 127)) = (self, out.code) {
            return Err(SiteError::NoGitOnHost {
                host: name.clone(),
                said: last_line(&out.stderr),
            });
        }
        Ok(out)
    }

    async fn on_host(&self, argv: Vec<String>) -> Result<HostOutput, SiteError> {
        match self {
            Site::Local => Err(SiteError::Host(HostRunError::NotStarted(
                "not a host".into(),
            ))),
            Site::Host { name, launcher, .. } => Ok(launcher.run_on_host(name, &argv).await?),
        }
    }

    /// `sh -c SCRIPT sh ARG` on the host: the script is one of this file's constants.
    async fn sh(&self, script: &str, arg: &str) -> Result<HostOutput, SiteError> {
        let argv = ["sh", "-c", script, "sh", arg].map(String::from).to_vec();
        self.on_host(argv).await
    }

    /// The canonical path of directory `p`; `None` when it is not a directory.
    pub async fn canonical_dir(&self, p: &Path) -> Result<Option<PathBuf>, SiteError> {
        if let Site::Local = self {
            return Ok(match tokio::fs::canonicalize(p).await {
                Ok(c) if tokio::fs::metadata(&c).await.is_ok_and(|m| m.is_dir()) => Some(c),
                _ => None,
            });
        }
        let out = self.sh(CANONICAL_DIR, utf8(p)?).await?;
        let line = String::from_utf8_lossy(&out.stdout);
        let line = line.strip_suffix('\n').unwrap_or(&line);
        Ok((out.code == Some(0) && line.starts_with('/')).then(|| PathBuf::from(line)))
    }

    /// `""` here, ` on host NAME` for a host: for messages.
    pub fn on(&self) -> String {
        self.host()
            .map(|h| format!(" on host {h}"))
            .unwrap_or_default()
    }

    /// `p` is a directory.
    pub async fn is_dir(&self, p: &Path) -> Result<bool, SiteError> {
        if let Site::Local = self {
            return Ok(tokio::fs::metadata(p).await.is_ok_and(|m| m.is_dir()));
        }
        Ok(self.sh(IS_DIR, utf8(p)?).await?.code == Some(0))
    }

    /// Something is at `p` (a dangling symlink counts).
    pub async fn exists(&self, p: &Path) -> Result<bool, SiteError> {
        if let Site::Local = self {
            return Ok(tokio::fs::symlink_metadata(p).await.is_ok());
        }
        Ok(self.sh(EXISTS, utf8(p)?).await?.code == Some(0))
    }

    /// Makes `p` (and its parents) owner-only; best effort, as git then says what failed.
    pub async fn make_private_dir(&self, p: &Path) {
        if let Site::Local = self {
            let made = p.to_path_buf();
            let _ =
                tokio::task::spawn_blocking(move || crate::fsutil::ensure_private_dir(&made)).await;
            return;
        }
        if let Ok(p) = utf8(p) {
            let _ = self.sh(PRIVATE_DIR, p).await;
        }
    }

    /// Removes `p` when it is an empty directory; best effort.
    pub async fn remove_dir(&self, p: &Path) {
        if let Site::Local = self {
            let _ = tokio::fs::remove_dir(p).await;
            return;
        }
        if let Ok(p) = utf8(p) {
            let _ = self.sh(REMOVE_DIR, p).await;
        }
    }

    /// The host's worktree root (`SHARD_HOME/workspaces` there), made owner-only.
    /// `None` on this machine, whose root the daemon's configuration names.
    pub async fn host_root(&self) -> Result<Option<PathBuf>, ProtocolError> {
        let Site::Host { name, home, .. } = self else {
            return Ok(None);
        };
        let out = self.sh(HOST_ROOT, home).await?;
        let line = String::from_utf8_lossy(&out.stdout);
        let line = line.strip_suffix('\n').unwrap_or(&line);
        if out.code != Some(0) || !line.starts_with('/') {
            return Err(ProtocolError::new(
                ErrorCode::InternalError,
                format!(
                    "could not create the workspaces root under {home} on host {name}: {}",
                    last_line(&out.stderr)
                ),
            ));
        }
        Ok(Some(PathBuf::from(line)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host's scripts, run here by `sh` as the host's would: a home with shell syntax
    /// in it is a path, `~` is the host's `HOME`.
    #[test]
    fn the_host_root_script_expands_the_tilde_and_runs_nothing_in_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let pwned = dir.path().join("pwned");
        let home = format!("~/x $(touch {}) `id`", pwned.display());
        let out = std::process::Command::new("sh")
            .args(["-c", HOST_ROOT, "sh", &home])
            .env("HOME", dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let root = String::from_utf8(out.stdout).unwrap();
        let want = dir
            .path()
            .canonicalize()
            .unwrap()
            .join(format!("x $(touch {}) `id`", pwned.display()))
            .join("workspaces");
        assert_eq!(root.trim_end_matches('\n'), want.display().to_string());
        assert!(want.is_dir() && !pwned.exists());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&want).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
        let canon = std::process::Command::new("sh")
            .args(["-c", CANONICAL_DIR, "sh", &want.display().to_string()])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8(canon.stdout).unwrap(),
            format!("{}\n", want.display())
        );
    }
}
