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
/// its own. The zygote is started with the first turn, so it is normally ready; the bound is
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
                loop {
                    read_record(channel, record, got).await?;
                    let report = parse_report(record);
                    *got = 0;
                    match report {
                        Report::Started(_) => continue,
                        Report::Exited(status) => return Ok(ExitStatus::from_raw(status)),
                        Report::Failed(why) => return Err(std::io::Error::other(why)),
                    }
                }
            }
        }
    }

    /// A zygote call's first record: the pid of its init, which leads the call's process
    /// group. None when the call ended at once (its end is then what [`Running::wait`]
    /// returns) or for a child.
    #[cfg(target_os = "linux")]
    async fn started(&mut self) -> Option<i32> {
        let Running::Call {
            channel,
            record,
            got,
        } = self
        else {
            return None;
        };
        read_record(channel, record, got).await.ok()?;
        match shard_sandbox::zygote::parse_report(record) {
            shard_sandbox::zygote::Report::Started(pid) => {
                *got = 0;
                Some(pid)
            }
            _ => None,
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

/// Completes the record being read. Cancel-safe: what was read stays in `record`.
#[cfg(target_os = "linux")]
async fn read_record(
    channel: &mut tokio::net::UnixStream,
    record: &mut [u8],
    got: &mut usize,
) -> std::io::Result<()> {
    while *got < record.len() {
        let n = channel.read(&mut record[*got..]).await?;
        if n == 0 {
            return Err(std::io::Error::other("the sandbox ended the call"));
        }
        *got += n;
    }
    Ok(())
}

/// Starts `bash -c command` in the sandbox's zygote, with the pid of the call's init
/// (the leader of its process group) once known; None when there is no zygote (the
/// caller spawns the command itself). The command's output comes out of the pipe
/// returned last.
#[cfg(target_os = "linux")]
pub(super) async fn spawn_in_zygote(
    command: &str,
    ctx: &ToolContext,
) -> Option<(Running, Option<i32>, std::io::PipeReader)> {
    let mut zygote = ctx.sandbox.zygote(Duration::ZERO);
    if zygote.is_none() && ctx.sandbox.is_active() {
        let sandbox = ctx.sandbox.clone();
        zygote = tokio::task::spawn_blocking(move || sandbox.zygote(ZYGOTE_WAIT))
            .await
            .ok()
            .flatten();
    }
    let zygote = zygote?;
    let started = (|| -> std::io::Result<(Running, Option<i32>, std::io::PipeReader)> {
        // The write end goes into the request: once it is sent, only the command holds it.
        let (output_read, output) = std::io::pipe()?;
        let stdin = OwnedFd::from(std::fs::File::open("/dev/null")?);
        let request = shard_sandbox::zygote::CallRequest {
            argv: vec!["bash".into(), "-c".into(), command.into()],
            env: environment(ctx),
            cwd: ctx.cwd.clone(),
            stdin,
            stdout: OwnedFd::from(output.try_clone()?),
            stderr: OwnedFd::from(output),
        };
        let call = zygote.spawn(request)?;
        let init = call.init();
        let channel = call.into_channel();
        channel.set_nonblocking(true)?;
        let running = Running::Call {
            channel: tokio::net::UnixStream::from_std(channel)?,
            record: [0; shard_sandbox::zygote::RECORD_LEN],
            got: 0,
        };
        Ok((running, init, output_read))
    })();
    match started {
        Ok((running, Some(init), output)) => Some((running, Some(init), output)),
        Ok((mut running, None, output)) => {
            // Bounded: a wedged zygote must not keep the call from being aborted.
            let init = tokio::time::timeout(ZYGOTE_WAIT, running.started())
                .await
                .ok()
                .flatten();
            Some((running, init, output))
        }
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
