//! Subagent jobs against fake Runtimes: `runtime.auth` as the parent's
//! identity, create/wait/status/stop, the child's prompt and events, the completion
//! report to the parent, durability across a daemon restart, and task-text privacy.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Value, json};
use shard_client::Client;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

const TASK: &str = "PRIVATE-TASK-7f3a: summarise the repository";

/// A raw socket client: lines in, JSON values out; events are kept for later checks.
struct Raw {
    lines: tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
    w: tokio::net::unix::OwnedWriteHalf,
    seen: Vec<Value>,
    n: u32,
}

impl Raw {
    async fn connect(home: &std::path::Path) -> Raw {
        let s = UnixStream::connect(home.join("daemon.sock")).await.unwrap();
        let (r, w) = s.into_split();
        let mut raw = Raw {
            lines: BufReader::new(r).lines(),
            w,
            seen: Vec::new(),
            n: 0,
        };
        assert_eq!(raw.line().await.unwrap()["type"], "hello");
        raw
    }
    async fn line(&mut self) -> Option<Value> {
        let l = tokio::time::timeout(T, self.lines.next_line())
            .await
            .expect("a line in time")
            .ok()??;
        let v: Value = serde_json::from_str(&l).unwrap();
        self.seen.push(v.clone());
        Some(v)
    }
    /// Sends a command with a fresh id and returns its response.
    async fn call(&mut self, mut cmd: Value) -> Value {
        self.n += 1;
        let id = format!("c{}", self.n);
        cmd["id"] = json!(id);
        self.w
            .write_all(format!("{cmd}\n").as_bytes())
            .await
            .unwrap();
        loop {
            let v = self.line().await.expect("a response before the end");
            if v["type"] == "response" && v["id"] == id {
                return v;
            }
        }
    }
    /// Waits for a `subagent_run_changed` to `state` for `run_id`.
    async fn run_changed(&mut self, run_id: &str, state: &str) {
        if self.seen.iter().any(|v| is_change(v, run_id, state)) {
            return;
        }
        loop {
            let v = self.line().await.expect("an event");
            if is_change(&v, run_id, state) {
                return;
            }
        }
    }
}

fn is_change(v: &Value, run_id: &str, state: &str) -> bool {
    v["type"] == "subagent_run_changed" && v["run_id"] == run_id && v["state"] == state
}

/// A parent agent and an authenticated Runtime connection acting for it.
async fn parent(s: &mut Setup) -> (String, Fake, Raw, Client) {
    let c = Client::connect_daemon(&s.home).await.unwrap();
    let (id, rt) = create(s, &c, None).await;
    let mut raw = Raw::connect(&s.home).await;
    let auth = json!({"type":"runtime.auth","agent_id":id,"token":rt.spec.token});
    let r = raw.call(auth).await;
    assert_eq!(r["success"], true, "{r}");
    (id, rt, raw, c)
}

/// The next child Runtime: ready, and the prompt it was sent (answered `accepted`).
async fn child(s: &mut Setup) -> (Fake, Value) {
    let mut rt = tokio::time::timeout(T, s.runtimes.recv())
        .await
        .unwrap()
        .unwrap();
    rt.ready().await;
    let cmd = rt.next_command().await;
    assert_eq!(cmd["type"], "prompt", "{cmd}");
    rt.emit(json!({"type":"response","id":cmd["id"],"command":"prompt","success":true}))
        .await;
    (rt, cmd)
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
    let (pid, mut prt, mut raw, _c) = parent(&mut s).await;
    let r = raw
        .call(json!({"type":"subagent.create","parent_agent_id":pid,"task":TASK}))
        .await;
    assert_eq!(r["success"], true, "{r}");
    let run = &r["data"]["runs"][0];
    assert_eq!(run["state"], "queued");
    assert_eq!(run["alias"], "general");
    let run_id = run["run_id"].as_str().unwrap().to_string();
    let job_id = r["data"]["job_id"].as_str().unwrap().to_string();
    // Committed before the answer.
    assert!(s.home.join(format!("jobs/{job_id}.json")).exists());

    let (mut crt, prompt) = child(&mut s).await;
    assert_eq!(prompt["message"], TASK);
    assert_eq!(crt.spec.parent_agent_id.as_deref(), Some(pid.as_str()));
    raw.run_changed(&run_id, "active").await;
    // A direct prompt to a leased child is refused (the lease guard).
    let mut other = Raw::connect(&s.home).await;
    let p = other
        .call(json!({"type":"prompt","agent_id":crt.spec.agent_id,"message":"hi"}))
        .await;
    assert_eq!(p["error"]["code"], "CONFLICT", "{p}");
    finish_turn(&mut crt, "the summary").await;
    raw.run_changed(&run_id, "completed").await;

    // The parent gets the completion report as a prompt (it is idle).
    let report = prt.next_command().await;
    assert_eq!(report["type"], "prompt", "{report}");
    let text = report["message"].as_str().unwrap();
    assert!(
        text.contains("the summary") && text.contains("completed"),
        "{text}"
    );
    assert!(!text.contains(TASK));
    prt.emit(json!({"type":"response","id":report["id"],"command":"prompt","success":true}))
        .await;

    let w = raw
        .call(
            json!({"type":"subagent.wait","parent_agent_id":pid,"handles":["GENERAL"],"timeout":0}),
        )
        .await;
    assert_eq!(w["data"]["timed_out"], false, "{w}");
    assert_eq!(w["data"]["aggregate_state"], "completed");
    assert_eq!(w["data"]["runs"][0]["final_text"], "the summary");
    assert_eq!(w["data"]["runs"][0]["usage"]["input"], 10);

    let st = raw
        .call(json!({"type":"subagent.status","parent_agent_id":pid}))
        .await;
    assert_eq!(st["data"]["jobs"][0]["job_id"], job_id.as_str());
    assert_eq!(st["data"]["jobs"][0]["state"], "completed");
    assert_eq!(st["data"]["agents"][0]["alias"], "general");

    // Task text: in the job record only, never on the wire.
    for v in raw.seen.iter().chain(other.seen.iter()) {
        assert!(!v.to_string().contains(TASK), "task text leaked: {v}");
    }
    let hits = grep_home(&s.home, TASK);
    assert!(
        hits.iter().all(|p| p.starts_with(s.home.join("jobs"))),
        "task text outside job records: {hits:?}"
    );
}

#[tokio::test]
async fn only_the_parents_authenticated_runtime_may_act_for_it() {
    let mut s = start(|_| {}).await;
    let (pid, _prt, mut raw, _c) = parent(&mut s).await;
    // A plain client.
    let mut plain = Raw::connect(&s.home).await;
    let r = plain
        .call(json!({"type":"subagent.create","parent_agent_id":pid,"task":TASK}))
        .await;
    assert_eq!(r["error"]["code"], "PERMISSION_DENIED", "{r}");
    let r = plain
        .call(json!({"type":"subagent.status","parent_agent_id":pid}))
        .await;
    assert_eq!(r["error"]["code"], "PERMISSION_DENIED");
    // The parent's runtime naming another parent (a forged parent_agent_id).
    let c = Client::connect_daemon(&s.home).await.unwrap();
    let (other_id, _ort) = create(&mut s, &c, None).await;
    let r = raw
        .call(json!({"type":"subagent.create","parent_agent_id":other_id,"task":TASK}))
        .await;
    assert_eq!(r["error"]["code"], "PERMISSION_DENIED", "{r}");
    // Another parent's job is NOT_FOUND, whatever handle names it.
    let mine = raw
        .call(json!({"type":"subagent.create","parent_agent_id":pid,"name":"general","task":TASK}))
        .await;
    let job_id = mine["data"]["job_id"].clone();
    let mut other_raw = Raw::connect(&s.home).await;
    let orth = _ort.spec.token.clone();
    let auth = json!({"type":"runtime.auth","agent_id":other_id,"token":orth});
    assert_eq!(other_raw.call(auth).await["success"], true);
    for h in [job_id.clone(), json!("general")] {
        let r = other_raw
            .call(json!({"type":"subagent.stop","parent_agent_id":other_id,"handle":h}))
            .await;
        assert_eq!(r["error"]["code"], "NOT_FOUND", "{r}");
    }
}

#[tokio::test]
async fn create_is_validated_whole_before_side_effects() {
    let mut s = start(|c| c.launch_limits.max_tasks = 2).await;
    let (pid, _prt, mut raw, _c) = parent(&mut s).await;
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
        let r = raw.call(cmd).await;
        assert_eq!(r["error"]["code"], "INVALID_REQUEST", "{b} → {r}");
    }
    assert_eq!(std::fs::read_dir(s.home.join("jobs")).unwrap().count(), 0);
}

#[tokio::test]
async fn a_parallel_batch_with_one_failure_and_a_stopped_chain() {
    let mut s = start(|_| {}).await;
    let (pid, _prt, mut raw, _c) = parent(&mut s).await;
    let tasks: Vec<Value> = (0..4)
        .map(|i| json!({"name":"general","task":format!("part {i}")}))
        .collect();
    let r = raw
        .call(json!({"type":"subagent.create","parent_agent_id":pid,"tasks":tasks,"strategy":"parallel"}))
        .await;
    assert_eq!(r["success"], true, "{r}");
    let aliases: Vec<_> = r["data"]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["alias"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(aliases, ["general", "general-2", "general-3", "general-4"]);
    let job_id = r["data"]["job_id"].as_str().unwrap().to_string();
    let mut kids = Vec::new();
    for _ in 0..4 {
        kids.push(child(&mut s).await);
    }
    // Children start concurrently: which one is "part 2" is known by its prompt.
    for (k, p) in kids.iter_mut() {
        let i = p["message"]
            .as_str()
            .unwrap()
            .trim_start_matches("part ")
            .to_string();
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
    let w = raw
        .call(json!({"type":"subagent.wait","parent_agent_id":pid,"handles":[job_id]}))
        .await;
    assert_eq!(w["data"]["timed_out"], false);
    assert_eq!(w["data"]["aggregate_state"], "mixed");
    let states: Vec<_> = w["data"]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["state"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(states, ["completed", "completed", "failed", "completed"]);

    // A chain: step 1's final text reaches step 2; stopping step 2 cancels step 3.
    let tasks: Vec<Value> = (0..3)
        .map(|i| json!({"name":"general","task":format!("step {i}")}))
        .collect();
    let r = raw
        .call(json!({"type":"subagent.create","parent_agent_id":pid,"tasks":tasks,"strategy":"chain"}))
        .await;
    let runs = r["data"]["runs"].as_array().unwrap().clone();
    let (mut k1, p1) = child(&mut s).await;
    assert_eq!(p1["message"], "step 0");
    // wait with timeout 0 while step 1 runs: a poll.
    let w = raw
        .call(json!({"type":"subagent.wait","parent_agent_id":pid,"handles":[runs[0]["run_id"]],"timeout":0}))
        .await;
    assert_eq!(w["data"]["timed_out"], true);
    finish_turn(&mut k1, "first result").await;
    let (mut k2, p2) = child(&mut s).await;
    assert!(p2["message"].as_str().unwrap().contains("first result"));
    k2.emit(json!({"type":"turn_start","turn_id":"turn-2"}))
        .await;
    raw.run_changed(runs[1]["run_id"].as_str().unwrap(), "active")
        .await;
    let stop = raw
        .call(json!({"type":"subagent.stop","parent_agent_id":pid,"handle":runs[1]["alias"]}))
        .await;
    assert_eq!(stop["success"], true, "{stop}");
    // The child is asked to abort, then its turn ends.
    let abort = k2.next_command().await;
    assert_eq!(abort["type"], "abort");
    k2.emit(json!({"type":"response","id":abort["id"],"command":"abort","success":true}))
        .await;
    k2.emit(json!({"type":"turn_end","turn_id":"turn-2"})).await;
    let w = raw
        .call(json!({"type":"subagent.wait","parent_agent_id":pid,"handles":[r["data"]["job_id"]],"mode":"all"}))
        .await;
    let states: Vec<_> = w["data"]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["state"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(states, ["completed", "cancelled", "cancelled"]);
}

#[tokio::test]
async fn wait_any_returns_on_the_first_end_and_relaunch_keeps_the_agent() {
    let mut s = start(|_| {}).await;
    let (pid, _prt, mut raw, _c) = parent(&mut s).await;
    let tasks: Vec<Value> = (0..2)
        .map(|i| json!({"name":"general","task":format!("t{i}")}))
        .collect();
    let r = raw
        .call(json!({"type":"subagent.create","parent_agent_id":pid,"tasks":tasks,"strategy":"parallel"}))
        .await;
    let (mut a, pa) = child(&mut s).await;
    let (mut b, _) = child(&mut s).await;
    // Children start concurrently: `a` is the one given "t0" (alias `general`).
    if pa["message"] != "t0" {
        std::mem::swap(&mut a, &mut b);
    }
    finish_turn(&mut a, "a done").await;
    let w = raw
        .call(json!({"type":"subagent.wait","parent_agent_id":pid,"handles":[r["data"]["job_id"]],"mode":"any"}))
        .await;
    assert_eq!(w["data"]["timed_out"], false);
    assert_eq!(w["data"]["aggregate_state"], "mixed");
    // Relaunch an active child: conflict; the finished one: same agent and alias.
    let busy = raw
        .call(json!({"type":"subagent.relaunch","parent_agent_id":pid,"target":"general-2","task":"again"}))
        .await;
    assert_eq!(busy["error"]["code"], "CONFLICT", "{busy}");
    let re = raw
        .call(json!({"type":"subagent.relaunch","parent_agent_id":pid,"target":"general","task":"again"}))
        .await;
    assert_eq!(re["success"], true, "{re}");
    assert_eq!(re["data"]["agent_id"], a.spec.agent_id.as_str());
    assert_eq!(re["data"]["alias"], "general");
    assert_ne!(re["data"]["job_id"], r["data"]["job_id"]);
    // The same Runtime (same session) gets the new task.
    let cmd = a.next_command().await;
    assert_eq!(cmd["type"], "prompt");
    assert_eq!(cmd["message"], "again");
}

#[tokio::test]
async fn after_a_daemon_restart_unfinished_runs_are_interrupted_and_relaunchable() {
    let mut s = start(|_| {}).await;
    let (pid, _prt, mut raw, _c) = parent(&mut s).await;
    let r = raw
        .call(json!({"type":"subagent.create","parent_agent_id":pid,"tasks":[{"name":"general","task":"x"},{"name":"general","task":"y"}],"strategy":"chain"}))
        .await;
    let job_id = r["data"]["job_id"].as_str().unwrap().to_string();
    let (_k, _) = child(&mut s).await;
    raw.run_changed(r["data"]["runs"][0]["run_id"].as_str().unwrap(), "active")
        .await;
    // The records as a crashed daemon leaves them, loaded by a new daemon on the same home.
    let record = std::fs::read(s.home.join(format!("jobs/{job_id}.json"))).unwrap();
    let home2 = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home2.path().join("jobs")).unwrap();
    std::fs::write(home2.path().join(format!("jobs/{job_id}.json")), &record).unwrap();
    for e in std::fs::read_dir(s.home.join("agents")).unwrap().flatten() {
        std::fs::create_dir_all(home2.path().join("agents")).unwrap();
        std::fs::copy(e.path(), home2.path().join("agents").join(e.file_name())).unwrap();
    }
    let (tx, mut rx2) = tokio::sync::mpsc::unbounded_channel();
    let cfg = shard_daemon::DaemonConfig::new(home2.path().to_path_buf());
    let d = shard_daemon::Daemon::bind_with_launcher(cfg, std::sync::Arc::new(FakeLauncher(tx)))
        .await
        .unwrap();
    tokio::spawn(d.run());
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
    let rep = prt2.next_command().await;
    assert_eq!(rep["type"], "prompt", "{rep}");
    assert!(rep["message"].as_str().unwrap().contains("interrupted"));
    // Its Runtime authenticates and relaunches the interrupted child.
    let mut raw2 = Raw::connect(home2.path()).await;
    let auth = json!({"type":"runtime.auth","agent_id":pid,"token":prt2.spec.token});
    assert_eq!(raw2.call(auth).await["success"], true);
    let re = raw2
        .call(json!({"type":"subagent.relaunch","parent_agent_id":pid,"target":"general","task":"resume"}))
        .await;
    assert_eq!(re["success"], true, "{re}");
    let mut k = tokio::time::timeout(T, rx2.recv()).await.unwrap().unwrap();
    k.ready().await;
    assert_eq!(k.next_command().await["message"], "resume");
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
    let (pid, _prt, mut raw, _c) = parent(&mut s).await;
    write_definition(
        &s.home,
        "reviewer",
        "name: reviewer\ndescription: Reviews diffs\ntools: read, grep",
    );
    let r = raw
        .call(
            json!({"type":"subagent.create","parent_agent_id":pid,"name":"reviewer","task":"look"}),
        )
        .await;
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["data"]["runs"][0]["display_name"], "Reviews diffs");
    assert_eq!(r["data"]["runs"][0]["alias"], "reviewer");
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
    let (pid, _prt, mut raw, _c) = parent(&mut s).await;
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
    let r = raw
        .call(
            json!({"type":"subagent.create","parent_agent_id":pid,"strategy":"parallel",
            "tasks":[{"name":"reviewer","task":"a"},{"name":"Fix tests","task":"b"},
                     {"name":"../evil","task":"c"}]}),
        )
        .await;
    assert_eq!(r["success"], true, "{r}");
    let runs = r["data"]["runs"].as_array().unwrap();
    assert_eq!(runs[0]["definition_name"], "reviewer");
    assert_eq!(runs[1]["alias"], "fix-tests");
    assert_eq!(runs[1]["name"], "Fix tests");
    assert!(runs[1].get("definition_name").is_none(), "{r}");
    assert!(runs[2].get("definition_name").is_none(), "{r}");
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
    let (pid, _prt, mut raw, _c) = parent(&mut s).await;
    let r = raw
        .call(json!({"type":"subagent.create","parent_agent_id":pid,"task":TASK}))
        .await;
    let run_id = r["data"]["runs"][0]["run_id"].as_str().unwrap().to_string();
    let (mut k, _) = child(&mut s).await;
    k.emit(json!({"type":"turn_start","turn_id":"turn-7"}))
        .await;
    raw.run_changed(&run_id, "active").await;

    // The Runtime takes the message into the turn: `injected`.
    let steer =
        json!({"type":"subagent.steer","parent_agent_id":pid,"target":"general","message":"focus"});
    let (resp, ()) = tokio::join!(raw.call(steer.clone()), async {
        let cmd = k.next_command().await;
        assert_eq!(cmd["type"], "steer", "{cmd}");
        assert_eq!(cmd["strict"], true, "{cmd}");
        assert_eq!(cmd["turn_id"], "turn-7", "{cmd}");
        assert_eq!(cmd["message"], "focus");
        k.emit(
            json!({"type":"response","id":cmd["id"],"command":"steer","success":true,
                      "data":{"status":"injected","turn_id":"turn-7"}}),
        )
        .await;
    });
    assert_eq!(resp["data"]["status"], "injected", "{resp}");
    assert_eq!(resp["data"]["run_id"], run_id.as_str());
    assert_eq!(resp["data"]["turn_id"], "turn-7");
    assert!(resp["data"]["correlation_id"].is_string());

    // The turn ends before its next provider boundary: the Runtime drops the message and
    // answers `conflict`; so does the daemon.
    let (resp, ()) = tokio::join!(raw.call(steer.clone()), async {
        let cmd = k.next_command().await;
        assert_eq!(cmd["type"], "steer", "{cmd}");
        k.emit(
            json!({"type":"response","id":cmd["id"],"command":"steer","success":true,
                      "data":{"status":"conflict","turn_id":"turn-7"}}),
        )
        .await;
        finish_turn_end(&mut k).await;
    });
    assert_eq!(resp["data"]["status"], "conflict", "{resp}");
    raw.run_changed(&run_id, "completed").await;

    // Once the run ended the steer is refused outright, and the child hears nothing.
    let late = raw.call(steer).await;
    assert_eq!(late["error"]["code"], "CONFLICT", "{late}");
}

/// Ends turn `turn-7` with a final text.
async fn finish_turn_end(rt: &mut Fake) {
    rt.emit(json!({"type":"message_complete","message_id":"m1","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"done"}]}})).await;
    rt.emit(json!({"type":"turn_end","turn_id":"turn-7"})).await;
}

/// A person's connection attached interactively to `agent_id` (the fake answers the sync).
async fn person(s: &Setup, k: &mut Fake, agent_id: &str) -> Raw {
    let mut p = Raw::connect(&s.home).await;
    let attach = json!({"type":"agent.attach","agent_id":agent_id,"role":"interactive"});
    let (r, ()) = tokio::join!(p.call(attach), async {
        let cmd = k.next_command().await;
        assert_eq!(cmd["type"], "request_sync", "{cmd}");
        k.emit(sync_json("streaming")).await;
        k.emit(json!({"type":"response","id":cmd["id"],"command":"request_sync","success":true}))
            .await;
    });
    assert_eq!(r["success"], true, "{r}");
    p
}

#[tokio::test]
async fn a_persons_steer_and_abort_to_a_leased_child_go_through_the_coordinator() {
    let mut s = start(|_| {}).await;
    let (pid, mut prt, mut raw, _c) = parent(&mut s).await;
    let r = raw
        .call(json!({"type":"subagent.create","parent_agent_id":pid,"task":TASK}))
        .await;
    let run_id = r["data"]["runs"][0]["run_id"].as_str().unwrap().to_string();
    let (mut k, _) = child(&mut s).await;
    let kid = k.spec.agent_id.clone();
    k.emit(json!({"type":"turn_start","turn_id":"turn-3"}))
        .await;
    raw.run_changed(&run_id, "active").await;
    let mut p = person(&s, &mut k, &kid).await;

    // A direct prompt stays refused, even as a steering prompt.
    for prompt in [
        json!({"type":"prompt","agent_id":kid,"message":"hi"}),
        json!({"type":"prompt","agent_id":kid,"message":"hi","streaming_behavior":"steer"}),
    ] {
        let r = p.call(prompt).await;
        assert_eq!(r["error"]["code"], "CONFLICT", "{r}");
    }

    // The person's steer reaches the child as a strict steer into its turn.
    let steer = json!({"type":"steer","agent_id":kid,"message":"look at tests too"});
    let (r, ()) = tokio::join!(p.call(steer), async {
        let cmd = k.next_command().await;
        assert_eq!(cmd["type"], "steer", "{cmd}");
        assert_eq!(cmd["strict"], true);
        assert_eq!(cmd["turn_id"], "turn-3");
        k.emit(
            json!({"type":"response","id":cmd["id"],"command":"steer","success":true,
                      "data":{"status":"injected","turn_id":"turn-3"}}),
        )
        .await;
    });
    assert_eq!(r["data"]["status"], "injected", "{r}");
    assert_eq!(r["data"]["run_id"], run_id.as_str());
    // Recorded against the run, for the parent to see.
    let st = raw
        .call(json!({"type":"subagent.status","parent_agent_id":pid,"targets":[run_id]}))
        .await;
    let run = &st["data"]["agents"][0]["run"];
    assert_eq!(run["steers"], 1, "{st}");
    assert_eq!(run["last_action"]["action"], "steer");
    assert_eq!(run["last_action"]["by"], "client");
    assert_eq!(run["last_action"]["status"], "injected");

    // A steer the turn does not take fails for the person, and is recorded too.
    let steer = json!({"type":"steer","agent_id":kid,"message":"too late"});
    let (r, ()) = tokio::join!(p.call(steer), async {
        let cmd = k.next_command().await;
        k.emit(
            json!({"type":"response","id":cmd["id"],"command":"steer","success":true,
                      "data":{"status":"conflict","turn_id":"turn-3"}}),
        )
        .await;
    });
    assert_eq!(r["error"]["code"], "CONFLICT", "{r}");
    let st = raw
        .call(json!({"type":"subagent.status","parent_agent_id":pid,"targets":[run_id]}))
        .await;
    let run = &st["data"]["agents"][0]["run"];
    assert_eq!(run["steers"], 1, "{st}");
    assert_eq!(run["last_action"]["status"], "conflict");

    // The person's abort cancels the run on the coordinator's path.
    let r = p.call(json!({"type":"abort","agent_id":kid})).await;
    assert_eq!(r["success"], true, "{r}");
    let cmd = k.next_command().await;
    assert_eq!(cmd["type"], "abort", "{cmd}");
    k.emit(json!({"type":"response","id":cmd["id"],"command":"abort","success":true}))
        .await;
    k.emit(json!({"type":"turn_end","turn_id":"turn-3"})).await;
    raw.run_changed(&run_id, "cancelled").await;
    let w = raw
        .call(json!({"type":"subagent.wait","parent_agent_id":pid,"handles":[run_id],"timeout":0}))
        .await;
    let run = &w["data"]["runs"][0];
    assert_eq!(run["state"], "cancelled", "{w}");
    assert!(run["error"].as_str().unwrap().contains("person"), "{w}");
    assert_eq!(run["last_action"]["action"], "abort");
    assert_eq!(run["last_action"]["by"], "client");
    assert_eq!(run["steers"], 1);
    // The parent hears of it in its report.
    let report = prt.next_command().await;
    assert!(
        report["message"].as_str().unwrap().contains("cancelled"),
        "{report}"
    );
    // The record is durable.
    let job_id = r_job(&w);
    let rec: Value =
        serde_json::from_slice(&std::fs::read(s.home.join(format!("jobs/{job_id}.json"))).unwrap())
            .unwrap();
    assert_eq!(rec["runs"][0]["last_action"]["by"], "client");
    assert_eq!(rec["runs"][0]["steers"], 1);
    // No longer leased: the child is the person's again.
    let mine = json!({"type":"prompt","agent_id":kid,"message":"mine now"});
    let (r, ()) = tokio::join!(p.call(mine), async {
        let cmd = k.next_command().await;
        assert_eq!(cmd["message"], "mine now", "{cmd}");
        k.emit(json!({"type":"response","id":cmd["id"],"command":"prompt","success":true}))
            .await;
    });
    assert_eq!(r["success"], true, "{r}");
}

fn r_job(w: &Value) -> String {
    w["data"]["runs"][0]["job_id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_waiter_that_disconnects_stops_waiting_and_the_run_goes_on() {
    let mut s = start(|_| {}).await;
    let (pid, prt, mut raw, _c) = parent(&mut s).await;
    let r = raw
        .call(json!({"type":"subagent.create","parent_agent_id":pid,"task":TASK}))
        .await;
    let run_id = r["data"]["runs"][0]["run_id"].as_str().unwrap().to_string();
    let (mut k, _) = child(&mut s).await;
    // A second connection of the parent's Runtime waits forever, then goes away.
    let mut waiter = Raw::connect(&s.home).await;
    let auth = json!({"type":"runtime.auth","agent_id":pid,"token":prt.spec.token});
    assert_eq!(waiter.call(auth).await["success"], true);
    let wait = json!({"type":"subagent.wait","id":"w","parent_agent_id":pid,"handles":[run_id]});
    waiter
        .w
        .write_all(format!("{wait}\n").as_bytes())
        .await
        .unwrap();
    drop(waiter);
    // The run is untouched: it completes, and a new wait sees it.
    finish_turn(&mut k, "still done").await;
    raw.run_changed(&run_id, "completed").await;
    let w = raw
        .call(json!({"type":"subagent.wait","parent_agent_id":pid,"handles":[run_id]}))
        .await;
    assert_eq!(w["data"]["runs"][0]["final_text"], "still done", "{w}");
}
