//! Permission and UI requests (docs/protocol.md §6.3, docs/architecture.md#headless-policy-and-timeouts, docs/architecture.md#attachment-roles-and-hierarchical-routing): shown to every
//! attachment and to the nearest interactive ancestor, answered headlessly when nobody can
//! answer, resolved to everyone who saw them.

use std::collections::HashSet;
use std::sync::Arc;

use bytes::Bytes;
use shard_protocol::PermissionAnswer;
use shard_protocol::command::{Command, HeadlessPolicy, PermissionResponse, UiResponse};
use shard_protocol::types::PermissionDecision;

use super::deliver::{fan_out, push, send_to_runtime};
use super::state::{ConnId, Inflight, Pending, PendingKind, Shared, State};

pub(crate) fn on_request(
    shared: &Arc<Shared>,
    st: &mut State,
    agent_id: &str,
    request_id: String,
    kind: PendingKind,
    line: Bytes,
) {
    let responders = st.responders(agent_id);
    let value: serde_json::Value = serde_json::from_slice(&line).unwrap_or_default();
    let Some(entry) = st.agents.get(agent_id) else {
        return;
    };
    let mut delivered = HashSet::new();
    for (conn, att) in &entry.attachments {
        if !att.awaiting_sync {
            push(&st.conns, *conn, &line);
            delivered.insert(*conn);
        }
    }
    if let Some((owner, conns)) = &responders
        && owner != agent_id
        && let Some(owner_entry) = st.agents.get(owner)
    {
        for c in conns {
            let ready = owner_entry
                .attachments
                .get(c)
                .is_some_and(|a| !a.awaiting_sync);
            if ready && delivered.insert(*c) {
                push(&st.conns, *c, &line);
            }
        }
    }
    st.requesting.insert(agent_id.to_string());
    if let Some(entry) = st.agents.get_mut(agent_id) {
        entry.pending.push(Pending {
            request_id: request_id.clone(),
            value,
            kind,
            answered: false,
            delivered_to: delivered,
            headless_timer: None,
        });
    }
    if responders.is_none() {
        apply_headless(shared, st, agent_id, &request_id);
    }
}

/// No interactive responder in the hierarchy: the manifest's policy decides (§16 item 7).
/// `allow_if_rule_matches` allows a permission request only when the `[headless] allow`
/// rules of `config.toml` cover it (the same matcher the Runtime uses), else denies.
pub(crate) fn apply_headless(
    shared: &Arc<Shared>,
    st: &mut State,
    agent_id: &str,
    request_id: &str,
) {
    let Some(entry) = st.agents.get(agent_id) else {
        return;
    };
    match entry.manifest.headless_policy {
        HeadlessPolicy::Deny => {
            answer_headless(shared, st, agent_id, request_id, "headless");
        }
        HeadlessPolicy::AllowIfRuleMatches => {
            let allowed = entry
                .pending
                .iter()
                .find(|p| p.request_id == request_id)
                .is_some_and(|p| {
                    matches!(p.kind, PendingKind::Permission { .. })
                        && p.value
                            .get("tool_name")
                            .and_then(|t| t.as_str())
                            .is_some_and(|tool| {
                                let input = p.value.get("input").cloned().unwrap_or_default();
                                // Path globs match the resolved path, at the agent's cwd.
                                shard_gate::gate::headless_allows_at(
                                    &shared.cfg.headless_allow,
                                    tool,
                                    &input,
                                    std::path::Path::new(&entry.manifest.cwd),
                                )
                            })
                });
            let source = if allowed { HEADLESS_RULE } else { "headless" };
            answer_headless(shared, st, agent_id, request_id, source);
        }
        HeadlessPolicy::Queue => start_headless_timer(shared, st, agent_id, request_id),
    }
}

/// Starts the headless timeout of a pending request (queue policy, or a request whose
/// responders all went away: it survives the disconnect until the timeout).
pub(crate) fn start_headless_timer(
    shared: &Arc<Shared>,
    st: &mut State,
    agent_id: &str,
    request_id: &str,
) {
    let Some(p) = st
        .agents
        .get_mut(agent_id)
        .and_then(|e| e.pending.iter_mut().find(|p| p.request_id == request_id))
    else {
        return;
    };
    if p.headless_timer.is_some() || p.answered {
        return;
    }
    let shared2 = Arc::clone(shared);
    let (aid, rid) = (agent_id.to_string(), request_id.to_string());
    let timeout = shared.cfg.headless_timeout;
    let task = tokio::spawn(async move {
        tokio::time::sleep(timeout).await;
        let mut guard = shared2.lock();
        let st = &mut *guard;
        if let Some(p) = st
            .agents
            .get_mut(&aid)
            .and_then(|e| e.pending.iter_mut().find(|p| p.request_id == rid))
        {
            p.headless_timer = None;
        }
        if st.responders(&aid).is_none()
            && answer_headless(&shared2, st, &aid, &rid, "headless_timeout")
        {
            // docs/protocol.md §8: the timeout is also an async `TIMEOUT` error, besides the tool
            // result the Runtime produces, so watchers see why the turn went on.
            let ev = shard_protocol::Event::Error(shard_protocol::event::ErrorEvent {
                agent_id: Some(aid.clone()),
                code: shard_protocol::ErrorCode::Timeout,
                message: format!(
                    "request {rid} waited {} s with no client able to answer; the headless policy answered it",
                    timeout.as_secs()
                ),
                fatal: Some(false),
                kind: None,
                retry_after_ms: None,
            });
            fan_out(st, &aid, &crate::wire::frame(&ev));
        }
    });
    p.headless_timer = Some(task.abort_handle());
}

/// The `source` of a headless answer that a `[headless] allow` rule allowed.
pub(crate) const HEADLESS_RULE: &str = "headless_rule";

/// Answers a pending request for nobody; false when it was already answered.
pub(crate) fn answer_headless(
    shared: &Arc<Shared>,
    st: &mut State,
    agent_id: &str,
    request_id: &str,
    source: &str,
) -> bool {
    let Some(entry) = st.agents.get_mut(agent_id) else {
        return false;
    };
    let Some(p) = entry
        .pending
        .iter_mut()
        .find(|p| p.request_id == request_id && !p.answered)
    else {
        return false;
    };
    p.answered = true;
    let allow = source == HEADLESS_RULE;
    let command = match p.kind {
        PendingKind::Permission { .. } => Command::PermissionResponse(PermissionResponse {
            agent_id: None,
            request_id: request_id.to_string(),
            answer: PermissionAnswer::Decision {
                decision: if allow {
                    PermissionDecision::Allow
                } else {
                    PermissionDecision::Deny
                },
            },
            reason: (!allow).then(|| "no interactive client can answer".into()),
            source: Some(source.to_string()),
        }),
        PendingKind::Ui => Command::UiResponse(UiResponse {
            agent_id: None,
            request_id: request_id.to_string(),
            value: None,
        }),
    };
    if let Some(rt) = entry.rt.as_mut() {
        let _ = send_to_runtime(shared, rt, command, Inflight::Internal);
    }
    true
}

pub(crate) fn on_resolved(st: &mut State, agent_id: &str, request_id: &str, frame: &Bytes) {
    let Some(entry) = st.agents.get_mut(agent_id) else {
        return;
    };
    let mut targets: HashSet<ConnId> = entry
        .attachments
        .iter()
        .filter(|(_, a)| !a.awaiting_sync)
        .map(|(c, _)| *c)
        .collect();
    if let Some(pos) = entry
        .pending
        .iter()
        .position(|p| p.request_id == request_id)
    {
        let p = entry.pending.remove(pos);
        if let Some(t) = p.headless_timer {
            t.abort();
        }
        targets.extend(p.delivered_to);
    }
    for c in targets {
        push(&st.conns, c, frame);
    }
}

/// After attachments changed: a pending request whose nearest interactive responder is
/// now another client (e.g. the child's own client left, so its parent's clients answer)
/// is shown to those clients; one left with no responder starts its headless timeout.
pub(crate) fn recheck_responders(shared: &Arc<Shared>, st: &mut State) {
    let mut orphaned = Vec::new();
    let mut deliveries: Vec<(String, String, Vec<ConnId>, Bytes)> = Vec::new();
    for (id, e) in &st.agents {
        let open: Vec<_> = e.pending.iter().filter(|p| !p.answered).collect();
        if open.is_empty() {
            continue;
        }
        match st.responders(id) {
            None => orphaned.extend(open.iter().map(|p| (id.clone(), p.request_id.clone()))),
            Some((owner, conns)) => {
                let Some(owner_entry) = st.agents.get(&owner) else {
                    continue;
                };
                let ready: Vec<ConnId> = conns
                    .into_iter()
                    .filter(|c| {
                        owner_entry
                            .attachments
                            .get(c)
                            .is_some_and(|a| !a.awaiting_sync)
                    })
                    .collect();
                for p in open {
                    let new: Vec<ConnId> = ready
                        .iter()
                        .copied()
                        .filter(|c| !p.delivered_to.contains(c))
                        .collect();
                    if !new.is_empty() {
                        let mut line = serde_json::to_vec(&p.value).unwrap_or_default();
                        line.push(b'\n');
                        deliveries.push((id.clone(), p.request_id.clone(), new, Bytes::from(line)));
                    }
                }
            }
        }
    }
    for (aid, rid, conns, line) in deliveries {
        for c in &conns {
            push(&st.conns, *c, &line);
        }
        if let Some(p) = st
            .agents
            .get_mut(&aid)
            .and_then(|e| e.pending.iter_mut().find(|p| p.request_id == rid))
        {
            p.delivered_to.extend(conns);
            if let Some(t) = p.headless_timer.take() {
                t.abort();
            }
        }
    }
    for (aid, rid) in orphaned {
        start_headless_timer(shared, st, &aid, &rid);
    }
}
