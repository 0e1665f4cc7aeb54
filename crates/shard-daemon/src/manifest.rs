//! Durable Agent manifests under `SHARD_HOME/agents/<agent_id>.json` (docs/architecture.md#agent-session-and-runtime-generation, docs/architecture.md#storage): the identity that survives Runtime deaths and daemon restarts.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use shard_protocol::command::HeadlessPolicy;
use shard_protocol::ids;

use crate::error::DaemonError;
use crate::fsutil;

/// Format version written into every manifest.
pub const MANIFEST_VERSION: u32 = 1;

/// One durable Agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentManifest {
    /// Format version.
    pub version: u32,
    /// Durable agent id (`agent-…`).
    pub agent_id: String,
    /// The session the agent talks in (`sess-…`).
    pub session_id: String,
    /// Canonical working directory.
    pub cwd: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Model asked for at creation (passed only at first start, §16 item 13).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Provider asked for at creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Mode asked for at creation (passed only at first start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Tool allow-list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Skills.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<String>>,
    /// What the daemon does with a request no interactive client can answer.
    #[serde(default)]
    pub headless_policy: HeadlessPolicy,
    /// Parent agent, for a subagent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_agent_id: Option<String>,
    /// Creation time, ms since the epoch.
    pub created_at: u64,
    /// True when the session was adopted (legacy `agent.create` with `session_id`).
    #[serde(default)]
    pub adopted: bool,
    /// True once a Runtime generation became ready; later starts are restores.
    #[serde(default)]
    pub started: bool,
    /// A file whose text replaces the base system prompt at every start (a subagent's
    /// definition body).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt_file: Option<String>,
    /// The `[hosts.NAME]` its Runtime runs on (its session lives there); `None`: this
    /// machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// MCP servers the creating client supplied (an editor's), passed to every Runtime
    /// generation. Their `env`/`headers` values are secrets: this file is owner-only
    /// (0600 in a 0700 folder, like the rest of `SHARD_HOME`), and nothing else the
    /// daemon writes or sends holds them (docs/decisions.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<shard_protocol::mcp::ClientMcpServer>,
    /// Archived (`shard rm`): no Runtime is started for it until it is attached again,
    /// and clients leave it out of their lists; the session is kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub archived: bool,
}

/// Reads and writes manifests; every id is validated before it touches a path.
#[derive(Debug, Clone)]
pub struct ManifestStore {
    dir: PathBuf,
}

impl ManifestStore {
    /// A store rooted at `SHARD_HOME/agents`.
    pub fn new(home: &Path) -> Self {
        ManifestStore {
            dir: home.join("agents"),
        }
    }

    fn path_of(&self, agent_id: &str) -> Result<PathBuf, DaemonError> {
        if !ids::is_valid(ids::AGENT, agent_id) {
            return Err(DaemonError::Manifest {
                path: self.dir.clone(),
                message: format!("invalid agent id {agent_id:?}"),
            });
        }
        Ok(self.dir.join(format!("{agent_id}.json")))
    }

    /// Writes one manifest atomically (0600 in a 0700 directory).
    pub async fn save(&self, manifest: &AgentManifest) -> Result<(), DaemonError> {
        let path = self.path_of(&manifest.agent_id)?;
        let dir = self.dir.clone();
        let bytes = serde_json::to_vec_pretty(manifest).map_err(|e| DaemonError::Manifest {
            path: path.clone(),
            message: e.to_string(),
        })?;
        fsutil::save_record(dir, path.clone(), bytes)
            .await
            .map_err(|e| DaemonError::io(format!("writing {}", path.display()), e))
    }

    /// Removes one manifest: an agent whose creation is undone leaves nothing behind.
    pub async fn remove(&self, agent_id: &str) -> Result<(), DaemonError> {
        let path = self.path_of(agent_id)?;
        match tokio::fs::remove_file(&path).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(DaemonError::io(format!("removing {}", path.display()), e)),
        }
    }

    /// Loads every readable manifest; unreadable ones are logged and skipped so that one
    /// bad file never hides the other agents.
    pub async fn load_all(&self) -> Result<Vec<AgentManifest>, DaemonError> {
        let dir = self.dir.clone();
        tokio::task::spawn_blocking(move || load_dir(&dir))
            .await
            .map_err(|e| DaemonError::io("manifest loader task", std::io::Error::other(e)))?
    }
}

fn load_dir(dir: &Path) -> Result<Vec<AgentManifest>, DaemonError> {
    fsutil::load_records(dir).map_err(|e| DaemonError::io(format!("reading {}", dir.display()), e))
}

impl fsutil::StoredRecord for AgentManifest {
    const ID_KIND: &'static str = ids::AGENT;
    const WHAT: &'static str = "manifest";
    fn id(&self) -> &str {
        &self.agent_id
    }
    fn created_at(&self) -> u64 {
        self.created_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> AgentManifest {
        AgentManifest {
            version: MANIFEST_VERSION,
            agent_id: ids::new_id(ids::AGENT),
            session_id: ids::new_id(ids::SESSION),
            cwd: "/tmp".into(),
            name: Some("x".into()),
            model: None,
            provider: Some("scripted".into()),
            mode: None,
            tools: None,
            skills: None,
            headless_policy: HeadlessPolicy::Queue,
            parent_agent_id: None,
            created_at: 5,
            adopted: false,
            started: true,
            system_prompt_file: None,
            host: None,
            mcp_servers: Vec::new(),
            archived: false,
        }
    }

    #[tokio::test]
    async fn round_trips_and_skips_garbage() {
        let home = tempfile::tempdir().unwrap();
        let store = ManifestStore::new(home.path());
        let m = sample();
        store.save(&m).await.unwrap();
        std::fs::write(home.path().join("agents/agent-bogus.json"), b"{").unwrap();
        std::fs::write(
            home.path()
                .join("agents/agent-0123456789ABCDEFGHJKMNPQRS.json"),
            b"not json",
        )
        .unwrap();
        let all = store.load_all().await.unwrap();
        assert_eq!(all, vec![m]);
    }

    #[tokio::test]
    async fn refuses_path_like_ids() {
        let home = tempfile::tempdir().unwrap();
        let store = ManifestStore::new(home.path());
        let mut m = sample();
        m.agent_id = "agent-../../x".into();
        assert!(store.save(&m).await.is_err());
    }
}
