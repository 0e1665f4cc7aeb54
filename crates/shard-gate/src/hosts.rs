//! `[hosts.NAME]` of `SHARD_HOME/config.toml`: other machines and containers an agent's
//! Runtime may run on (docs/hosts.md). The daemon launches Runtimes there and the
//! Runtime's own configuration check refuses a file with a mistake in them, so the
//! section lives beside the other shared sections.
//!
//! ```toml
//! [hosts.box]
//! ssh = "box"                                # user@host or a Host alias of ~/.ssh/config
//! ssh_options = ["-F", "/path/ssh_config"]   # extra ssh arguments, before the destination
//! shard = "/usr/local/bin/shard"             # the binary there (default: `shard` on PATH)
//! home = "/srv/shard"                        # SHARD_HOME there (default: its ~/.shard)
//!
//! [hosts.devbox]
//! command = ["podman", "exec", "-i", "devbox"]  # any prefix giving a process stdio there
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::config::strict;

/// One `[hosts.NAME]` table: exactly one of `ssh` and `command`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// Destination as `ssh` understands it (`user@host`, a `Host` alias).
    #[serde(default)]
    pub ssh: Option<String>,
    /// Extra `ssh` arguments placed before the destination (`-F`, `-p`, `-i`, `-o K=V`).
    #[serde(default)]
    pub ssh_options: Vec<String>,
    /// A command prefix that runs a program on the host with its stdin and stdout
    /// (`podman exec -i NAME`, `docker exec -i NAME`, `kubectl exec -i POD --`).
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// The `shard` binary on the host: an absolute path, `~/…` (ssh hosts), or a
    /// name looked up on the host's PATH. Default `shard`.
    #[serde(default)]
    pub shard: Option<String>,
    /// `SHARD_HOME` on the host (its sessions live there). Default: the host's `~/.shard`.
    #[serde(default)]
    pub home: Option<String>,
    /// The host sshd's `MaxSessions`: how many sessions one connection may carry (the
    /// connection's own keep-alive session counts). More agents open more connections.
    /// Default [`DEFAULT_MAX_SESSIONS`], sshd's own default; `ssh` hosts only.
    #[serde(default)]
    pub max_sessions: Option<u32>,
}

/// sshd's default `MaxSessions`.
pub const DEFAULT_MAX_SESSIONS: u32 = 10;
/// The largest `max_sessions` accepted (a connection is one sshd process on the host).
pub const MAX_MAX_SESSIONS: u32 = 1000;

/// How the daemon reaches a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostKind<'a> {
    /// OpenSSH: destination and extra options.
    Ssh {
        /// Destination.
        dest: &'a str,
        /// Extra options.
        options: &'a [String],
    },
    /// A command prefix.
    Command(&'a [String]),
}

impl HostConfig {
    /// The launcher this host uses (call [`check`](Self::check) first).
    pub fn kind(&self) -> Option<HostKind<'_>> {
        match (&self.ssh, &self.command) {
            (Some(dest), None) => Some(HostKind::Ssh {
                dest,
                options: &self.ssh_options,
            }),
            (None, Some(cmd)) => Some(HostKind::Command(cmd)),
            _ => None,
        }
    }

    /// Sessions one connection to this host may carry, its keep-alive session included.
    pub fn max_sessions(&self) -> u32 {
        self.max_sessions.unwrap_or(DEFAULT_MAX_SESSIONS)
    }

    /// The binary to run on the host.
    pub fn shard_program(&self) -> &str {
        self.shard.as_deref().unwrap_or("shard")
    }

    /// One line saying what is wrong with the table, if anything.
    pub fn check(&self, name: &str) -> Result<(), String> {
        let at = format!("[hosts.{name}]");
        if !valid_name(name) {
            return Err(format!(
                "{at}: a host name is 1 to 32 letters, digits, `-` or `_`"
            ));
        }
        match (&self.ssh, &self.command) {
            (Some(_), Some(_)) => {
                return Err(format!("{at}: set either `ssh` or `command`, not both"));
            }
            (None, None) => return Err(format!("{at}: set `ssh` or `command`")),
            (Some(dest), None) => {
                if dest.trim().is_empty()
                    || dest.starts_with('-')
                    || dest.contains(char::is_whitespace)
                {
                    return Err(format!(
                        "{at}: `ssh` is a destination (user@host or a Host alias), not {dest:?}"
                    ));
                }
            }
            (None, Some(cmd)) => {
                if cmd.first().is_none_or(|p| p.trim().is_empty()) {
                    return Err(format!("{at}: `command` needs at least a program"));
                }
                if !self.ssh_options.is_empty() {
                    return Err(format!("{at}: `ssh_options` is only for `ssh` hosts"));
                }
                if self.max_sessions.is_some() {
                    return Err(format!("{at}: `max_sessions` is only for `ssh` hosts"));
                }
            }
        }
        if let Some(s) = &self.shard {
            let tilde = s.starts_with("~/") && self.ssh.is_some();
            if s.is_empty()
                || s.contains('\n')
                || !(s.starts_with('/') || tilde || !s.contains('/'))
            {
                return Err(format!(
                    "{at}: `shard` is an absolute path, `~/…` (ssh hosts) or a name on the host's PATH"
                ));
            }
        }
        if let Some(n) = self.max_sessions
            && !(2..=MAX_MAX_SESSIONS).contains(&n)
        {
            return Err(format!(
                "{at}: `max_sessions` is 2 to {MAX_MAX_SESSIONS} (the host sshd's MaxSessions; its default is {DEFAULT_MAX_SESSIONS})"
            ));
        }
        if let Some(h) = &self.home
            && (h.is_empty() || h.contains('\n') || !(h.starts_with('/') || h.starts_with("~/")))
        {
            return Err(format!(
                "{at}: `home` is an absolute path or `~/…` on the host"
            ));
        }
        Ok(())
    }
}

/// True for a usable host name (it names a control socket and appears in listings).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Only the `[hosts]` section of a configuration file; other sections are checked by
/// their owners.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct HostsSection {
    /// `[hosts.NAME]` tables.
    pub hosts: BTreeMap<String, HostConfig>,
}

impl HostsSection {
    /// Reads and checks `[hosts]` of `SHARD_HOME/config.toml`; a missing file has none.
    pub fn load(shard_home: &Path) -> Result<BTreeMap<String, HostConfig>, String> {
        let path = shard_home.join("config.toml");
        let section: HostsSection = match strict::read(&path).map_err(|e| e.to_string())? {
            None => return Ok(BTreeMap::new()),
            Some(text) => strict::parse(&path, &text).map_err(|e| e.to_string())?,
        };
        check_all(&section.hosts).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(section.hosts)
    }
}

/// Checks every table of a `[hosts]` section.
pub fn check_all(hosts: &BTreeMap<String, HostConfig>) -> Result<(), String> {
    hosts.iter().try_for_each(|(name, h)| h.check(name))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn load(text: &str) -> Result<BTreeMap<String, HostConfig>, String> {
        let s: HostsSection =
            strict::parse(Path::new("config.toml"), text).map_err(|e| e.to_string())?;
        check_all(&s.hosts)?;
        Ok(s.hosts)
    }

    #[test]
    fn reads_both_kinds() {
        let h = load(
            "[hosts.box]\nssh = \"me@box\"\nssh_options = [\"-p\", \"2222\"]\nhome = \"/srv/shard\"\n\n[hosts.dev]\ncommand = [\"podman\", \"exec\", \"-i\", \"dev\"]\n",
        )
        .unwrap();
        assert_eq!(
            h["box"].kind(),
            Some(HostKind::Ssh {
                dest: "me@box",
                options: &["-p".to_string(), "2222".to_string()]
            })
        );
        assert_eq!(h["box"].shard_program(), "shard");
        assert!(matches!(h["dev"].kind(), Some(HostKind::Command(c)) if c.len() == 4));
    }

    #[test]
    fn refuses_mistakes_in_one_line() {
        let e = load("[hosts.box]\nssh = \"box\"\nshrad = \"/x\"\n").unwrap_err();
        assert!(e.contains("config.toml:3") && e.contains("shrad"), "{e}");
        let e = load("[hosts.box]\nssh = \"box\"\ncommand = [\"x\"]\n").unwrap_err();
        assert!(e.contains("not both"), "{e}");
        let e = load("[hosts.box]\nhome = \"/x\"\n").unwrap_err();
        assert!(e.contains("set `ssh` or `command`"), "{e}");
        let e = load("[hosts.box]\nssh = \"-oProxyCommand=x\"\n").unwrap_err();
        assert!(e.contains("destination"), "{e}");
        let e = load("[hosts.\"a b\"]\nssh = \"box\"\n").unwrap_err();
        assert!(e.contains("host name"), "{e}");
        let e = load("[hosts.box]\ncommand = []\n").unwrap_err();
        assert!(e.contains("at least a program"), "{e}");
        let e = load("[hosts.box]\nssh = \"box\"\nhome = \"rel\"\n").unwrap_err();
        assert!(e.contains("`home`"), "{e}");
        let e = load("[hosts.box]\ncommand = [\"x\"]\nshard = \"~/bin/shard\"\n").unwrap_err();
        assert!(e.contains("`shard`"), "{e}");
        let e = load("[hosts.box]\nssh = \"box\"\nmax_sessions = 1\n").unwrap_err();
        assert!(e.contains("`max_sessions` is 2 to"), "{e}");
        let e = load("[hosts.box]\ncommand = [\"x\"]\nmax_sessions = 5\n").unwrap_err();
        assert!(e.contains("only for `ssh` hosts"), "{e}");
        let h = load("[hosts.box]\nssh = \"box\"\nmax_sessions = 64\n").unwrap();
        assert_eq!(h["box"].max_sessions(), 64);
    }
}
