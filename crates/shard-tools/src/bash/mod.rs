//! `bash`: runs `bash -c` in the agent's cwd, in its own process group and in the
//! agent's sandbox (shard-sandbox), with stdout and stderr interleaved on one pipe,
//! bounded in time and output size.

pub mod process;
mod running;

use running::Running;

use std::os::fd::OwnedFd;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::AsyncReadExt;

use crate::output::OutputCollector;
use crate::paths;
use crate::tool::{ToolContext, ToolOutput};
use crate::typed::TypedTool;

/// Once the main process has exited, output still arriving is read for at most this
/// long, so a background process holding the pipe cannot hang the call.
const DRAIN_TOTAL: Duration = Duration::from_millis(1000);
/// ... and reading stops as soon as the pipe stays quiet this long.
const DRAIN_IDLE: Duration = Duration::from_millis(50);

/// Variables always removed from tool processes, whatever the Runtime passes
/// (docs/protocol.md §16 item 14).
pub const ALWAYS_REMOVED_ENV: &[&str] = &["SHARD_AGENT_TOKEN"];

/// Variables every command gets: no pager, no prompt, a dumb terminal.
const SET_ENV: &[(&str, &str)] = &[
    ("TERM", "dumb"),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
];

/// Arguments of `bash`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BashArgs {
    /// The command line, run with `bash -c` in the working directory. Stdin is closed.
    #[schemars(description = "")]
    pub command: String,
    /// Timeout in milliseconds (default 120000; larger values are capped at the configured maximum).
    #[schemars(description = "Default 120000.")]
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// The `bash` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct BashTool;

impl TypedTool for BashTool {
    type Args = BashArgs;
    const NAME: &'static str = "bash";
    const DESCRIPTION: &'static str = "Run `bash -c COMMAND` in the working directory, stdin closed. Output over 50 KB or 2000 lines keeps head and tail; the full output is \
        saved to a file the result names. A timeout kills all the command started. Sandbox (Linux default): \
        writes only in the workspace and /tmp; background processes end with the command.";
    const READ_ONLY: bool = false;

    fn run<'a>(&'a self, args: BashArgs, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        run_bash(args, ctx).boxed()
    }
}

enum Ending {
    Exited(ExitStatus),
    Failed(std::io::Error),
    TimedOut,
    Aborted,
}

async fn run_bash(args: BashArgs, ctx: &ToolContext) -> ToolOutput {
    if args.command.trim().is_empty() {
        return ToolOutput::error(
            "invalid arguments for `bash`: field `command`: must not be empty",
        );
    }
    if args.timeout_ms == Some(0) {
        return ToolOutput::error(
            "invalid arguments for `bash`: field `timeout_ms`: must be at least 1",
        );
    }
    let mut timeout = args
        .timeout_ms
        .map(Duration::from_millis)
        .unwrap_or(ctx.limits.bash_default_timeout);
    let mut capped_note = String::new();
    if timeout > ctx.limits.bash_max_timeout {
        timeout = ctx.limits.bash_max_timeout;
        capped_note = format!(
            "[timeout capped at the {} ms maximum]\n",
            timeout.as_millis()
        );
    }
    prune_dead_groups(ctx).await;

    let started = Instant::now();
    let elapsed_ms = |s: Instant| s.elapsed().as_millis() as u64;
    let (mut running, reader, mut guard) = match start(&args.command, ctx).await {
        Ok(s) => s,
        Err(err) => {
            let mut out = ToolOutput::error(format!("Could not start bash: {err}"));
            out.duration_ms = Some(elapsed_ms(started));
            return out;
        }
    };

    let mut collector = OutputCollector::new(
        ctx.limits.max_output_bytes,
        ctx.limits.max_output_lines,
        &ctx.output_dir,
        "bash",
    );
    let mut reader = match reader {
        Ok(r) => Some(r),
        Err(err) => {
            tracing::warn!(%err, "cannot watch bash output");
            None
        }
    };
    let mut buf = vec![0u8; 64 * 1024];
    let deadline = tokio::time::Instant::now() + timeout;
    let ending = loop {
        tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => break Ending::Aborted,
            _ = tokio::time::sleep_until(deadline) => break Ending::TimedOut,
            // Exit before output: a background process flooding the pipe must not hide
            // the main process's exit; what is left is drained afterwards.
            status = running.wait() => match status {
                Ok(status) => break Ending::Exited(status),
                Err(err) => break Ending::Failed(err),
            },
            read = read_some(&mut reader, &mut buf) => match read {
                Some(n) => collector.push(&buf[..n]).await,
                None => reader = None,
            },
        }
    };

    let status = match ending {
        Ending::Exited(status) => {
            drain(&mut reader, &mut buf, &mut collector).await;
            status
        }
        // A failed wait is a zygote call's setup failing or its sandbox lost: its init is
        // gone or about to be. Ended like a timeout, so that what it wrote is kept and the
        // guard is disarmed (killing the group of an init already gone could hit another
        // group that took its id).
        stopped => {
            let what = match stopped {
                Ending::Failed(err) => format!("Could not run bash: {err}"),
                Ending::TimedOut => format!(
                    "Command timed out after {} ms; it and every process it started were killed. Retry with a larger timeout_ms or run long jobs in the background.",
                    timeout.as_millis()
                ),
                _ => {
                    "Command was aborted; it and every process it started were killed.".to_string()
                }
            };
            let status = running.terminate(ctx.limits.kill_grace).await;
            if let Some(g) = guard.as_mut() {
                g.armed = false;
                ctx.processes.unregister(g.pgid);
            }
            drain(&mut reader, &mut buf, &mut collector).await;
            let code = status.map(exit_code);
            let display = |p: &std::path::Path| paths::display(&ctx.cwd, p);
            let collected = collector.finish(display).await;
            let mut out = ToolOutput::error(format!(
                "{what}\n{capped_note}Output so far:\n{}",
                collected.text
            ));
            out.exit_code = code;
            out.duration_ms = Some(elapsed_ms(started));
            return out;
        }
    };

    // The main process ended on its own. In the sandbox the kernel has killed what it
    // left behind; otherwise what it left running in the background stays (a deliberate
    // `server &`), tracked so that the Runtime ends it on exit.
    let mut still_running = None;
    if let Some(g) = guard.as_mut() {
        g.armed = false;
        let pgid = g.pgid;
        let alive = !g.contained
            && tokio::task::spawn_blocking(move || process::group_alive(pgid))
                .await
                .unwrap_or(false);
        if alive {
            still_running = Some(pgid);
        } else {
            ctx.processes.unregister(pgid);
        }
    }
    let code = exit_code(status);
    let display = |p: &std::path::Path| paths::display(&ctx.cwd, p);
    let collected = collector.finish(display).await;
    let mut text = capped_note;
    if collected.text.is_empty() {
        text.push_str("(no output)\n");
    } else {
        text.push_str(&collected.text);
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    if let Some(pgid) = still_running {
        text.push_str(&format!(
            "[background processes are still running in process group {pgid}; they end when the agent exits]\n"
        ));
    }
    if code != 0 {
        text.push_str(&format!("[exit code {code}]\n"));
    }
    let mut out = ToolOutput::text(text.trim_end().to_string());
    out.exit_code = Some(code);
    out.duration_ms = Some(elapsed_ms(started));
    out
}

/// Kills the group if the call's future is dropped before the command ended (a Runtime
/// that drops the future instead of cancelling must not leave the command running).
struct DropGuard<'a> {
    pgid: i32,
    processes: &'a crate::ProcessTracker,
    armed: bool,
    /// The sandbox kills what the command leaves behind when it ends.
    contained: bool,
}

impl Drop for DropGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            tracing::debug!(
                pgid = self.pgid,
                "bash call dropped; killing its process group"
            );
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(self.pgid),
                nix::sys::signal::Signal::SIGKILL,
            );
            self.processes.unregister(self.pgid);
        }
    }
}

/// Starts the command: in the sandbox's zygote when there is one, else as a child of
/// the Runtime (sandboxed per call or not). The guard (children only) kills the group
/// if the call's future is dropped; a zygote call's channel does that by itself.
async fn start<'a>(
    command: &str,
    ctx: &'a ToolContext,
) -> std::io::Result<(
    Running,
    std::io::Result<tokio::net::unix::pipe::Receiver>,
    Option<DropGuard<'a>>,
)> {
    #[cfg(target_os = "linux")]
    {
        if let Some((running, init, read_end)) = running::spawn_in_zygote(command, ctx).await {
            let receiver = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(read_end));
            tracing::debug!(command, init, "bash started in the sandbox zygote");
            // The init's group is recorded like a child's (the daemon kills recorded
            // groups a dead Runtime left); killing it kills the whole call.
            let guard = init.map(|pgid| {
                ctx.processes.register(pgid);
                DropGuard {
                    pgid,
                    processes: &ctx.processes,
                    armed: true,
                    contained: true,
                }
            });
            return Ok((running, receiver, guard));
        }
    }
    let (child, reader, sandboxed) = spawn(command, ctx)?;
    let Some(pid) = child.id() else {
        return Err(std::io::Error::other(
            "bash exited before it could be tracked",
        ));
    };
    // process_group(0) makes the child the leader of a group whose id is its pid.
    let pgid = pid as i32;
    ctx.processes.register(pgid);
    tracing::debug!(pgid, command, "bash started");
    let guard = DropGuard {
        pgid,
        processes: &ctx.processes,
        armed: true,
        contained: sandboxed.is_some_and(|s| s.contained),
    };
    Ok((Running::Child { child, pgid }, reader, Some(guard)))
}

type Spawned = (
    tokio::process::Child,
    std::io::Result<tokio::net::unix::pipe::Receiver>,
    Option<shard_sandbox::Applied>,
);

/// Spawns `bash -c` from the current (runtime worker) thread: the parent-death signal
/// is tied to the spawning thread, and blocking-pool threads exit when idle.
fn spawn(command: &str, ctx: &ToolContext) -> std::io::Result<Spawned> {
    let (read_end, write_end) = std::io::pipe()?;
    let write_end2 = write_end.try_clone()?;
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-c")
        .arg(command)
        .current_dir(&ctx.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::from(write_end2))
        .envs(SET_ENV.iter().copied())
        .process_group(0)
        .kill_on_drop(false);
    for name in ctx
        .env_remove
        .iter()
        .map(String::as_str)
        .chain(ALWAYS_REMOVED_ENV.iter().copied())
    {
        cmd.env_remove(name);
    }
    let sandboxed = ctx
        .sandbox
        .apply(cmd.as_std_mut(), &ctx.cwd)
        .map_err(std::io::Error::other)?;
    if sandboxed.is_none() {
        process::set_parent_death_signal(&mut cmd);
    }
    let child = cmd.spawn()?;
    // Dropping the command closes our copies of the write end, so EOF can arrive.
    drop(cmd);
    let receiver = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(read_end));
    Ok((child, receiver, sandboxed))
}

/// Reads a chunk; None at end of output or on error. Pends forever without a reader so
/// `select!` simply waits on the other branches.
async fn read_some(
    reader: &mut Option<tokio::net::unix::pipe::Receiver>,
    buf: &mut [u8],
) -> Option<usize> {
    let Some(r) = reader else {
        return futures::future::pending().await;
    };
    match r.read(buf).await {
        Ok(0) => None,
        Ok(n) => Some(n),
        Err(err) => {
            tracing::debug!(%err, "reading bash output failed");
            None
        }
    }
}

/// Reads what is left after the main process ended, bounded in time.
async fn drain(
    reader: &mut Option<tokio::net::unix::pipe::Receiver>,
    buf: &mut [u8],
    collector: &mut OutputCollector,
) {
    let Some(r) = reader.as_mut() else { return };
    let stop = tokio::time::Instant::now() + DRAIN_TOTAL;
    loop {
        let now = tokio::time::Instant::now();
        if now >= stop {
            break;
        }
        let wait = DRAIN_IDLE.min(stop - now);
        match tokio::time::timeout(wait, r.read(buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
            Ok(Ok(n)) => collector.push(&buf[..n]).await,
        }
    }
    *reader = None;
}

fn exit_code(status: ExitStatus) -> i64 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => i64::from(code),
        (None, Some(sig)) => 128 + i64::from(sig),
        (None, None) => -1,
    }
}

/// Forgets groups whose processes have all ended, so a reused id is never killed later.
async fn prune_dead_groups(ctx: &ToolContext) {
    let groups = ctx.processes.snapshot();
    if groups.is_empty() {
        return;
    }
    let dead = tokio::task::spawn_blocking(move || {
        groups
            .into_iter()
            .filter(|&g| !process::group_alive(g))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    for g in dead {
        ctx.processes.unregister(g);
    }
}
