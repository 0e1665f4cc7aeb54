//! Subagent jobs against fake Runtimes: `runtime.auth` as the parent's
//! identity, create/wait/status/stop, the child's prompt and events, the completion
//! report to the parent, durability across a daemon restart, and task-text privacy.
//! The parent's side speaks typed commands and reads typed responses and events
//! (`common::Wire`); the fake Runtimes write their lines by hand, as a Runtime would.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use serde_json::{Value, json};
use shard_client::Client;
use shard_protocol::command::{
    AgentAttach, AgentTarget, AttachRole, ClientMessage, Command, Prompt, Steer, StreamingBehavior,
    SubagentCreate, SubagentRelaunch, SubagentStatus, SubagentSteer, SubagentStop, SubagentTask,
    SubagentWait, WaitMode, kind,
};
use shard_protocol::jobs::{JobState, JobStrategy, RunActionKind, RunActor, RunState};
use shard_protocol::responses::{AggregateState, MixedTag, SteerOutcome, SubagentWaitData};
use shard_protocol::{ErrorCode, Event};
use tokio::io::AsyncWriteExt;

const TASK: &str = "PRIVATE-TASK-7f3a: summarise the repository";

/// Waits on `wire` for a `subagent_run_changed` of `run_id` to `state`.
async fn run_changed(wire: &mut Wire, run_id: &str, state: RunState) {
    let is_it = |ev: &Event| matches!(ev, Event::SubagentRunChanged(c) if c.run_id == run_id && c.state == state);
    if wire.seen.iter().any(is_it) {
        return;
    }
    loop {
        let ev = wire.line().await.expect("an event");
        if is_it(&ev) {
            return;
        }
    }
}

/// One task under the default definition.
fn create_one(pid: &str, task: &str) -> Command {
    Command::SubagentCreate(SubagentCreate {
        parent_agent_id: pid.to_string(),
        task: Some(task.to_string()),
        ..Default::default()
    })
}

/// `tasks` (definition name, task) run by `strategy`.
fn create_many(pid: &str, tasks: &[(&str, String)], strategy: JobStrategy) -> Command {
    Command::SubagentCreate(SubagentCreate {
        parent_agent_id: pid.to_string(),
        tasks: Some(
            tasks
                .iter()
                .map(|(name, task)| SubagentTask {
                    name: name.to_string(),
                    task: task.clone(),
                })
                .collect(),
        ),
        strategy: Some(strategy),
        ..Default::default()
    })
}

fn wait(pid: &str, handles: &[&str], mode: Option<WaitMode>, timeout: Option<f64>) -> Command {
    Command::SubagentWait(SubagentWait {
        parent_agent_id: pid.to_string(),
        handles: handles.iter().map(|h| h.to_string()).collect(),
        mode,
        timeout,
    })
}

fn stop(pid: &str, handle: &str) -> Command {
    Command::SubagentStop(SubagentStop {
        parent_agent_id: pid.to_string(),
        handle: handle.to_string(),
    })
}

fn status(pid: &str, targets: Option<&[&str]>) -> Command {
    Command::SubagentStatus(SubagentStatus {
        parent_agent_id: pid.to_string(),
        targets: targets.map(|t| t.iter().map(|h| h.to_string()).collect()),
    })
}

fn relaunch(pid: &str, target: &str, task: &str) -> Command {
    Command::SubagentRelaunch(SubagentRelaunch {
        parent_agent_id: pid.to_string(),
        target: target.to_string(),
        task: task.to_string(),
    })
}

fn prompt(agent_id: &str, message: &str) -> Command {
    Command::Prompt(Prompt {
        agent_id: Some(agent_id.to_string()),
        message: message.to_string(),
        images: None,
        streaming_behavior: None,
    })
}

/// The states of a wait's runs, in order.
fn states(w: &SubagentWaitData) -> Vec<RunState> {
    w.runs.iter().map(|r| r.state).collect()
}

/// A parent agent and an authenticated Runtime connection acting for it.
async fn parent(s: &mut Setup) -> (String, Fake, Wire, Client) {
    let c = Client::connect_daemon(&s.home).await.unwrap();
    let (id, rt) = create(s, &c, None).await;
    let mut wire = Wire::hello(&s.home).await;
    let r = wire.runtime_auth(&id, &rt.spec.token).await;
    assert!(r.success, "{r:?}");
    (id, rt, wire, c)
}

/// The prompt a command is, or the test fails.
fn as_prompt(cmd: &ClientMessage) -> &Prompt {
    match &cmd.command {
        Command::Prompt(p) => p,
        other => panic!("expected a prompt, got {other:?}"),
    }
}

/// The strict steer a command is, or the test fails.
fn as_steer(cmd: &ClientMessage) -> &Steer {
    match &cmd.command {
        Command::Steer(s) => s,
        other => panic!("expected a steer, got {other:?}"),
    }
}

/// The next child Runtime: ready, and the prompt it was sent (answered `accepted`).
async fn child(s: &mut Setup) -> (Fake, Prompt) {
    let mut rt = tokio::time::timeout(T, s.runtimes.recv())
        .await
        .unwrap()
        .unwrap();
    rt.ready().await;
    let cmd = rt.next_cmd().await;
    let p = as_prompt(&cmd).clone();
    rt.answer(&cmd, None).await;
    (rt, p)
}

/// Plays one turn that ends with `text`.
async fn finish_turn(rt: &mut Fake, text: &str) {
    rt.emit(json!({"type":"turn_start","turn_id":"turn-1"}))
        .await;
    rt.emit(json!({"type":"message_complete","message_id":"m1","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":text}]}})).await;
    rt.emit(json!({"type":"turn_end","turn_id":"turn-1","usage":{"input":10,"output":3}}))
        .await;
}

fn grep_home(home: &std::path::Path, needle: &str) -> Vec<std::path::PathBuf> {
    let mut hits = Vec::new();
    let mut stack = vec![home.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if std::fs::read(&p)
                .map(|b| String::from_utf8_lossy(&b).contains(needle))
                .unwrap_or(false)
            {
                hits.push(p);
            }
        }
    }
    hits
}

#[tokio::test]
async fn a_single_job_runs_reports_and_stays_private() {
    let mut s = start(|_| {}).await;
    let (pid, mut prt, mut wire, _c) = parent(&mut s).await;
    let created = wire
        .ok::<kind::SubagentCreate>(create_one(&pid, TASK))
        .await;
    let run = &created.runs[0];
    assert_eq!(run.state, RunState::Queued);
    assert_eq!(run.alias, "general");
    let run_id = run.run_id.clone();
    let job_id = created.job_id.clone();
    // Committed before the answer.
    assert!(s.home.join(format!("jobs/{job_id}.json")).exists());

    let (mut crt, task) = child(&mut s).await;
    assert_eq!(task.message, TASK);
    assert_eq!(crt.spec.parent_agent_id.as_deref(), Some(pid.as_str()));
    run_changed(&mut wire, &run_id, RunState::Active).await;
    // A direct prompt to a leased child is refused (the lease guard).
    let mut other = Wire::hello(&s.home).await;
    let refused = other.fails(prompt(&crt.spec.agent_id, "hi")).await;
    assert_eq!(refused, ErrorCode::Conflict);
    finish_turn(&mut crt, "the summary").await;
    run_changed(&mut wire, &run_id, RunState::Completed).await;

    // The parent gets the completion report as a prompt (it is idle).
    let report = prt.next_cmd().await;
    let text = &as_prompt(&report).message;
    assert!(
        text.contains("the summary") && text.contains("completed"),
        "{text}"
    );
    assert!(!text.contains(TASK));
    prt.answer(&report, None).await;

    let w = wire
        .ok::<kind::SubagentWait>(wait(&pid, &["GENERAL"], None, Some(0.0)))
        .await;
    assert!(!w.timed_out, "{w:?}");
    assert_eq!(
        w.aggregate_state,
        AggregateState::State(JobState::Completed)
    );
    assert_eq!(w.runs[0].final_text.as_deref(), Some("the summary"));
    assert_eq!(w.runs[0].usage.as_ref().map(|u| u.input), Some(10));

    let st = wire.ok::<kind::SubagentStatus>(status(&pid, None)).await;
    let jobs = st.jobs.expect("jobs when no targets are named");
    assert_eq!(jobs[0].job_id, job_id);
    assert_eq!(jobs[0].state, JobState::Completed);
    assert_eq!(st.agents[0].alias.as_deref(), Some("general"));

    // Task text: in the job record only, never on the wire.
    for line in wire.raw.iter().chain(other.raw.iter()) {
        assert!(!line.contains(TASK), "task text leaked: {line}");
    }
    let hits = grep_home(&s.home, TASK);
    assert!(
        hits.iter().all(|p| p.starts_with(s.home.join("jobs"))),
        "task text outside job records: {hits:?}"
    );
}

/// The checked-in schema's definition `name`, as a schema of its own.
fn schema_of(name: &str) -> jsonschema::Validator {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../schema/protocol.schema.json"
    );
    let schema: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let one = json!({
        "$schema": schema["$schema"],
        "$ref": format!("#/$defs/{name}"),
        "$defs": schema["$defs"],
    });
    jsonschema::validator_for(&one).unwrap()
}

/// The `data` of the last response `wire` read, exactly as it was sent, after checking it
/// against the schema's definition `def` and that the typed response of `K` encodes to
/// the same bytes.
fn wire_data<K: shard_protocol::CommandSpec>(wire: &Wire, def: &str) -> String {
    let line: Value = serde_json::from_str(wire.raw.last().unwrap()).unwrap();
    let data = line["data"].clone();
    let errors: Vec<String> = schema_of(def)
        .iter_errors(&data)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{def}: {errors:?} in {data}");
    let sent = serde_json::to_string(&data).unwrap();
    let typed = K::decode_response(Some(data)).unwrap();
    assert_eq!(
        serde_json::to_string(&typed).unwrap(),
        sent,
        "the typed {def} encodes other bytes than the daemon sent"
    );
    sent
}

#[tokio::test]
async fn wait_and_stop_answer_the_documented_shape_with_the_bytes_they_always_had() {
    let mut s = start(|_| {}).await;
    let (pid, _prt, mut wire, _c) = parent(&mut s).await;
    let created = wire
        .ok::<kind::SubagentCreate>(create_one(&pid, "look"))
        .await;
    let (mut k, _) = child(&mut s).await;
    let run_id = created.runs[0].run_id.clone();
    k.emit(json!({"type":"turn_start","turn_id":"turn-1"}))
        .await;
    run_changed(&mut wire, &run_id, RunState::Active).await;

    // A poll while the run is active: the keys in the order the daemon always sent.
    wire.ok::<kind::SubagentWait>(wait(&pid, &[&run_id], None, Some(0.0)))
        .await;
    let sent = wire_data::<kind::SubagentWait>(&wire, "SubagentWaitData");
    assert!(
        sent.starts_with(r#"{"aggregate_state":"running","runs":[{"job_id":"#),
        "{sent}"
    );
    assert!(sent.ends_with(r#"],"timed_out":true}"#), "{sent}");

    // Stopping the job cancels the run: its agent is named.
    let stopped = wire
        .ok::<kind::SubagentStop>(stop(&pid, &created.job_id))
        .await;
    let sent = wire_data::<kind::SubagentStop>(&wire, "SubagentStopData");
    assert_eq!(stopped.cancelled.len(), 1, "{sent}");
    let head = format!(
        r#"{{"cancelled":[{{"run_id":"{run_id}","agent_id":"{}","state":"#,
        k.spec.agent_id
    );
    assert!(sent.starts_with(&head), "{sent}");
    let tail = format!(r#"}}],"job_id":"{}"}}"#, created.job_id);
    assert!(sent.ends_with(&tail), "{sent}");
    let abort = k.next_cmd().await;
    assert!(matches!(abort.command, Command::Abort(_)), "{abort:?}");
    k.answer(&abort, None).await;
    k.emit(json!({"type":"turn_end","turn_id":"turn-1"})).await;
    run_changed(&mut wire, &run_id, RunState::Cancelled).await;

    // Stopping an agent with nothing left to stop: `job_id` is sent as null.
    wire.ok::<kind::SubagentStop>(stop(&pid, "general")).await;
    let sent = wire_data::<kind::SubagentStop>(&wire, "SubagentStopData");
    assert_eq!(sent, r#"{"cancelled":[],"job_id":null}"#);
}

#[tokio::test]
async fn only_the_parents_authenticated_runtime_may_act_for_it() {
    let mut s = start(|_| {}).await;
    let (pid, _prt, mut wire, _c) = parent(&mut s).await;
    // A plain client.
    let mut plain = Wire::hello(&s.home).await;
    assert_eq!(
        plain.fails(create_one(&pid, TASK)).await,
        ErrorCode::PermissionDenied
    );
    assert_eq!(
        plain.fails(status(&pid, None)).await,
        ErrorCode::PermissionDenied
    );
    // The parent's runtime naming another parent (a forged parent_agent_id).
    let c = Client::connect_daemon(&s.home).await.unwrap();
    let (other_id, ort) = create(&mut s, &c, None).await;
    assert_eq!(
        wire.fails(create_one(&other_id, TASK)).await,
        ErrorCode::PermissionDenied
    );
    // Another parent's job is NOT_FOUND, whatever handle names it.
    let mine = wire
        .ok::<kind::SubagentCreate>(create_one(&pid, TASK))
        .await;
    let mut other_wire = Wire::hello(&s.home).await;
    let auth = other_wire.runtime_auth(&other_id, &ort.spec.token).await;
    assert!(auth.success, "{auth:?}");
    for h in [mine.job_id.as_str(), "general"] {
        assert_eq!(
            other_wire.fails(stop(&other_id, h)).await,
            ErrorCode::NotFound
        );
    }
}

#[tokio::test]
async fn create_is_validated_whole_before_side_effects() {
    let mut s = start(|c| c.launch_limits.max_tasks = 2).await;
    let (pid, _prt, mut wire, _c) = parent(&mut s).await;
    // Hand-made requests: some do not even decode as a `subagent.create`.
    let bad = [
        json!({"tasks":[{"name":"general","task":"a"}]}),
        json!({"tasks":[], "strategy":"parallel"}),
        json!({"task":"a","tasks":[{"name":"general","task":"b"}],"strategy":"parallel"}),
        json!({"tasks":[{"name":"general","task":"a"},{"name":"a\u{7}b","task":"b"}],"strategy":"parallel"}),
        json!({"tasks":[{"name":"x".repeat(65),"task":"b"}],"strategy":"parallel"}),
        json!({"tasks":[{"name":"general","task":"a"},{"name":"general","task":"b"},{"name":"general","task":"c"}],"strategy":"parallel"}),
        json!({"name":"","task":"a"}),
        json!({"task":"   "}),
        json!({}),
    ];
    for b in bad {
        let mut cmd = b.clone();
        cmd["type"] = json!("subagent.create");
        cmd["parent_agent_id"] = json!(pid);
        let r = wire.call_json(cmd).await;
        assert_eq!(code_of(&r), ErrorCode::InvalidRequest, "{b} → {r:?}");
    }
    assert_eq!(std::fs::read_dir(s.home.join("jobs")).unwrap().count(), 0);
}

#[tokio::test]
async fn a_parallel_batch_with_one_failure_and_a_stopped_chain() {
    let mut s = start(|_| {}).await;
    let (pid, _prt, mut wire, _c) = parent(&mut s).await;
    let tasks: Vec<_> = (0..4).map(|i| ("general", format!("part {i}"))).collect();
    let r = wire
        .ok::<kind::SubagentCreate>(create_many(&pid, &tasks, JobStrategy::Parallel))
        .await;
    let aliases: Vec<_> = r.runs.iter().map(|r| r.alias.as_str()).collect();
    assert_eq!(aliases, ["general", "general-2", "general-3", "general-4"]);
    let mut kids = Vec::new();
    for _ in 0..4 {
        kids.push(child(&mut s).await);
    }
    // Children start concurrently: which one is "part 2" is known by its prompt.
    for (k, p) in kids.iter_mut() {
        let i = p.message.trim_start_matches("part ").to_string();
        if i == "2" {
            k.emit(json!({"type":"turn_start","turn_id":"turn-1"}))
                .await;
            k.emit(json!({"type":"error","code":"PROVIDER_ERROR","message":"boom","fatal":true}))
                .await;
            k.emit(json!({"type":"turn_end","turn_id":"turn-1"})).await;
        } else {
            finish_turn(k, &format!("ok {i}")).await;
        }
    }
    let w = wire
        .ok::<kind::SubagentWait>(wait(&pid, &[&r.job_id], None, None))
        .await;
    assert!(!w.timed_out);
    assert_eq!(w.aggregate_state, AggregateState::Mixed(MixedTag::Mixed));
    use RunState::{Cancelled, Completed, Failed};
    assert_eq!(states(&w), [Completed, Completed, Failed, Completed]);

    // A chain: step 1's final text reaches step 2; stopping step 2 cancels step 3.
    let tasks: Vec<_> = (0..3).map(|i| ("general", format!("step {i}"))).collect();
    let r = wire
        .ok::<kind::SubagentCreate>(create_many(&pid, &tasks, JobStrategy::Chain))
        .await;
    let (mut k1, p1) = child(&mut s).await;
    assert_eq!(p1.message, "step 0");
    // wait with timeout 0 while step 1 runs: a poll.
    let w = wire
        .ok::<kind::SubagentWait>(wait(&pid, &[&r.runs[0].run_id], None, Some(0.0)))
        .await;
    assert!(w.timed_out);
    finish_turn(&mut k1, "first result").await;
    let (mut k2, p2) = child(&mut s).await;
    assert!(p2.message.contains("first result"));
    k2.emit(json!({"type":"turn_start","turn_id":"turn-2"}))
        .await;
    run_changed(&mut wire, &r.runs[1].run_id, RunState::Active).await;
    wire.ok::<kind::SubagentStop>(stop(&pid, &r.runs[1].alias))
        .await;
    // The child is asked to abort, then its turn ends.
    let abort = k2.next_cmd().await;
    assert!(matches!(abort.command, Command::Abort(_)), "{abort:?}");
    k2.answer(&abort, None).await;
    k2.emit(json!({"type":"turn_end","turn_id":"turn-2"})).await;
    let w = wire
        .ok::<kind::SubagentWait>(wait(&pid, &[&r.job_id], Some(WaitMode::All), None))
        .await;
    assert_eq!(states(&w), [Completed, Cancelled, Cancelled]);
}

#[tokio::test]
async fn wait_any_returns_on_the_first_end_and_relaunch_keeps_the_agent() {
    let mut s = start(|_| {}).await;
    let (pid, _prt, mut wire, _c) = parent(&mut s).await;
    let tasks: Vec<_> = (0..2).map(|i| ("general", format!("t{i}"))).collect();
    let r = wire
        .ok::<kind::SubagentCreate>(create_many(&pid, &tasks, JobStrategy::Parallel))
        .await;
    let (mut a, pa) = child(&mut s).await;
    let (mut b, _) = child(&mut s).await;
    // Children start concurrently: `a` is the one given "t0" (alias `general`).
    if pa.message != "t0" {
        std::mem::swap(&mut a, &mut b);
    }
    finish_turn(&mut a, "a done").await;
    let w = wire
        .ok::<kind::SubagentWait>(wait(&pid, &[&r.job_id], Some(WaitMode::Any), None))
        .await;
    assert!(!w.timed_out);
    assert_eq!(w.aggregate_state, AggregateState::Mixed(MixedTag::Mixed));
    // Relaunch an active child: conflict; the finished one: same agent and alias.
    let busy = wire.fails(relaunch(&pid, "general-2", "again")).await;
    assert_eq!(busy, ErrorCode::Conflict);
    let re = wire
        .ok::<kind::SubagentRelaunch>(relaunch(&pid, "general", "again"))
        .await;
    assert_eq!(re.agent_id, a.spec.agent_id);
    assert_eq!(re.alias, "general");
    assert_ne!(re.job_id, r.job_id);
    // The same Runtime (same session) gets the new task.
    let cmd = a.next_cmd().await;
    assert_eq!(as_prompt(&cmd).message, "again");
}

#[tokio::test]
async fn after_a_daemon_restart_unfinished_runs_are_interrupted_and_relaunchable() {
    let mut s = start(|_| {}).await;
    let (pid, _prt, mut wire, _c) = parent(&mut s).await;
    let tasks = [("general", "x".to_string()), ("general", "y".to_string())];
    let r = wire
        .ok::<kind::SubagentCreate>(create_many(&pid, &tasks, JobStrategy::Chain))
        .await;
    let job_id = r.job_id.clone();
    let (_k, _) = child(&mut s).await;
    run_changed(&mut wire, &r.runs[0].run_id, RunState::Active).await;
    // The records as a crashed daemon leaves them, loaded by a new daemon on the same home.
    let record = std::fs::read(s.home.join(format!("jobs/{job_id}.json"))).unwrap();
    let home2 = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home2.path().join("jobs")).unwrap();
    std::fs::write(home2.path().join(format!("jobs/{job_id}.json")), &record).unwrap();
    for e in std::fs::read_dir(s.home.join("manifests"))
        .unwrap()
        .flatten()
    {
        std::fs::create_dir_all(home2.path().join("manifests")).unwrap();
        std::fs::copy(e.path(), home2.path().join("manifests").join(e.file_name())).unwrap();
    }
    let (tx, mut rx2) = tokio::sync::mpsc::unbounded_channel();
    let cfg = shard_daemon::DaemonConfig::new(home2.path().to_path_buf());
    let d = shard_daemon::Daemon::bind_with_launcher(cfg, std::sync::Arc::new(FakeLauncher(tx)))
        .await
        .unwrap();
    tokio::spawn(d.run());
    // The job record on disk (not the wire) is JSON the daemon owns.
    let after: Value = serde_json::from_slice(
        &std::fs::read(home2.path().join(format!("jobs/{job_id}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(after["runs"][0]["state"], "interrupted");
    // The chain's dependent step is cancelled, not replayed.
    assert_eq!(after["runs"][1]["state"], "cancelled");
    // The reports the crashed daemon never delivered wake the parent (a new Runtime).
    let mut prt2 = tokio::time::timeout(T, rx2.recv()).await.unwrap().unwrap();
    assert_eq!(prt2.spec.agent_id, pid);
    prt2.ready().await;
    let rep = prt2.next_cmd().await;
    assert!(as_prompt(&rep).message.contains("interrupted"));
    // Its Runtime authenticates and relaunches the interrupted child.
    let mut wire2 = Wire::hello(home2.path()).await;
    let auth = wire2.runtime_auth(&pid, &prt2.spec.token).await;
    assert!(auth.success, "{auth:?}");
    wire2
        .ok::<kind::SubagentRelaunch>(relaunch(&pid, "general", "resume"))
        .await;
    let mut k = tokio::time::timeout(T, rx2.recv()).await.unwrap().unwrap();
    k.ready().await;
    assert_eq!(as_prompt(&k.next_cmd().await).message, "resume");
}

/// Writes `.shard/agents/NAME.md` under `cwd` with `front` as front matter.
fn write_definition(cwd: &std::path::Path, name: &str, front: &str) {
    let defs = cwd.join(".shard/agents");
    std::fs::create_dir_all(&defs).unwrap();
    let text = format!("---\n{front}\n---\nYou review code.\n");
    std::fs::write(defs.join(format!("{name}.md")), text).unwrap();
}

#[tokio::test]
async fn a_project_definition_gives_the_child_its_prompt_tools_and_display_name() {
    let mut s = start(|_| {}).await;
    let (pid, _prt, mut wire, _c) = parent(&mut s).await;
    write_definition(
        &s.home,
        "reviewer",
        "name: reviewer\ndescription: Reviews diffs\ntools: read, grep",
    );
    let r = wire
        .ok::<kind::SubagentCreate>(Command::SubagentCreate(SubagentCreate {
            parent_agent_id: pid.clone(),
            name: Some("reviewer".into()),
            task: Some("look".into()),
            ..Default::default()
        }))
        .await;
    assert_eq!(r.runs[0].display_name.as_deref(), Some("Reviews diffs"));
    assert_eq!(r.runs[0].alias, "reviewer");
    let (k, _) = child(&mut s).await;
    assert_eq!(
        k.spec.tools,
        Some(vec!["read".to_string(), "grep".to_string()])
    );
    let f = k
        .spec
        .system_prompt_file
        .clone()
        .expect("a system prompt file");
    assert_eq!(std::fs::read_to_string(f).unwrap(), "You review code.");
}

#[tokio::test]
async fn a_name_without_a_definition_is_a_general_child_under_that_name() {
    let mut s = start(|_| {}).await;
    let (pid, _prt, mut wire, _c) = parent(&mut s).await;
    write_definition(
        &s.home,
        "reviewer",
        "description: Reviews diffs\ntools: read",
    );
    // A file a path-like name would reach if it were looked up as a definition.
    std::fs::write(
        s.home.join(".shard/evil.md"),
        "---\ntools: bash\n---\nEVIL\n",
    )
    .unwrap();
    let tasks = [
        ("reviewer", "a".to_string()),
        ("Fix tests", "b".to_string()),
        ("../evil", "c".to_string()),
    ];
    let r = wire
        .ok::<kind::SubagentCreate>(create_many(&pid, &tasks, JobStrategy::Parallel))
        .await;
    let runs = &r.runs;
    assert_eq!(runs[0].definition_name.as_deref(), Some("reviewer"));
    assert_eq!(runs[1].alias, "fix-tests");
    assert_eq!(runs[1].name, "Fix tests");
    assert_eq!(runs[1].definition_name, None, "{r:?}");
    assert_eq!(runs[2].definition_name, None, "{r:?}");
    let mut specs = Vec::new();
    for _ in 0..3 {
        let (k, _) = child(&mut s).await;
        specs.push(k.spec.clone());
    }
    // The definition's child is restricted; the general ones are not, and no file was read
    // through the path-like name.
    let restricted = specs.iter().filter(|sp| sp.tools.is_some()).count();
    assert_eq!(restricted, 1);
    for sp in &specs {
        if let Some(f) = &sp.system_prompt_file {
            assert!(!std::fs::read_to_string(f).unwrap().contains("EVIL"));
        }
    }
}

#[tokio::test]
async fn steer_is_strict_injected_into_the_running_turn_or_conflict() {
    let mut s = start(|_| {}).await;
    let (pid, _prt, mut wire, _c) = parent(&mut s).await;
    let r = wire
        .ok::<kind::SubagentCreate>(create_one(&pid, TASK))
        .await;
    let run_id = r.runs[0].run_id.clone();
    let (mut k, _) = child(&mut s).await;
    k.emit(json!({"type":"turn_start","turn_id":"turn-7"}))
        .await;
    run_changed(&mut wire, &run_id, RunState::Active).await;

    // The Runtime takes the message into the turn: `injected`.
    let steer = || {
        Command::SubagentSteer(SubagentSteer {
            parent_agent_id: pid.clone(),
            target: "general".into(),
            message: "focus".into(),
        })
    };
    let (resp, ()) = tokio::join!(wire.call(steer()), async {
        let cmd = k.next_cmd().await;
        let st = as_steer(&cmd);
        assert_eq!(st.strict, Some(true), "{cmd:?}");
        assert_eq!(st.turn_id.as_deref(), Some("turn-7"), "{cmd:?}");
        assert_eq!(st.message, "focus");
        k.answer(&cmd, Some(json!({"status":"injected","turn_id":"turn-7"})))
            .await;
    });
    let injected = data_of::<kind::SubagentSteer>(resp);
    assert_eq!(injected.status, SteerOutcome::Injected);
    assert_eq!(injected.run_id, run_id);
    assert_eq!(injected.turn_id.as_deref(), Some("turn-7"));
    assert!(!injected.correlation_id.is_empty());

    // The turn ends before its next provider boundary: the Runtime drops the message and
    // answers `conflict`; so does the daemon.
    let (resp, ()) = tokio::join!(wire.call(steer()), async {
        let cmd = k.next_cmd().await;
        as_steer(&cmd);
        k.answer(&cmd, Some(json!({"status":"conflict","turn_id":"turn-7"})))
            .await;
        finish_turn_end(&mut k).await;
    });
    assert_eq!(
        data_of::<kind::SubagentSteer>(resp).status,
        SteerOutcome::Conflict
    );
    run_changed(&mut wire, &run_id, RunState::Completed).await;

    // Once the run ended the steer is refused outright, and the child hears nothing.
    assert_eq!(wire.fails(steer()).await, ErrorCode::Conflict);
}

/// Ends turn `turn-7` with a final text.
async fn finish_turn_end(rt: &mut Fake) {
    rt.emit(json!({"type":"message_complete","message_id":"m1","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"done"}]}})).await;
    rt.emit(json!({"type":"turn_end","turn_id":"turn-7"})).await;
}

/// A person's connection attached interactively to `agent_id` (the fake answers the sync).
async fn person(s: &Setup, k: &mut Fake, agent_id: &str) -> Wire {
    let mut p = Wire::hello(&s.home).await;
    let attach = Command::AgentAttach(AgentAttach {
        agent_id: agent_id.to_string(),
        role: Some(AttachRole::Interactive),
    });
    let (r, ()) = tokio::join!(p.call(attach), async {
        let cmd = k.next_cmd().await;
        assert!(matches!(cmd.command, Command::RequestSync(_)), "{cmd:?}");
        k.emit(sync_json("streaming")).await;
        k.answer(&cmd, None).await;
    });
    data_of::<kind::AgentAttach>(r);
    p
}

#[tokio::test]
async fn a_persons_steer_and_abort_to_a_leased_child_go_through_the_coordinator() {
    let mut s = start(|_| {}).await;
    let (pid, mut prt, mut wire, _c) = parent(&mut s).await;
    let r = wire
        .ok::<kind::SubagentCreate>(create_one(&pid, TASK))
        .await;
    let run_id = r.runs[0].run_id.clone();
    let (mut k, _) = child(&mut s).await;
    let kid = k.spec.agent_id.clone();
    k.emit(json!({"type":"turn_start","turn_id":"turn-3"}))
        .await;
    run_changed(&mut wire, &run_id, RunState::Active).await;
    let mut p = person(&s, &mut k, &kid).await;

    // A direct prompt stays refused, even as a steering prompt.
    let steering = Command::Prompt(Prompt {
        agent_id: Some(kid.clone()),
        message: "hi".into(),
        images: None,
        streaming_behavior: Some(StreamingBehavior::Steer),
    });
    for cmd in [prompt(&kid, "hi"), steering] {
        assert_eq!(p.fails(cmd).await, ErrorCode::Conflict);
    }

    // The person's steer reaches the child as a strict steer into its turn.
    let steer = |message: &str| {
        Command::Steer(Steer {
            agent_id: Some(kid.clone()),
            message: message.to_string(),
            images: None,
            strict: None,
            turn_id: None,
        })
    };
    let (r, ()) = tokio::join!(p.call(steer("look at tests too")), async {
        let cmd = k.next_cmd().await;
        let st = as_steer(&cmd);
        assert_eq!(st.strict, Some(true));
        assert_eq!(st.turn_id.as_deref(), Some("turn-3"));
        k.answer(&cmd, Some(json!({"status":"injected","turn_id":"turn-3"})))
            .await;
    });
    // Answered with the `subagent.steer` data.
    let injected = data_of::<kind::SubagentSteer>(r);
    assert_eq!(injected.status, SteerOutcome::Injected);
    assert_eq!(injected.run_id, run_id);
    // Recorded against the run, for the parent to see.
    let st = wire
        .ok::<kind::SubagentStatus>(status(&pid, Some(&[&run_id])))
        .await;
    let run = st.agents[0].run.clone().unwrap();
    assert_eq!(run.steers, Some(1), "{st:?}");
    let last = run.last_action.unwrap();
    assert_eq!(last.action, RunActionKind::Steer);
    assert_eq!(last.by, RunActor::Client);
    assert_eq!(last.status, Some(SteerOutcome::Injected));

    // A steer the turn does not take fails for the person, and is recorded too.
    let (r, ()) = tokio::join!(p.call(steer("too late")), async {
        let cmd = k.next_cmd().await;
        k.answer(&cmd, Some(json!({"status":"conflict","turn_id":"turn-3"})))
            .await;
    });
    assert_eq!(code_of(&r), ErrorCode::Conflict);
    let st = wire
        .ok::<kind::SubagentStatus>(status(&pid, Some(&[&run_id])))
        .await;
    let run = st.agents[0].run.clone().unwrap();
    assert_eq!(run.steers, Some(1), "{st:?}");
    assert_eq!(
        run.last_action.unwrap().status,
        Some(SteerOutcome::Conflict)
    );

    // The person's abort cancels the run on the coordinator's path.
    let abort = Command::Abort(AgentTarget {
        agent_id: Some(kid.clone()),
    });
    p.ok::<kind::Abort>(abort).await;
    let cmd = k.next_cmd().await;
    assert!(matches!(cmd.command, Command::Abort(_)), "{cmd:?}");
    k.answer(&cmd, None).await;
    k.emit(json!({"type":"turn_end","turn_id":"turn-3"})).await;
    run_changed(&mut wire, &run_id, RunState::Cancelled).await;
    let w = wire
        .ok::<kind::SubagentWait>(wait(&pid, &[&run_id], None, Some(0.0)))
        .await;
    let run = &w.runs[0];
    assert_eq!(run.state, RunState::Cancelled, "{w:?}");
    assert!(run.error.as_deref().unwrap().contains("person"), "{w:?}");
    let last = run.last_action.clone().unwrap();
    assert_eq!(last.action, RunActionKind::Abort);
    assert_eq!(last.by, RunActor::Client);
    assert_eq!(run.steers, Some(1));
    // The parent hears of it in its report.
    let report = prt.next_cmd().await;
    assert!(
        as_prompt(&report).message.contains("cancelled"),
        "{report:?}"
    );
    // The record is durable (a file the daemon owns, read as JSON).
    let job_id = &run.job_id;
    let rec: Value =
        serde_json::from_slice(&std::fs::read(s.home.join(format!("jobs/{job_id}.json"))).unwrap())
            .unwrap();
    assert_eq!(rec["runs"][0]["last_action"]["by"], "client");
    assert_eq!(rec["runs"][0]["steers"], 1);
    // No longer leased: the child is the person's again.
    let (r, ()) = tokio::join!(p.call(prompt(&kid, "mine now")), async {
        let cmd = k.next_cmd().await;
        assert_eq!(as_prompt(&cmd).message, "mine now", "{cmd:?}");
        k.answer(&cmd, None).await;
    });
    assert!(r.success, "{r:?}");
}

#[tokio::test]
async fn a_waiter_that_disconnects_stops_waiting_and_the_run_goes_on() {
    let mut s = start(|_| {}).await;
    let (pid, prt, mut wire, _c) = parent(&mut s).await;
    let r = wire
        .ok::<kind::SubagentCreate>(create_one(&pid, TASK))
        .await;
    let run_id = r.runs[0].run_id.clone();
    let (mut k, _) = child(&mut s).await;
    // A second connection of the parent's Runtime waits forever, then goes away.
    let mut waiter = Wire::hello(&s.home).await;
    let auth = waiter.runtime_auth(&pid, &prt.spec.token).await;
    assert!(auth.success, "{auth:?}");
    let line =
        shard_protocol::to_line(&ClientMessage::new("w", wait(&pid, &[&run_id], None, None)));
    waiter.w.write_all(&line).await.unwrap();
    drop(waiter);
    // The run is untouched: it completes, and a new wait sees it.
    finish_turn(&mut k, "still done").await;
    run_changed(&mut wire, &run_id, RunState::Completed).await;
    let w = wire
        .ok::<kind::SubagentWait>(wait(&pid, &[&run_id], None, None))
        .await;
    assert_eq!(w.runs[0].final_text.as_deref(), Some("still done"), "{w:?}");
}
