//! Subagent jobs end to end: a real daemon, a parent Runtime whose scripted
//! model calls the `subagent` tool, a child whose permission request a client attached
//! to the parent answers, and the completion report arriving as the parent's next turn.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use shard_protocol::command::AttachRole;
use shard_protocol::{Event, IncomingEvent};

use super::daemon::{
    Daemon, T, bash_turns, create_req, home, orchestrator_until, prompt, script, until,
};

const TASK: &str = "PRIVATE-TASK-e2e-91c4 list the files";

fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_model_delegates_and_gets_the_report() {
    let h = home();
    let d = Daemon::start(h.path(), &[]);
    let cs = script(h.path(), "c.json", bash_turns("echo child-output"));
    let ps = script(
        h.path(),
        "p.json",
        json!([
            {"steps":[{"tool_call":{"id":"call-1","name":"subagent",
                "args":{"action":"create","task":TASK,"model":cs}}}]},
            {"steps":[{"text":"launched"}]},
            {"steps":[{"text":"noted the report"}]}
        ]),
    );
    let a = d.client().await;
    let parent = a.create(create_req(h.path(), &ps)).await.unwrap();
    let (_, mut ev) = a.attach(&parent, AttachRole::Interactive).await.unwrap();
    a.call(prompt(&parent, "go")).await.unwrap();

    // The tool's result is the create response: a queued run with an alias.
    let (e, _) = until(&mut ev, |e| matches!(e, Event::ToolResult(_))).await;
    let Event::ToolResult(r) = e else {
        unreachable!()
    };
    let text = serde_json::to_string(&r).unwrap();
    assert!(text.contains("job-") && text.contains("general"), "{text}");
    assert!(!r.is_error, "{text}");

    // The child's bash permission request reaches the parent's client; it answers.
    // Delegated requests carry the child's agent_id, which no subscription of this client
    // names: the client hands them out with the orchestrator events.
    let e = orchestrator_until(&a, |e| matches!(e, Event::PermissionRequest(_))).await;
    let Event::PermissionRequest(req) = e else {
        unreachable!()
    };
    let child = req.agent_id.clone().expect("the child's agent_id");
    assert_ne!(child, parent);
    let allow = json!({"type":"permission_response","agent_id":child,
                       "request_id":req.request_id,"decision":"allow"});
    let r = a
        .request(serde_json::from_value(allow).unwrap())
        .await
        .unwrap();
    assert!(r.success, "{r:?}");

    // The report wakes the parent: a second turn, which the script answers.
    let (e, _) = until(&mut ev, |e| {
        matches!(e, Event::MessageComplete(m) if super::daemon::text_of(&m.message.content) == "noted the report")
    })
    .await;
    drop(e);
    until(&mut ev, |e| matches!(e, Event::TurnEnd(_))).await;

    // The parent's transcript holds the report with the child's final text and state.
    let sessions = h.path().join("sessions");
    let transcript: String = files_under(&sessions)
        .iter()
        .filter(|p| p.ends_with("session.jsonl"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .filter(|t| t.contains("noted the report"))
        .collect();
    assert!(transcript.contains("[subagent report]"), "{transcript}");
    assert!(transcript.contains("completed"));

    // Orchestrator broadcasts never carry the task text.
    let mut seen = Vec::new();
    while let Ok(Some(e)) =
        tokio::time::timeout(std::time::Duration::from_millis(200), a.next_event()).await
    {
        if let IncomingEvent::Known(e) = e {
            seen.push(serde_json::to_string(&e).unwrap());
        }
    }
    assert!(seen.iter().all(|s| !s.contains(TASK)));

    // The task text: in the job record and the two conversations, nowhere else (daemon
    // log at debug level, manifests, runtime state included).
    drop(d);
    let leaks: Vec<_> = files_under(h.path())
        .into_iter()
        .filter(|p| !p.starts_with(h.path().join("jobs")) && !p.starts_with(&sessions))
        .filter(|p| !p.ends_with("p.json"))
        .filter(|p| {
            std::fs::read(p)
                .map(|b| String::from_utf8_lossy(&b).contains(TASK))
                .unwrap_or(false)
        })
        .collect();
    assert!(leaks.is_empty(), "task text found in {leaks:?}");
    assert!(
        files_under(&h.path().join("jobs"))
            .iter()
            .any(|p| std::fs::read_to_string(p).unwrap().contains(TASK))
    );
    let _ = T;
}

/// Waits until a message whose text satisfies `pred` is in the conversation: in the
/// attach's `sync` (it came before) or a later `user_message`.
async fn until_text(ev: &mut shard_client::AgentEvents, pred: impl Fn(&str) -> bool) {
    use super::daemon::{text_of, window_texts};
    until(ev, |e| match e {
        Event::Sync(s) => window_texts(s).iter().any(|t| pred(t)),
        Event::UserMessage(m) => pred(&text_of(&m.message.content)),
        _ => false,
    })
    .await;
}

/// The first record under `SHARD_HOME/jobs` whose `pred` holds.
fn job_record(
    home: &std::path::Path,
    pred: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    files_under(&home.join("jobs"))
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .filter_map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).ok())
        .find(|v| pred(v))
        .expect("a matching job record")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_killed_mid_run_leaves_it_interrupted_and_relaunch_keeps_the_history() {
    use shard_protocol::jobs::RunState;
    const FIRST: &str = "FIRST-TASK-kill9 look around";
    const AGAIN: &str = "RELAUNCH-TASK-kill9 finish up";
    let h = home();
    let mut d = Daemon::start(h.path(), &[]);
    // The child's turn stays in its model call until the daemon dies.
    let cs = script(
        h.path(),
        "c.json",
        json!([{"steps":[{"delay_ms": 600000}]}]),
    );
    let ps = script(
        h.path(),
        "p.json",
        json!([
            {"steps":[{"tool_call":{"id":"call-1","name":"subagent","args":{
                "action":"create","strategy":"chain","model":cs,
                "tasks":[{"name":"general","task":FIRST},{"name":"general","task":"SECOND-STEP"}]}}}]},
            {"steps":[{"text":"launched"}]}
        ]),
    );
    let a = d.client().await;
    let parent = a.create(create_req(h.path(), &ps)).await.unwrap();
    let (_, mut ev) = a.attach(&parent, AttachRole::Interactive).await.unwrap();
    a.call(prompt(&parent, "go")).await.unwrap();
    let e = orchestrator_until(
        &a,
        |e| matches!(e, Event::SubagentRunChanged(c) if c.state == RunState::Active),
    )
    .await;
    let Event::SubagentRunChanged(step) = e else {
        unreachable!()
    };
    let job_id = step.job_id.clone();
    let child = step.agent_id.clone().unwrap();
    until(&mut ev, |e| matches!(e, Event::TurnEnd(_))).await;
    // The child's turn holds its task (a person may watch a leased child).
    let (_, mut cev) = a.attach(&child, AttachRole::Observer).await.unwrap();
    until_text(&mut cev, |t| t.contains(FIRST)).await;

    // SIGKILL: no shutdown path runs.
    d.child.kill().unwrap();
    d.wait_exit();
    drop(d);
    // What the Runtimes started after the restart will play.
    script(
        h.path(),
        "c.json",
        json!([{"steps":[{"text":"resumed-final"}]}]),
    );
    let mut turns = vec![
        json!({"steps":[{"tool_call":{"id":"call-2","name":"subagent","args":{
            "action":"relaunch","target":"general","task":AGAIN}}}]}),
    ];
    turns.extend((0..8).map(|_| json!({"steps":[{"text":"noted"}]})));
    script(h.path(), "p.json", json!(turns));

    let d = Daemon::start(h.path(), &[]);
    // Reconciled at start, before the first connection: the running step is
    // `interrupted`, the chain's next step `cancelled` (never replayed).
    let rec = job_record(h.path(), |v| v["job_id"] == job_id.as_str());
    assert_eq!(rec["runs"][0]["state"], "interrupted", "{rec}");
    assert_eq!(rec["runs"][1]["state"], "cancelled", "{rec}");
    assert!(rec["runs"][1]["started_at"].is_null(), "{rec}");

    // The reports wake the parent, whose model relaunches the child; the relaunched run's
    // own report arrives in the parent's conversation.
    let b = d.client().await;
    let (_, mut ev) = b.attach(&parent, AttachRole::Interactive).await.unwrap();
    until_text(&mut ev, |t| {
        t.contains("[subagent report]") && t.contains("resumed-final")
    })
    .await;
    let re = job_record(h.path(), |v| {
        v["relaunch"] == true && v["runs"][0]["agent_id"] == child.as_str()
    });
    assert_ne!(re["job_id"], job_id.as_str());
    assert_eq!(re["runs"][0]["state"], "completed", "{re}");
    assert_eq!(re["runs"][0]["alias"], "general");
    assert_eq!(re["runs"][0]["final_text"], "resumed-final");
    // The same conversation: the interrupted task is still in the child's session.
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(h.path().join(format!("manifests/{child}.json"))).unwrap(),
    )
    .unwrap();
    let session = manifest["session_id"].as_str().unwrap();
    let sessions: Vec<String> = files_under(&h.path().join("sessions"))
        .iter()
        .filter(|p| p.ends_with("session.jsonl") && p.to_string_lossy().contains(session))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert_eq!(sessions.len(), 1, "the child's one session");
    assert!(sessions[0].contains(AGAIN), "the relaunch ran in it");
    assert!(
        sessions[0].contains(FIRST),
        "the history before the crash is kept"
    );
    assert!(
        !sessions[0].contains("SECOND-STEP"),
        "the cancelled step never ran"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_toml_changes_the_launch_limits() {
    let h = home();
    std::fs::write(
        h.path().join("config.toml"),
        "[subagents]\nmax_tasks_per_job = 2\n",
    )
    .unwrap();
    let d = Daemon::start(h.path(), &[]);
    let tasks: Vec<_> = (0..3)
        .map(|i| json!({"name":"general","task":format!("part {i}")}))
        .collect();
    let ps = script(
        h.path(),
        "p.json",
        json!([
            {"steps":[{"tool_call":{"id":"call-1","name":"subagent",
                "args":{"action":"create","tasks":tasks,"strategy":"parallel"}}}]},
            {"steps":[{"text":"refused"}]}
        ]),
    );
    let a = d.client().await;
    let parent = a.create(create_req(h.path(), &ps)).await.unwrap();
    let (_, mut ev) = a.attach(&parent, AttachRole::Interactive).await.unwrap();
    a.call(prompt(&parent, "go")).await.unwrap();
    let (e, _) = until(&mut ev, |e| matches!(e, Event::ToolResult(_))).await;
    let Event::ToolResult(r) = e else {
        unreachable!()
    };
    let text = serde_json::to_string(&r).unwrap();
    assert!(r.is_error, "{text}");
    assert!(text.contains("at most 2 tasks per job"), "{text}");
    assert!(!h.path().join("jobs").exists() || files_under(&h.path().join("jobs")).is_empty());

    // A bad section stops the daemon before it listens.
    drop(d);
    std::fs::write(h.path().join("config.toml"), "[subagents]\nmax_depth = 0\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_shard"))
        .args(["daemon", "--port", "0"])
        .env("SHARD_HOME", h.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("max_depth must be at least 1"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_name_that_is_no_definition_makes_a_general_child_under_that_name() {
    let h = home();
    let d = Daemon::start(h.path(), &[]);
    // A project definition, so the batch mixes a definition and a plain label.
    let defs = h.path().join(".shard/agents");
    std::fs::create_dir_all(&defs).unwrap();
    std::fs::write(
        defs.join("reviewer.md"),
        "---\ndescription: Reviews diffs\n---\nYou review code.\n",
    )
    .unwrap();
    let cs = script(
        h.path(),
        "c.json",
        json!([{"steps":[{"text":"child done"}]}]),
    );
    let ps = script(
        h.path(),
        "p.json",
        json!([
            {"steps":[{"tool_call":{"id":"call-1","name":"subagent","args":{
                "action":"create","strategy":"parallel","model":cs,
                "tasks":[{"name":"reviewer","task":"review it"},
                         {"name":"docs writer","task":"write the docs"}]}}}]},
            {"steps":[{"text":"launched"}]},
            {"steps":[{"text":"noted"}]},
            {"steps":[{"text":"noted again"}]}
        ]),
    );
    let a = d.client().await;
    let parent = a.create(create_req(h.path(), &ps)).await.unwrap();
    let (_, mut ev) = a.attach(&parent, AttachRole::Interactive).await.unwrap();
    a.call(prompt(&parent, "go")).await.unwrap();
    let (e, _) = until(&mut ev, |e| matches!(e, Event::ToolResult(_))).await;
    let Event::ToolResult(r) = e else {
        unreachable!()
    };
    assert!(!r.is_error, "the whole job was accepted: {r:?}");
    let text = match &r.content {
        shard_protocol::types::ToolResultContent::Text { text } => text.clone(),
        other => panic!("{other:?}"),
    };
    let data: serde_json::Value = serde_json::from_str(&text).unwrap();
    let runs = data["runs"].as_array().unwrap();
    assert_eq!(runs[0]["alias"], "reviewer", "{data}");
    assert_eq!(runs[0]["definition_name"], "reviewer", "{data}");
    assert_eq!(runs[1]["alias"], "docs-writer", "{data}");
    assert!(
        runs[1].get("definition_name").is_none_or(|v| v.is_null()),
        "no definition: {data}"
    );
    let record = job_record(h.path(), |v| {
        v["runs"].as_array().is_some_and(|r| r.len() == 2)
    });
    let labelled = &record["runs"][1];
    assert_eq!(labelled["alias"], "docs-writer");
    assert!(labelled.get("definition_name").is_none_or(|v| v.is_null()));
    let _ = T;
}
