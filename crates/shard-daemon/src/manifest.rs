//! Durable Agent manifests under `SHARD_HOME/manifests/<agent_id>.json` (docs/architecture.md#agent-session-and-runtime-generation, docs/architecture.md#storage): the identity that survives Runtime deaths and daemon restarts.
//!
//! They used to live in `SHARD_HOME/agents`, beside the agent definitions (`NAME.md`) that
//! every Runtime lists at start; a daemon moves any it finds there at start
//! ([`migrate_legacy`], docs/decisions.md "Manifests in a folder of their own").

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use shard_protocol::command::HeadlessPolicy;
use shard_protocol::ids;

use crate::error::DaemonError;
use crate::fsutil;

/// Format version written into every manifest.
pub const MANIFEST_VERSION: u32 = 1;

/// The folder under `SHARD_HOME` that holds the manifests, and nothing else.
pub const MANIFEST_DIR: &str = "manifests";

/// Where manifests were kept before they had a folder of their own: the agent definitions'
/// folder, which stays the users'.
pub const LEGACY_MANIFEST_DIR: &str = "agents";

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
    /// True once a Runtime generation became ready; later starts are restores. A managed
    /// local agent's first start does not rewrite the manifest just for this flag: its
    /// session's transcript on disk says the same, and [`ManifestStore::load_all`] reads it
    /// from there (docs/decisions.md "One manifest write per create").
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
    home: PathBuf,
    dir: PathBuf,
}

impl ManifestStore {
    /// A store rooted at `SHARD_HOME/manifests`.
    pub fn new(home: &Path) -> Self {
        ManifestStore {
            home: home.to_path_buf(),
            dir: home.join(MANIFEST_DIR),
        }
    }

    /// The folder the manifests are in.
    pub fn dir(&self) -> &Path {
        &self.dir
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

    /// Loads every readable manifest, after moving any left in the legacy folder
    /// ([`migrate_legacy`]); unreadable ones are logged and skipped so that one bad file
    /// never hides the other agents. A managed local agent whose session exists is marked
    /// `started` ([`AgentManifest::started`]).
    pub async fn load_all(&self) -> Result<Vec<AgentManifest>, DaemonError> {
        let (home, dir) = (self.home.clone(), self.dir.clone());
        tokio::task::spawn_blocking(move || {
            migrate_legacy(&home).map_err(|e| {
                DaemonError::io(
                    format!(
                        "moving manifests from {}",
                        home.join(LEGACY_MANIFEST_DIR).display()
                    ),
                    e,
                )
            })?;
            let mut all = load_dir(&dir)?;
            for m in &mut all {
                note_started(&home, m);
            }
            Ok(all)
        })
        .await
        .map_err(|e| DaemonError::io("manifest loader task", std::io::Error::other(e)))?
    }
}

fn load_dir(dir: &Path) -> Result<Vec<AgentManifest>, DaemonError> {
    fsutil::load_records(dir).map_err(|e| DaemonError::io(format!("reading {}", dir.display()), e))
}

/// True when the first start of `m` is recorded by its session rather than by the manifest:
/// a local agent with a session of its own (not adopted; a host's sessions are on the host).
pub fn start_recorded_by_session(m: &AgentManifest) -> bool {
    !m.adopted && m.host.is_none()
}

/// Marks `m` started when its first start is recorded by its session and that session's
/// transcript exists: a Runtime opened it, and recorded the model and mode it was started
/// with there before it became ready, so a later start must restore them rather than pass
/// the creation's again (docs/daemon.md, "Which flags at which start").
fn note_started(home: &Path, m: &mut AgentManifest) {
    if m.started || !start_recorded_by_session(m) || !ids::is_valid(ids::SESSION, &m.session_id) {
        return;
    }
    let transcript = home
        .join("sessions")
        .join(&m.session_id)
        .join("session.jsonl");
    if transcript.is_file() {
        m.started = true;
    }
}

/// Moves the manifests (`agent-<id>.json`) found in `SHARD_HOME/agents` into
/// `SHARD_HOME/manifests`, leaving everything else there (the agent definitions). One
/// `rename` per file: each is atomic, so a migration cut short leaves every manifest whole
/// in one folder or the other, and the next start moves the rest. A manifest already in
/// the new folder is the one this version has been keeping current: it is used, and the
/// old copy is left where it is and logged, so nothing is ever deleted unread. Moved files
/// keep (or are given) mode 0600 in the 0700 folder. Returns how many were moved. Blocking.
pub fn migrate_legacy(home: &Path) -> std::io::Result<usize> {
    use std::os::unix::fs::PermissionsExt;
    let old = home.join(LEGACY_MANIFEST_DIR);
    let entries = match std::fs::read_dir(&old) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let new = home.join(MANIFEST_DIR);
    let mut moved = 0;
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        let is_manifest = path.extension().is_some_and(|x| x == "json")
            && path
                .file_stem()
                .and_then(|s| s.to_str())
                .is_some_and(|id| ids::is_valid(ids::AGENT, id));
        if !is_manifest || !entry.file_type()?.is_file() {
            continue;
        }
        if moved == 0 {
            fsutil::ensure_private_dir(&new)?;
        }
        let target = new.join(entry.file_name());
        if std::fs::symlink_metadata(&target).is_ok() {
            tracing::warn!(
                old = %path.display(),
                kept = %target.display(),
                "a manifest is in both folders; the new folder's is used and the old one left in place"
            );
            continue;
        }
        if entry.metadata()?.permissions().mode() & 0o777 != 0o600 {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        }
        match std::fs::rename(&path, &target) {
            Ok(()) => {}
            // `agents` may be a link to another file system (definitions kept with one's
            // dotfiles): copy atomically, then remove the old file. Cut between the two,
            // the manifest is in both folders, which the next start resolves as above.
            Err(e) if e.kind() == std::io::ErrorKind::CrossesDevices => {
                fsutil::atomic_write(&target, &std::fs::read(&path)?)?;
                std::fs::remove_file(&path)?;
            }
            Err(e) => return Err(e),
        }
        moved += 1;
    }
    if moved > 0 {
        // The new names first: a cut here leaves a manifest in both folders at worst.
        std::fs::File::open(&new)?.sync_all()?;
        std::fs::File::open(&old)?.sync_all()?;
        tracing::info!(moved, from = %old.display(), to = %new.display(), "moved agent manifests");
    }
    Ok(moved)
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
        std::fs::write(home.path().join("manifests/agent-bogus.json"), b"{").unwrap();
        std::fs::write(
            home.path()
                .join("manifests/agent-0123456789ABCDEFGHJKMNPQRS.json"),
            b"not json",
        )
        .unwrap();
        let all = store.load_all().await.unwrap();
        assert_eq!(all, vec![m]);
    }

    fn put_legacy(home: &Path, m: &AgentManifest) -> PathBuf {
        let dir = home.join(LEGACY_MANIFEST_DIR);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!("{}.json", m.agent_id));
        std::fs::write(&p, serde_json::to_vec(m).unwrap()).unwrap();
        p
    }

    fn mode(p: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[tokio::test]
    async fn legacy_manifests_move_once_and_definitions_stay() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let (a, mut b) = (sample(), sample());
        b.created_at = 6;
        let pa = put_legacy(home.path(), &a);
        put_legacy(home.path(), &b);
        std::fs::set_permissions(&pa, std::fs::Permissions::from_mode(0o644)).unwrap();
        let legacy = home.path().join(LEGACY_MANIFEST_DIR);
        std::fs::write(legacy.join("review.md"), "---\ndescription: r\n---\nbody").unwrap();
        std::fs::write(legacy.join("notes.json"), "{}").unwrap();

        let store = ManifestStore::new(home.path());
        assert_eq!(store.load_all().await.unwrap(), vec![a.clone(), b.clone()]);
        let mut left: Vec<_> = std::fs::read_dir(&legacy)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["notes.json", "review.md"], "only manifests move");
        let moved = store.dir().join(format!("{}.json", a.agent_id));
        assert_eq!(mode(&moved), 0o600);
        assert_eq!(mode(store.dir()), 0o700);
        // Idempotent: nothing left to move, the same agents load.
        assert_eq!(migrate_legacy(home.path()).unwrap(), 0);
        assert_eq!(store.load_all().await.unwrap(), vec![a, b]);
    }

    #[tokio::test]
    async fn an_interrupted_migration_finishes_and_loses_nothing() {
        let home = tempfile::tempdir().unwrap();
        let store = ManifestStore::new(home.path());
        let (a, mut b, mut c) = (sample(), sample(), sample());
        b.created_at = 6;
        c.created_at = 7;
        // Cut short: `a` already moved, `b` not yet; `c` in both folders (cut between a
        // copy and its removal), the new folder's copy the current one.
        store.save(&a).await.unwrap();
        put_legacy(home.path(), &b);
        let mut old_c = c.clone();
        old_c.name = Some("old".into());
        let old_c_path = put_legacy(home.path(), &old_c);
        store.save(&c).await.unwrap();

        assert_eq!(migrate_legacy(home.path()).unwrap(), 1);
        assert_eq!(
            store.load_all().await.unwrap(),
            vec![a.clone(), b.clone(), c.clone()]
        );
        // The old copy of `c` is kept, not deleted unread.
        assert!(old_c_path.is_file());
        assert_eq!(migrate_legacy(home.path()).unwrap(), 0);
        assert_eq!(store.load_all().await.unwrap(), vec![a, b, c]);
    }

    #[tokio::test]
    async fn a_local_agent_whose_session_exists_loads_as_started() {
        let home = tempfile::tempdir().unwrap();
        let store = ManifestStore::new(home.path());
        let mk = |at: u64, adopted: bool, host: Option<&str>, session: bool| {
            let mut m = sample();
            (m.created_at, m.adopted, m.started) = (at, adopted, false);
            m.host = host.map(str::to_string);
            if session {
                let dir = home.path().join("sessions").join(&m.session_id);
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join("session.jsonl"), "{}\n").unwrap();
            }
            m
        };
        let all = [
            mk(1, false, None, true),
            mk(2, false, None, false),
            mk(3, true, None, true),
            mk(4, false, Some("box"), true),
        ];
        for m in &all {
            store.save(m).await.unwrap();
        }
        let started: Vec<bool> = store
            .load_all()
            .await
            .unwrap()
            .iter()
            .map(|m| m.started)
            .collect();
        // Only the first: the second never opened its session, and an adopted agent's
        // or a host's first start is recorded in the manifest.
        assert_eq!(started, [true, false, false, false]);
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
