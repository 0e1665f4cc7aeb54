//! The daemon under a low open-file soft limit: it raises the limit to the hard one at
//! start, so hundreds of live Runtimes fit where the soft limit alone allows a few dozen.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command as StdCommand;

use futures::future::join_all;
use shard_protocol::command::{AgentListQuery, ClientMessage, Command, kind};
use shard_protocol::event::Response;
use shard_protocol::responses::AgentsData;
use shard_protocol::types::{AgentInfo, RuntimeState};
use shard_protocol::{CommandSpec, ErrorCode, Event};

use shard_protocol::command::AttachRole;
use tokio::io::AsyncBufReadExt;

use super::daemon::{Daemon, T, create_req, home, prompt, raw_attach, script};

/// The soft limit the daemon is started under; 200 live Runtimes need several times this
/// many descriptors.
const LOW_SOFT_LIMIT: u64 = 256;
const AGENTS: usize = 200;

fn limits_of(pid: u32) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let nums: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    (nums[0], nums[1])
}

fn hard_limit_here() -> u64 {
    let out = StdCommand::new("sh")
        .args(["-c", "ulimit -Hn"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if text == "unlimited" {
        u64::MAX
    } else {
        text.parse().unwrap()
    }
}

/// A daemon started by `sh` after `ulimit {flag} {limit}`, with Runtimes kept live.
fn daemon_under(home: &std::path::Path, flag: &str, limit: u64) -> Daemon {
    let mut cmd = StdCommand::new("sh");
    cmd.args([
        "-c",
        &format!("ulimit {flag} {limit} && exec \"$0\" \"$@\""),
        env!("CARGO_BIN_EXE_shard"),
        "daemon",
        "--port",
        "0",
        "--idle-runtime-timeout",
        "100000",
    ]);
    Daemon::start_command(home, cmd)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_under_a_soft_limit_of_256_keeps_200_live_agents() {
    let hard = hard_limit_here();
    if hard < 4 * AGENTS as u64 {
        crate::skip::skip(&format!(
            "the hard open-file limit here is {hard}, too low to prove anything (needs {})",
            4 * AGENTS
        ));
        return;
    }
    let h = home();
    let d = daemon_under(h.path(), "-Sn", LOW_SOFT_LIMIT);
    let (soft, hard_seen) = limits_of(d.child.id());
    assert_eq!(
        soft, hard_seen,
        "the daemon raises its soft open-file limit to the hard one"
    );
    assert!(soft > LOW_SOFT_LIMIT);

    let s = script(h.path(), "idle.json", serde_json::json!([]));
    let c = d.client().await;
    let creates = (0..AGENTS).map(|_| c.create(create_req(h.path(), &s)));
    let results = tokio::time::timeout(T * 5, join_all(creates))
        .await
        .expect("200 creates answered");
    let failed: Vec<String> = results
        .iter()
        .filter_map(|r| r.as_ref().err().map(|e| e.to_string()))
        .collect();
    assert!(failed.is_empty(), "creates failed: {failed:?}");

    let listed = c.list().await.unwrap();
    assert_eq!(listed.len(), AGENTS);
    let live = listed
        .iter()
        .filter(|a| a.runtime_state == RuntimeState::Running)
        .count();
    assert_eq!(live, AGENTS, "every agent's Runtime is live: {listed:?}");

    // One descriptor per live Runtime (a socket for its stdin and stdout; no pipes, no
    // pidfd), plus the daemon's own few dozen.
    let open = std::fs::read_dir(format!("/proc/{}/fd", d.child.id()))
        .unwrap()
        .count();
    assert!(
        open < AGENTS + 100,
        "{open} descriptors open for {AGENTS} live Runtimes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_descriptors_a_create_says_so_and_leaves_no_half_made_agent() {
    const LIMIT: u64 = 64;
    let h = home();
    let d = daemon_under(h.path(), "-n", LIMIT);
    assert_eq!(limits_of(d.child.id()), (LIMIT, LIMIT));
    let s = script(h.path(), "idle.json", serde_json::json!([]));
    let c = d.client().await;
    let mut created = 0;
    let mut refusal = None;
    for _ in 0..LIMIT {
        match tokio::time::timeout(T, c.create(create_req(h.path(), &s)))
            .await
            .expect("create answered")
        {
            Ok(_) => created += 1,
            Err(e) => {
                refusal = Some(e.to_string());
                break;
            }
        }
    }
    let refusal = refusal.expect("a daemon limited to 64 descriptors runs out");
    assert!(
        refusal.contains(&format!(
            "the daemon has run out of file descriptors (limit {LIMIT} open files)"
        )) && refusal.contains("ulimit"),
        "one line with the limit and how to raise it: {refusal}"
    );
    assert!(created > 0, "some agents fit: {refusal}");
    let listed = c.list().await.unwrap();
    assert_eq!(listed.len(), created, "no half-made agent is listed");
    let manifests = std::fs::read_dir(h.path().join("manifests"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".json"))
        })
        .count();
    assert_eq!(
        manifests, created,
        "no manifest is left for the refused create"
    );
}

/// Counts the deltas a reading client gets until the message completes; panics when it is
/// disconnected first.
async fn count_deltas(
    mut r: tokio::io::BufReader<tokio::net::UnixStream>,
    who: &'static str,
) -> usize {
    let mut deltas = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        let n = tokio::time::timeout(T, r.read_line(&mut line))
            .await
            .expect("a line in time")
            .unwrap();
        assert!(n > 0, "{who} was disconnected after {deltas} deltas");
        if line.contains("\"type\":\"message_delta\"") {
            deltas += 1;
        } else if line.contains("\"type\":\"message_complete\"") {
            return deltas;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_global_queue_budget_drops_the_slowest_client_and_no_other() {
    const BUDGET: usize = 3_000_000;
    let h = home();
    // Per-client caps far above the budget: only the daemon-wide budget can drop anyone.
    let d = Daemon::start(
        h.path(),
        &[
            "--client-queue-messages",
            "10000000",
            "--client-queue-bytes",
            "1000000000",
            "--client-queue-total-bytes",
            &BUDGET.to_string(),
        ],
    );
    // About 8 MB of deltas per client, paced like a fast model.
    let n = 80_000;
    let mut steps = Vec::new();
    for _ in 0..800 {
        steps.push(serde_json::json!({"text": "xxxx", "chunk_chars": 4, "repeat": 100}));
        steps.push(serde_json::json!({"delay_ms": 20}));
    }
    let s = script(h.path(), "s.json", serde_json::json!([{ "steps": steps }]));
    let driver = d.client().await;
    let id = driver.create(create_req(h.path(), &s)).await.unwrap();
    let fast_a = tokio::spawn(count_deltas(
        raw_attach(h.path(), &id).await,
        "fast client A",
    ));
    let fast_b = tokio::spawn(count_deltas(
        raw_attach(h.path(), &id).await,
        "fast client B",
    ));
    // Reads up to its sync, then never again: its backlog outgrows the budget alone.
    let stalled = raw_attach(h.path(), &id).await;
    let (_, _driver_events) = driver.attach(&id, AttachRole::Interactive).await.unwrap();
    driver.call(prompt(&id, "flood")).await.unwrap();
    driver.detach(&id).await.unwrap();
    assert_eq!(fast_a.await.unwrap(), n, "fast client A got every delta");
    assert_eq!(fast_b.await.unwrap(), n, "fast client B got every delta");
    let mut lines = stalled.lines();
    let mut last = String::new();
    while let Ok(Ok(Some(l))) = tokio::time::timeout(T, lines.next_line()).await {
        last = l;
    }
    assert!(
        last.contains("CLIENT_TOO_SLOW") && last.contains("queues together"),
        "the stalled client is dropped by the global budget: {last}"
    );
}

/// One command on a raw connection; returns its response, decoded strictly as the
/// protocol's `response` event (the daemon writes `agent.list` by hand, so this checks
/// its bytes too).
async fn raw_call(
    r: &mut tokio::io::BufReader<tokio::net::UnixStream>,
    cmd: Command,
    id: &str,
) -> Response {
    use tokio::io::AsyncWriteExt;
    let line = shard_protocol::to_line(&ClientMessage::new(id, cmd));
    r.get_mut().write_all(&line).await.unwrap();
    let mut line = String::new();
    loop {
        line.clear();
        let n = tokio::time::timeout(T, r.read_line(&mut line))
            .await
            .expect("a response in time")
            .unwrap();
        assert!(n > 0, "closed before the response");
        let ev = shard_protocol::decode_event(line.trim_end().as_bytes())
            .unwrap_or_else(|e| panic!("not an event ({e}): {line}"));
        if let Event::Response(resp) = ev
            && resp.id.as_deref() == Some(id)
        {
            return resp;
        }
    }
}

/// `agent.list` with an optional page size and cursor.
fn list(limit: Option<u32>, after: Option<String>) -> Command {
    Command::AgentList(AgentListQuery { limit, after })
}

/// The agents of a successful `agent.list` response, typed.
fn listed(r: Response) -> AgentsData {
    assert!(r.success, "{r:?}");
    kind::AgentList::decode_response(r.data).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_list_pages_cover_the_full_list_in_order() {
    let h = home();
    let d = Daemon::start(h.path(), &[]);
    let s = script(h.path(), "idle.json", serde_json::json!([]));
    let c = d.client().await;
    for _ in 0..5 {
        c.create(create_req(h.path(), &s)).await.unwrap();
    }
    let sock = tokio::net::UnixStream::connect(h.path().join("daemon.sock"))
        .await
        .unwrap();
    let mut r = tokio::io::BufReader::new(sock);
    let full = listed(raw_call(&mut r, list(None, None), "all").await);
    assert_eq!(full.next_after, None, "{full:?}");
    let all = full.agents;
    assert_eq!(all.len(), 5);

    let mut paged = Vec::new();
    let mut after = None;
    for page in 0.. {
        assert!(page < 5, "paging ends");
        let v = listed(raw_call(&mut r, list(Some(2), after.clone()), &format!("p{page}")).await);
        assert!(v.agents.len() <= 2);
        paged.extend(v.agents);
        match v.next_after {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    let ids = |v: &[AgentInfo]| -> Vec<String> { v.iter().map(|a| a.agent_id.clone()).collect() };
    assert_eq!(
        ids(&paged),
        ids(&all),
        "the pages are the full list, in order"
    );

    let bad = raw_call(&mut r, list(None, Some("nonsense".into())), "bad").await;
    assert!(!bad.success, "{bad:?}");
    assert_eq!(bad.error.map(|e| e.code), Some(ErrorCode::InvalidRequest));
}

/// A model that streams one tool call with a huge argument (4 MiB of `write` content,
/// 16 characters per provider event, as fast as the provider can) never costs an attached
/// client its connection: the arguments reach it in batches, whole, and the client sees
/// the request, answers it and goes on working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_a_huge_tool_argument_keeps_the_attached_client() {
    use serde_json::json;
    use shard_protocol::event::DeltaKind;
    let h = home();
    let d = Daemon::start(h.path(), &[]);
    let content = "x".repeat(4 * 1024 * 1024);
    let args = json!({"path": "big.txt", "content": content});
    let args_len = serde_json::to_string(&args).unwrap().len();
    let turns = json!([
        {"steps": [{"tool_call": {"id": "big", "name": "write", "args": args},
            "chunk_chars": 16}]},
        {"steps": [{"text": "done"}]}
    ]);
    drop(content);
    let s = script(h.path(), "s.json", turns);
    let c = d.client().await;
    let id = c.create(create_req(h.path(), &s)).await.unwrap();
    let (_, mut events) = c.attach(&id, AttachRole::Interactive).await.unwrap();
    c.call(prompt(&id, "write it")).await.unwrap();
    let (mut arg_deltas, mut arg_bytes, mut asked) = (0usize, 0usize, false);
    let mut result = None;
    loop {
        let e = super::daemon::next(&mut events).await;
        match &e {
            Event::MessageDelta(m) if m.kind == DeltaKind::ToolCall => {
                if let Some(a) = &m.args_delta {
                    arg_deltas += 1;
                    arg_bytes += a.len();
                }
            }
            Event::PermissionRequest(r) => {
                asked = true;
                let deny = json!({"type": "permission_response", "agent_id": id,
                    "request_id": r.request_id, "decision": "deny"});
                c.call(serde_json::from_value(deny).unwrap()).await.unwrap();
            }
            Event::ToolResult(r) if r.tool_call_id == "big" => result = Some(r.clone()),
            Event::TurnEnd(_) => break,
            _ => {}
        }
    }
    assert!(asked, "the person was asked");
    assert!(result.is_some_and(|r| r.is_error));
    assert_eq!(arg_bytes, args_len, "the arguments arrive whole");
    // One per 16 KiB, and one per 100 ms of a stream slower than that.
    assert!(
        arg_deltas <= args_len / (16 * 1024) + 200,
        "{arg_deltas} argument deltas for {args_len} bytes"
    );
    assert!(!h.path().join("big.txt").exists());
    // Still connected and served.
    let list = c.call(Command::AgentList(AgentListQuery::default())).await;
    assert!(list.is_ok(), "{list:?}");
}
