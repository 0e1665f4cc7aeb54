//! `agent.create` (docs/protocol.md §10.1): managed create with a fresh session, or legacy
//! adoption of an existing one, then the first Runtime generation. It runs as a spawned
//! task (slow: disk, the settings check on the blocking pool, the Runtime's start), never
//! on a connection's read loop.

use std::sync::Arc;

use shard_protocol::CommandSpec;
use shard_protocol::command::AgentCreate;
use shard_protocol::command::kind;
use shard_protocol::responses::AgentCreated;
use shard_protocol::{ErrorCode, ids};

use crate::core::Shared;
use crate::manifest::{AgentManifest, MANIFEST_VERSION};
use crate::reply::ProtocolError;

fn invalid(msg: impl Into<String>) -> ProtocolError {
    ProtocolError::new(ErrorCode::InvalidRequest, msg)
}

/// `agent.create`, typed: the created agent, or why not (a created agent whose Runtime
/// failed to start is an error naming it in its data). Workspaces create their agents
/// through this too, and read the id from the typed answer.
pub(crate) async fn create(
    shared: &Arc<Shared>,
    c: AgentCreate,
) -> Result<AgentCreated, ProtocolError> {
    let refused = c.daemon_only_fields();
    if !refused.is_empty() {
        return Err(invalid(format!(
            "{} set by the daemon, not by clients",
            refused.join(", ")
        )));
    }
    // A parent gives its child its clients' requests, its tools and its policies; only
    // the daemon's own subagent machinery may name one, never a client.
    if c.parent_agent_id.is_some() {
        return Err(ProtocolError::new(
            ErrorCode::PermissionDenied,
            "parent_agent_id is set by the daemon's subagent machinery (subagent.create), not by clients",
        ));
    }
    if let Some(servers) = &c.mcp_servers
        && let Err((field, why)) = shard_protocol::mcp::validate_all(servers)
    {
        return Err(invalid(format!("mcp_servers{field}: {why}")));
    }
    if c.host.is_some() && c.mcp_servers.as_ref().is_some_and(|s| !s.is_empty()) {
        return Err(invalid(
            "mcp_servers are not supported for an agent on a host yet: create it without them, or on this machine",
        ));
    }
    let cwd = match &c.host {
        // A path on the host: its Runtime checks it there.
        Some(host) => crate::hosts::check_create(&shared.cfg, host, &c.cwd).map_err(invalid)?,
        None => match tokio::fs::canonicalize(&c.cwd).await {
            Ok(p) if tokio::fs::metadata(&p).await.is_ok_and(|m| m.is_dir()) => p,
            _ => return Err(invalid(format!("cwd {:?} is not a directory", c.cwd))),
        },
    };
    if let Some(sid) = &c.session_id {
        if !ids::is_valid(ids::SESSION, sid) {
            return Err(invalid("session_id is not a valid session id"));
        }
        // A host's sessions live on the host; its Runtime adopts or refuses them there.
        if c.host.is_none() {
            check_session(shared, sid)
                .await
                .map_err(|(code, msg)| ProtocolError::new(code, msg))?;
        }
    }
    let agent_id = ids::new_id(ids::AGENT);
    let manifest = AgentManifest {
        version: MANIFEST_VERSION,
        agent_id: agent_id.clone(),
        session_id: c
            .session_id
            .clone()
            .unwrap_or_else(|| ids::new_id(ids::SESSION)),
        cwd: cwd.display().to_string(),
        name: c.name,
        model: c.model,
        provider: c.provider,
        mode: c.mode,
        tools: c.tools,
        skills: c.skills,
        headless_policy: c.headless_policy.unwrap_or_default(),
        parent_agent_id: None,
        created_at: ids::now_millis(),
        adopted: c.session_id.is_some(),
        started: false,
        system_prompt_file: None,
        host: c.host,
        mcp_servers: c.mcp_servers.unwrap_or_default(),
        archived: false,
    };
    // An unknown mode, provider or model is one clear error, and nothing is created
    //: the Runtime's own check says what would work.
    let spec = crate::core::launch_spec_for_check(&shared.cfg, &manifest);
    let notice = match shared.launcher.check(&spec).await {
        Ok(notice) => notice,
        Err(_) if crate::fdlimit::exhausted_now() => return Err(out_of_descriptors()),
        Err(e) => return Err(invalid(e)),
    };
    shared.reserve_agent(&manifest)?;
    if let Err(e) = shared.store.save(&manifest).await {
        tracing::error!(error = %e, "could not write a manifest");
        // The write may have failed after its rename (syncing the folder): undo it whole.
        undo(shared, &agent_id).await;
        if crate::fdlimit::exhausted_now() {
            return Err(out_of_descriptors());
        }
        let why = match &e {
            crate::error::DaemonError::Io { source, .. } => crate::fdlimit::describe(source),
            other => other.to_string(),
        };
        return Err(ProtocolError::new(
            ErrorCode::InternalError,
            format!("could not record the agent: {why}"),
        ));
    }
    let result = match shared.start_agent(&agent_id) {
        Ok(None) => Ok(()),
        Ok(Some(rx)) => match tokio::time::timeout(shared.cfg.ready_timeout * 2, rx).await {
            Ok(Ok(r)) => r,
            _ => Err("the runtime did not become ready".into()),
        },
        Err(e) => Err(e),
    };
    let created = AgentCreated {
        agent_id: agent_id.clone(),
        notice,
    };
    if let Err(e) = &result
        && (e.contains(crate::fdlimit::EXHAUSTED) || crate::fdlimit::exhausted_now())
    {
        // Out of descriptors is the daemon's state, not the agent's: undo the create so a
        // retry after raising the limit does not find a half-made agent.
        undo(shared, &agent_id).await;
        return Err(out_of_descriptors());
    }
    match result {
        Ok(()) => Ok(created),
        // The agent exists: the error names it in its data, as a success would.
        Err(e) => Err(ProtocolError::new(
            ErrorCode::RuntimeStartFailed,
            format!("agent {agent_id} was created but its runtime failed to start: {e}"),
        )
        .with_data(kind::AgentCreate::encode_response(&created).ok().flatten())),
    }
}

/// The refusal of a create that ran out of descriptors: nothing of it is kept.
fn out_of_descriptors() -> ProtocolError {
    ProtocolError::new(
        ErrorCode::RuntimeStartFailed,
        format!(
            "the agent was not created: {}",
            crate::fdlimit::exhausted_message()
        ),
    )
}

/// Forgets a create that cannot complete: the registry entry and the manifest, if written.
async fn undo(shared: &Shared, agent_id: &str) {
    shared.forget_agent(agent_id);
    if let Err(e) = shared.store.remove(agent_id).await {
        tracing::warn!(error = %e, agent_id, "could not remove the manifest of an undone create");
    }
}

/// Adoption checks of §10.1: the session must exist and its transcript must be readable.
async fn check_session(shared: &Shared, sid: &str) -> Result<(), (ErrorCode, String)> {
    let path = shared
        .cfg
        .home
        .join("sessions")
        .join(sid)
        .join("session.jsonl");
    let head = tokio::task::spawn_blocking(move || -> std::io::Result<Vec<u8>> {
        use std::io::Read;
        let mut f = std::fs::File::open(&path)?;
        let mut buf = vec![0u8; 64 * 1024];
        let n = f.read(&mut buf)?;
        buf.truncate(n);
        Ok(buf)
    })
    .await
    .map_err(|e| (ErrorCode::InternalError, e.to_string()))?;
    match head {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err((ErrorCode::NotFound, "no such session".into()))
        }
        Err(e) => Err((
            ErrorCode::SessionCorrupt,
            format!("session cannot be read: {e}"),
        )),
        Ok(bytes) => {
            let first = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
            match serde_json::from_slice::<serde_json::Value>(first) {
                Ok(v) if v.is_object() => Ok(()),
                _ => Err((
                    ErrorCode::SessionCorrupt,
                    "session header is not valid JSON".into(),
                )),
            }
        }
    }
}
