//! A running `bash` command, whichever way it was started: a child process of the
//! Runtime (sandbox off, or the sandbox entered per call), or a call forked by the
//! sandbox's zygote (docs/sandbox.md), which reports on a socket instead of being waited
//! for.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::process;
use crate::tool::ToolContext;

/// How long a call waits for a zygote being started before entering the sandbox on
/// its own. The zygote is started after `hello`, so it is normally ready; the bound is
/// its own setup timeout, so a slow machine still runs every call in it and only a hung
/// start falls back.
#[cfg(target_os = "linux")]
const ZYGOTE_WAIT: Duration = Duration::from_secs(10);

/// The command being run.
pub(super) enum Running {
    /// A child of the Runtime, leader of process group `pgid`.
    Child {
        child: tokio::process::Child,
        pgid: i32,
    },
    /// A call of the sandbox's zygote: its init reports the end on `channel` once every
    /// process of the call is gone, and takes signals on it; dropping it kills the call.
    #[cfg(target_os = "linux")]
    Call {
        channel: tokio::net::UnixStream,
        record: [u8; shard_sandbox::zygote::RECORD_LEN],
        got: usize,
    },
}

impl Running {
    /// Waits for the command's end. Cancel-safe (used in `select!`).
    pub(super) async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        match self {
            Running::Child { child, .. } => child.wait().await,
            #[cfg(target_os = "linux")]
            Running::Call {
                channel,
                record,
                got,
            } => {
                use shard_sandbox::zygote::{Report, parse_report};
                while *got < record.len() {
                    let n = channel.read(&mut record[*got..]).await?;
                    if n == 0 {
                        return Err(std::io::Error::other("the sandbox ended the call"));
                    }
                    *got += n;
                }
                match parse_report(record) {
                    Report::Exited(status) => Ok(ExitStatus::from_raw(status)),
                    Report::Failed(why) => Err(std::io::Error::other(why)),
                }
            }
        }
    }

    /// Ends the command and everything it started: SIGTERM, then SIGKILL once `grace`
    /// has passed. Returns the command's status when known.
    pub(super) async fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        match self {
            Running::Child { child, pgid } => {
                process::terminate_group(*pgid, child, grace).await;
                child.try_wait().ok().flatten()
            }
            #[cfg(target_os = "linux")]
            Running::Call { .. } => {
                use shard_sandbox::zygote::signal_record;
                for (signal, wait) in [
                    (libc::SIGTERM, grace),
                    (libc::SIGKILL, Duration::from_secs(10)),
                ] {
                    if let Running::Call { channel, .. } = self
                        && channel.write_all(&signal_record(signal)).await.is_err()
                    {
                        return None;
                    }
                    match tokio::time::timeout(wait, self.wait()).await {
                        Ok(Ok(status)) => return Some(status),
                        Ok(Err(_)) => return None,
                        Err(_) => {}
                    }
                }
                tracing::warn!("a sandboxed call did not end after SIGKILL");
                None
            }
        }
    }
}

/// Starts `bash -c command` in the sandbox's zygote; None when there is none (the caller
/// spawns it itself). `output` is the write end of the output pipe.
#[cfg(target_os = "linux")]
pub(super) async fn spawn_in_zygote(
    command: &str,
    ctx: &ToolContext,
    output: &std::io::PipeWriter,
) -> Option<Running> {
    let mut zygote = ctx.sandbox.zygote(Duration::ZERO);
    if zygote.is_none() && ctx.sandbox.is_active() {
        let sandbox = ctx.sandbox.clone();
        zygote = tokio::task::spawn_blocking(move || sandbox.zygote(ZYGOTE_WAIT))
            .await
            .ok()
            .flatten();
    }
    let zygote = zygote?;
    let started = (|| -> std::io::Result<Running> {
        let stdin = OwnedFd::from(std::fs::File::open("/dev/null")?);
        let request = shard_sandbox::zygote::CallRequest {
            argv: vec!["bash".into(), "-c".into(), command.into()],
            env: environment(ctx),
            cwd: ctx.cwd.clone(),
            stdin,
            stdout: OwnedFd::from(output.try_clone()?),
            stderr: OwnedFd::from(output.try_clone()?),
        };
        let channel = zygote.spawn(request)?.into_channel();
        channel.set_nonblocking(true)?;
        Ok(Running::Call {
            channel: tokio::net::UnixStream::from_std(channel)?,
            record: [0; shard_sandbox::zygote::RECORD_LEN],
            got: 0,
        })
    })();
    match started {
        Ok(running) => Some(running),
        Err(err) => {
            tracing::debug!(%err, "the sandbox zygote cannot take the call; entering the sandbox per call");
            None
        }
    }
}

/// The command's environment: the Runtime's, without the removed variables, with the
/// settings every `bash` call gets.
#[cfg(target_os = "linux")]
fn environment(ctx: &ToolContext) -> Vec<(OsString, OsString)> {
    let removed = |k: &OsString| {
        ctx.env_remove
            .iter()
            .map(String::as_str)
            .chain(super::ALWAYS_REMOVED_ENV.iter().copied())
            .chain(super::SET_ENV.iter().map(|(k, _)| *k))
            .any(|r| k == r)
    };
    let mut env: Vec<(OsString, OsString)> =
        std::env::vars_os().filter(|(k, _)| !removed(k)).collect();
    env.extend(
        super::SET_ENV
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    env
}
