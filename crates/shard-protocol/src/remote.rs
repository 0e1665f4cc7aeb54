//! `runtime.settings`: the one Runtime-bound message a Runtime on another host reads
//! before anything else. The daemon forwards the provider settings (keys, base URLs)
//! and its own policy sections over the Runtime's stdio, so no key ever appears on the
//! remote command line, in an environment variable or in a file on the host
//! (docs/hosts.md).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The `type` of [`RuntimeSettings`] on the wire.
pub const RUNTIME_SETTINGS_TYPE: &str = "runtime.settings";

/// Longest `runtime.settings` line a Runtime reads (keys and a few config tables).
pub const MAX_RUNTIME_SETTINGS_LINE: usize = 1024 * 1024;

/// First line on the stdin of a `shard agent --remote` Runtime.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeSettings {
    /// Always [`RUNTIME_SETTINGS_TYPE`].
    #[serde(rename = "type")]
    pub kind: String,
    /// The daemon's protocol version; a Runtime speaking another refuses to start.
    pub protocol_version: String,
    /// The durable agent id the Runtime serves.
    pub agent_id: String,
    /// `SHARD_HOME` on the host; absent: the host's default (`~/.shard`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home: Option<String>,
    /// Provider variables (keys, base URLs) by name, looked up before the host's own
    /// environment; kept in the Runtime's memory only.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The daemon's `providers`, `models`, `permissions`, `headless` and `sandbox`
    /// tables of `config.toml`, as JSON: the host's file may override provider settings
    /// but never widen the permissions.
    #[serde(default)]
    pub config: serde_json::Map<String, serde_json::Value>,
}

impl RuntimeSettings {
    /// A message for `agent_id` at this build's protocol version.
    pub fn new(agent_id: impl Into<String>) -> Self {
        RuntimeSettings {
            kind: RUNTIME_SETTINGS_TYPE.into(),
            protocol_version: crate::PROTOCOL_VERSION.into(),
            agent_id: agent_id.into(),
            ..Default::default()
        }
    }

    /// The JSONL line (with its newline).
    pub fn to_line(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec(self).unwrap_or_default();
        v.push(b'\n');
        v
    }

    /// Parses the first line, checking its type and protocol version.
    pub fn parse(line: &[u8]) -> Result<Self, String> {
        let s: RuntimeSettings = serde_json::from_slice(line)
            .map_err(|e| format!("the first input line is not runtime.settings: {e}"))?;
        if s.kind != RUNTIME_SETTINGS_TYPE {
            return Err(format!(
                "the first input line is {:?}, not runtime.settings",
                s.kind
            ));
        }
        if s.protocol_version != crate::PROTOCOL_VERSION {
            return Err(format!(
                "the daemon speaks protocol {} and this shard {}: install the same shard on both (shard hosts install)",
                s.protocol_version,
                crate::PROTOCOL_VERSION
            ));
        }
        Ok(s)
    }
}

/// Keys never reach a log: only the variable names are shown.
impl std::fmt::Debug for RuntimeSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeSettings")
            .field("protocol_version", &self.protocol_version)
            .field("agent_id", &self.agent_id)
            .field("home", &self.home)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("config", &self.config.keys().collect::<Vec<_>>())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn round_trips_and_hides_keys_from_debug() {
        let mut s = RuntimeSettings::new("agent-1");
        s.env.insert("ANTHROPIC_API_KEY".into(), "sk-secret".into());
        let line = s.to_line();
        assert_eq!(*line.last().unwrap(), b'\n');
        let back = RuntimeSettings::parse(&line[..line.len() - 1]).unwrap();
        assert_eq!(back, s);
        let dbg = format!("{s:?}");
        assert!(dbg.contains("ANTHROPIC_API_KEY"));
        assert!(!dbg.contains("sk-secret"));
    }

    #[test]
    fn refuses_another_version_or_type() {
        let mut s = RuntimeSettings::new("agent-1");
        s.protocol_version = "9.9.9".into();
        let e = RuntimeSettings::parse(&s.to_line()).unwrap_err();
        assert!(e.contains("9.9.9"), "{e}");
        let e = RuntimeSettings::parse(br#"{"type":"prompt"}"#).unwrap_err();
        assert!(e.contains("runtime.settings"), "{e}");
    }
}
