//! `shard hosts install NAME`: copies this `shard` to a host, as an editor's remote
//! server is installed, after checking with `uname -sm` that the host runs the OS and
//! architecture this binary is built for. It goes through the daemon's shared
//! connection when one is up (its control socket), else through a connection of its own.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use shard_gate::hosts::{HostConfig, HostKind};
use tokio::io::AsyncWriteExt;

use super::quote;

/// Longest wait for `uname` and for the copy.
const STEP_TIMEOUT: Duration = Duration::from_secs(300);

/// What an install did.
#[derive(Debug, Clone)]
pub struct InstallReport {
    /// `uname -sm` of the host.
    pub platform: String,
    /// Where the binary now is.
    pub path: String,
    /// Bytes copied.
    pub bytes: u64,
}

/// Copies `exe` to host `name` at its `shard` path and checks it answers.
pub async fn install(name: &str, cfg: &HostConfig, exe: &Path) -> Result<InstallReport, String> {
    cfg.check(name)?;
    let target = cfg.shard_program().to_string();
    if !target.starts_with('/') && !target.starts_with("~/") {
        return Err(format!(
            "[hosts.{name}] shard is {target:?}, a name on the host's PATH: set it to the path to install to (e.g. shard = \"~/.local/bin/shard\") and run this again"
        ));
    }
    // A connection of its own: the daemon's shared ones may be full (sshd MaxSessions).
    let ctl: Option<&Path> = None;
    let uname = host_sh(cfg, ctl, "uname -sm", None)?;
    let platform = run(uname, None).await?.trim().to_string();
    let (os, arch) = local_platform();
    let fits = {
        let mut words = platform.split_whitespace();
        let (h_os, h_arch) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        h_os == os && arch.contains(&h_arch)
    };
    if !fits {
        return Err(format!(
            "host {name} is {platform:?} but this shard is built for {os} {}: build shard for that platform and copy it there",
            arch[0]
        ));
    }
    let bytes = tokio::fs::read(exe)
        .await
        .map_err(|e| format!("cannot read {}: {e}", exe.display()))?;
    let script = r#"t="$1"; d=$(dirname -- "$t") && mkdir -p -- "$d" && cat > "$t.part.$$" && chmod 755 "$t.part.$$" && mv -f -- "$t.part.$$" "$t""#;
    let copy = host_sh(cfg, ctl, script, Some(&target))?;
    run(copy, Some(&bytes)).await?;
    super::master::check_version(name, cfg, ctl).await?;
    Ok(InstallReport {
        platform,
        path: target,
        bytes: bytes.len() as u64,
    })
}

/// `uname -sm` words this build runs on.
fn local_platform() -> (&'static str, &'static [&'static str]) {
    let os = match std::env::consts::OS {
        "linux" => "Linux",
        "macos" => "Darwin",
        "freebsd" => "FreeBSD",
        other => other,
    };
    let arch: &'static [&'static str] = match std::env::consts::ARCH {
        "x86_64" => &["x86_64", "amd64"],
        "aarch64" => &["aarch64", "arm64"],
        "x86" => &["i686", "i386"],
        "arm" => &["armv7l", "armv6l"],
        "riscv64" => &["riscv64"],
        _ => &["unknown"],
    };
    (os, arch)
}

/// `sh -c SCRIPT sh [ARG]` on the host.
fn host_sh(
    cfg: &HostConfig,
    ctl: Option<&Path>,
    script: &str,
    arg: Option<&str>,
) -> Result<tokio::process::Command, String> {
    match cfg.kind() {
        Some(HostKind::Ssh { dest, options }) => {
            let mut line = format!("sh -c {} sh", quote::word(script));
            if let Some(a) = arg {
                line.push(' ');
                line.push_str(&quote::program(a));
            }
            Ok(super::master::ssh_command(ctl, dest, options, line))
        }
        Some(HostKind::Command(prefix)) => {
            let (program, rest) = prefix.split_first().ok_or("the host command is empty")?;
            let mut cmd = super::env::host_child(program);
            cmd.args(rest).args(["sh", "-c", script, "sh"]);
            if let Some(a) = arg {
                cmd.arg(a);
            }
            Ok(cmd)
        }
        None => Err("the host has neither `ssh` nor `command`".into()),
    }
}

/// Runs `cmd` (feeding `input`), its stdout on success, else its last stderr line.
async fn run(mut cmd: tokio::process::Command, input: Option<&[u8]>) -> Result<String, String> {
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run the host's command: {e}"))?;
    if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
        let bytes = bytes.to_vec();
        tokio::spawn(async move {
            let _ = stdin.write_all(&bytes).await;
            let _ = stdin.shutdown().await;
        });
    }
    let out = tokio::time::timeout(STEP_TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| "the host did not answer in time".to_string())?
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    Err(format!(
        "the host's command failed: {}",
        super::master::last_line(&out.stderr)
    ))
}
