//! `agent.create` (PROTOCOL §10.1): managed create with a fresh session, or legacy
//! adoption of an existing one, then the first Runtime generation.

use std::sync::Arc;

use shard_protocol::command::AgentCreate;
use shard_protocol::responses::AgentCreated;
use shard_protocol::{ErrorCode, Event, ids};

use crate::commands::{fail, reply};
use crate::manifest::{AgentManifest, MANIFEST_VERSION};
use crate::state::{AgentEntry, ConnId, Shared};
use crate::supervisor;

pub(crate) async fn create(shared: &Arc<Shared>, conn: ConnId, id: Option<String>, c: AgentCreate) {
    let ty = "agent.create";
    let refused = c.daemon_only_fields();
    if !refused.is_empty() {
        return fail(
            shared,
            conn,
            id,
            ty,
            ErrorCode::InvalidRequest,
            format!("{} set by the daemon, not by clients", refused.join(", ")),
        );
    }
    let cwd = match tokio::fs::canonicalize(&c.cwd).await {
        Ok(p) if tokio::fs::metadata(&p).await.is_ok_and(|m| m.is_dir()) => p,
        _ => {
            return fail(
                shared,
                conn,
                id,
                ty,
                ErrorCode::InvalidRequest,
                format!("cwd {:?} is not a directory", c.cwd),
            );
        }
    };
    if let Some(sid) = &c.session_id {
        if !ids::is_valid(ids::SESSION, sid) {
            return fail(
                shared,
                conn,
                id,
                ty,
                ErrorCode::InvalidRequest,
                "session_id is not a valid session id",
            );
        }
        if let Err((code, msg)) = check_session(shared, sid).await {
            return fail(shared, conn, id, ty, code, msg);
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
        parent_agent_id: c.parent_agent_id,
        created_at: ids::now_millis(),
        adopted: c.session_id.is_some(),
        started: false,
    };
    {
        // Reserve under the lock: two concurrent adoptions of one session cannot both win.
        let mut st = shared.lock();
        if st.shutting_down {
            drop(st);
            return fail(
                shared,
                conn,
                id,
                ty,
                ErrorCode::Conflict,
                "the daemon is shutting down",
            );
        }
        if let Some(p) = &manifest.parent_agent_id
            && !st.agents.contains_key(p)
        {
            drop(st);
            return fail(
                shared,
                conn,
                id,
                ty,
                ErrorCode::NotFound,
                "parent_agent_id names no agent",
            );
        }
        if manifest.adopted
            && st
                .agents
                .values()
                .any(|e| e.manifest.session_id == manifest.session_id)
        {
            drop(st);
            return fail(
                shared,
                conn,
                id,
                ty,
                ErrorCode::InvalidRequest,
                "session is already adopted",
            );
        }
        st.agents
            .insert(agent_id.clone(), AgentEntry::new(manifest.clone()));
    }
    if let Err(e) = shared.store.save(&manifest).await {
        tracing::error!(error = %e, "could not write a manifest");
        shared.lock().agents.remove(&agent_id);
        return fail(
            shared,
            conn,
            id,
            ty,
            ErrorCode::InternalError,
            format!("could not record the agent: {e}"),
        );
    }
    let started = {
        let mut st = shared.lock();
        supervisor::ensure_started(shared, &mut st, &agent_id)
    };
    let result = match started {
        Ok(None) => Ok(()),
        Ok(Some(rx)) => match tokio::time::timeout(shared.cfg.ready_timeout * 2, rx).await {
            Ok(Ok(r)) => r,
            _ => Err("the runtime did not become ready".into()),
        },
        Err(e) => Err(e),
    };
    let data = serde_json::to_value(AgentCreated {
        agent_id: agent_id.clone(),
    })
    .ok();
    let ev = match result {
        Ok(()) => Event::ok(id, ty, data),
        Err(e) => {
            let mut ev = Event::err(
                id,
                Some(ty),
                ErrorCode::RuntimeStartFailed,
                format!("agent {agent_id} was created but its runtime failed to start: {e}"),
            );
            if let Event::Response(r) = &mut ev
                && let Some(err) = &mut r.error
            {
                err.data = data;
            }
            ev
        }
    };
    reply(shared, conn, ev);
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
