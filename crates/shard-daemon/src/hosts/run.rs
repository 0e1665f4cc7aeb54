//! Commands other than Runtimes run on a host (a workspace's git, docs/hosts.md): the
//! same link as the host's Runtimes — a lease on one of an `ssh` host's shared
//! connections, or the `command` prefix — so a host that refuses sessions past its
//! `MaxSessions` moves the command to another connection, and a host that is down
//! answers at once with the link's own reason.

use std::process::Stdio;

use crate::launcher::{HostOutput, HostRunError};

use super::{HostsLauncher, MAX_REFUSED, master, refused, refused_everywhere};

impl HostsLauncher {
    /// Runs `argv` on host `name` and waits for it; see
    /// [`RuntimeLauncher::run_on_host`](crate::launcher::RuntimeLauncher::run_on_host).
    pub(super) async fn run_argv(
        &self,
        name: &str,
        argv: &[String],
    ) -> Result<HostOutput, HostRunError> {
        let cfg = self.host(name).map_err(HostRunError::NotStarted)?.clone();
        let ssh = cfg.ssh.is_some();
        for _ in 0..=MAX_REFUSED {
            let ready = self
                .link(name, &cfg)
                .ready()
                .await
                .map_err(HostRunError::NotStarted)?;
            let mut cmd = master::argv_command(&cfg, ready.ctl.as_deref(), argv)
                .map_err(HostRunError::NotStarted)?;
            cmd.stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(0)
                .kill_on_drop(true);
            let out = crate::children::output(cmd).await.map_err(|e| {
                HostRunError::NotStarted(format!("cannot run the host's command: {e}"))
            })?;
            let code = out.status.code();
            if ssh && refused(code, &out.stdout, &out.stderr) {
                if let Some(lease) = ready.lease {
                    lease.refused();
                }
                continue;
            }
            if ssh && code == Some(255) {
                // ssh's own failure: the connection went while the command ran.
                let said = master::last_line(&out.stderr);
                return Err(HostRunError::Lost(format!(
                    "the connection to host {name} was lost while a command ran there{}",
                    if said.is_empty() {
                        String::new()
                    } else {
                        format!(" ({said})")
                    }
                )));
            }
            return Ok(HostOutput {
                code,
                stdout: out.stdout,
                stderr: out.stderr,
            });
        }
        Err(HostRunError::NotStarted(refused_everywhere(name)))
    }
}
