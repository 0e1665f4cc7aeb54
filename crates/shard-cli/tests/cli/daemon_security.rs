//! The daemon's own defences, end to end with the real `shard daemon` and `shard agent`:
//! a tool process cannot use the daemon, the daemon's death stops its work
//! and a restarted daemon restores, and `agent.create` refuses settings no
//! Runtime would accept.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use shard_protocol::Event;
use shard_protocol::command::AttachRole;

use super::daemon::*;

/// True while `pid` exists and is not a zombie.
fn process_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// Allows the next permission request of an attached interactive client.
async fn allow_next(c: &shard_client::Client, e: &mut shard_client::AgentEvents, id: &str) {
    let (ev, _) = until(e, |e| matches!(e, Event::PermissionRequest(_))).await;
    let Event::PermissionRequest(req) = ev else {
        unreachable!()
    };
    let allow = json!({"type":"permission_response","agent_id":id,"request_id":req.request_id,"decision":"allow"});
    c.call(serde_json::from_value(allow).unwrap())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_process_cannot_use_the_daemon() {
    let h = home();
    let d = Daemon::start(h.path(), &[]);
    let cmd = format!(
        "SHARD_HOME='{}' '{}' ls; echo \"exit=$?\"",
        h.path().display(),
        env!("CARGO_BIN_EXE_shard")
    );
    let s = script(h.path(), "s.json", bash_turns(&cmd));
    let c = d.client().await;
    let id = c.create(create_req(h.path(), &s)).await.unwrap();
    let (_, mut e) = c.attach(&id, AttachRole::Interactive).await.unwrap();
    c.call(prompt(&id, "list the agents")).await.unwrap();
    allow_next(&c, &mut e, &id).await;
    let (ev, _) = until(&mut e, |e| matches!(e, Event::ToolResult(_))).await;
    let Event::ToolResult(t) = ev else {
        unreachable!()
    };
    let out = serde_json::to_string(&t.content).unwrap();
    assert!(
        !out.contains(&id),
        "the tool process listed the agents: {out}"
    );
    assert!(!out.contains("exit=0"), "`shard ls` succeeded: {out}");
    // Either the daemon refused the tool process, and says why, or the tool could not
    // reach the daemon at all: where the binary under test lives in the host's /tmp (a
    // clone under /tmp), the sandbox's private /tmp hides it and bash cannot run it (127);
    // where the socket is covered, `shard ls` finds no daemon.
    let log = std::fs::read_to_string(h.path().join("daemon-test.log")).unwrap();
    let refused = log.contains("tool processes may not use the daemon");
    let unreachable = out.contains("exit=127") || out.contains("no daemon running");
    assert!(
        refused || unreachable,
        "neither refused by the daemon nor kept from it: {out}"
    );
    if !refused {
        eprintln!("the tool process cannot reach the daemon at all: {out}");
    }
    // The daemon is fine and the person's own client still works.
    assert_eq!(c.list().await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_the_daemon_stops_its_runtimes_and_a_new_daemon_restores() {
    let h = home();
    let s = script(
        h.path(),
        "s.json",
        json!([
            {"steps":[{"text":"first answer"}]},
            {"steps":[{"tool_call":{"id":"call-1","name":"bash","args":{"command":"sleep 300 & sleep 301; wait"}}}]},
            {"steps":[{"text":"done"}]}
        ]),
    );
    let mut d = Daemon::start(h.path(), &[]);
    let c = d.client().await;
    let id = c.create(create_req(h.path(), &s)).await.unwrap();
    let (_, mut e) = c.attach(&id, AttachRole::Interactive).await.unwrap();
    c.call(prompt(&id, "one")).await.unwrap();
    until(&mut e, |e| matches!(e, Event::TurnEnd(_))).await;
    c.call(prompt(&id, "two")).await.unwrap();
    allow_next(&c, &mut e, &id).await;
    until(&mut e, |e| matches!(e, Event::ToolCall(_))).await;
    let state = h.path().join("runtime").join(format!("{id}.json"));
    let mut groups = Vec::new();
    eventually("the runtime to record the tool's process group", || {
        let v: Value =
            serde_json::from_slice(&std::fs::read(&state).unwrap_or_default()).unwrap_or_default();
        groups = v["process_groups"].as_array().cloned().unwrap_or_default();
        !groups.is_empty()
    })
    .await;
    let pgid = groups[0].as_i64().unwrap();
    let runtime = runtime_pid(h.path(), &id);
    assert!(process_alive(runtime) && group_alive(pgid));
    drop(e);
    drop(c);
    d.child.kill().unwrap(); // SIGKILL: the daemon gets no say
    d.wait_exit();
    // Its Runtime sees end of input, aborts the turn (killing the tool) and exits.
    eventually("the orphaned runtime to exit", || !process_alive(runtime)).await;
    eventually("the tool's processes to die", || !group_alive(pgid)).await;
    // A new daemon restores the agent on the first attach: no CONFLICT.
    let d2 = Daemon::start(h.path(), &[]);
    let c2 = d2.client().await;
    let (_, mut e2) = c2.attach(&id, AttachRole::Interactive).await.unwrap();
    let Event::Sync(sync) = next(&mut e2).await else {
        panic!("sync first")
    };
    let texts = window_texts(&sync);
    assert!(texts.iter().any(|t| t == "first answer"), "{texts:?}");
}

/// The fatal error message `shard agent --check` prints for these flags, with the
/// provider keys removed from its environment.
fn check_message(home: &std::path::Path, flags: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_shard"))
        .args(["agent", "--check", "--cwd"])
        .arg(home)
        .args(flags)
        .env("SHARD_HOME", home)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(!out.status.success(), "{flags:?} passed the check");
    crate::harness::events_of(&out.stdout)
        .iter()
        .find_map(crate::harness::pick::error)
        .map(|e| e.message)
        .unwrap()
}

/// `agent.create` validates in the daemon's process (no `shard agent --check` child),
/// and refuses exactly what the Runtime's own check refuses, with its words; the keys it
/// sees are the daemon's, which its Runtimes inherit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_create_refuses_an_unknown_mode_or_provider_and_creates_nothing() {
    let h = home();
    let keyless = [("ANTHROPIC_API_KEY", None), ("OPENAI_API_KEY", None)];
    let d = Daemon::start_with_env(h.path(), &[], &keyless);
    let s = script(h.path(), "s.json", json!([]));
    let c = d.client().await;
    for (bad, flags) in [
        (
            json!({"mode":"bogus"}),
            vec!["--provider", "scripted", "--script", &s, "--mode", "bogus"],
        ),
        (
            json!({"provider":"nonexistent-provider","model":"x"}),
            vec!["--provider", "nonexistent-provider", "--model", "x"],
        ),
        (
            json!({"provider":"anthropic","model":"claude-haiku-4-5"}),
            vec!["--provider", "anthropic", "--model", "claude-haiku-4-5"],
        ),
    ] {
        let mut req = serde_json::to_value(create_req(h.path(), &s)).unwrap();
        for (k, v) in bad.as_object().unwrap() {
            req[k] = v.clone();
        }
        req["type"] = json!("agent.create");
        let r = c
            .request(serde_json::from_value(req).unwrap())
            .await
            .unwrap();
        assert!(!r.success, "{bad} was accepted");
        let err = r.error.unwrap();
        assert_eq!(
            err.code.as_str(),
            "INVALID_REQUEST",
            "{bad}: {}",
            err.message
        );
        assert_eq!(err.message, check_message(h.path(), &flags), "{bad}");
    }
    assert!(c.list().await.unwrap().is_empty(), "nothing was created");
    let manifests = std::fs::read_dir(h.path().join("manifests")).map_or(0, |r| r.count());
    assert_eq!(manifests, 0);
    // A good one still works.
    c.create(create_req(h.path(), &s)).await.unwrap();
    drop(c);
    drop(d);

    // With the key in the daemon's environment the same anthropic agent is accepted
    // (its Runtime starts; no model is called before a prompt).
    let h = home();
    let d = Daemon::start_with_env(h.path(), &[], &[("ANTHROPIC_API_KEY", Some("sk-ant-x"))]);
    let c = d.client().await;
    let mut req = serde_json::to_value(create_req(h.path(), &s)).unwrap();
    req["provider"] = json!("anthropic");
    req["model"] = json!("claude-haiku-4-5");
    c.create(serde_json::from_value(req).unwrap())
        .await
        .unwrap();
}

/// A real orphan: outside the sandbox, a tool detaches with `setsid -f`
/// (new session, its parent gone, adopted by the daemon as subreaper), waits until the
/// daemon is its parent, then tries to list the agents and to kill the one that started
/// it. The peer check refuses both; the agent is untouched; and the orphan does not
/// outlive its Runtime: the daemon kills adopted processes that left its session when a
/// generation ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_orphan_cannot_use_the_daemon_and_dies_with_its_runtime() {
    let h = home();
    // Inside the sandbox the orphan would die with the call (PID namespace); with it off
    // the socket is reachable and only the daemon's own checks stand.
    std::fs::write(h.path().join("config.toml"), "[sandbox]\nmode = \"off\"\n").unwrap();
    let d = Daemon::start(h.path(), &[]);
    let orphan_sh = h.path().join("orphan.sh");
    let cmd = format!("setsid -f sh '{}'; echo detached", orphan_sh.display());
    let s = script(h.path(), "s.json", bash_turns(&cmd));
    let c = d.client().await;
    let id = c.create(create_req(h.path(), &s)).await.unwrap();
    let out = h.path().join("orphan.out");
    let shard = env!("CARGO_BIN_EXE_shard");
    let home_dir = h.path().display();
    let dpid = d.child.id();
    std::fs::write(
        &orphan_sh,
        format!(
            r#"o='{out}.part'
echo "pid $$" > "$o"
n=0
while [ "$(cut -d' ' -f4 /proc/$$/stat)" != {dpid} ] && [ $n -lt 2000 ]; do n=$((n+1)); sleep 0.01; done
echo "ppid $(cut -d' ' -f4 /proc/$$/stat) sid $(cut -d' ' -f6 /proc/$$/stat)" >> "$o"
SHARD_HOME='{home_dir}' '{shard}' ls >> "$o" 2>&1; echo "ls=$?" >> "$o"
SHARD_HOME='{home_dir}' '{shard}' kill --force {id} >> "$o" 2>&1; echo "kill=$?" >> "$o"
mv "$o" '{out}'
exec sleep 300
"#,
            out = out.display()
        ),
    )
    .unwrap();
    let (_, mut e) = c.attach(&id, AttachRole::Interactive).await.unwrap();
    c.call(prompt(&id, "detach")).await.unwrap();
    allow_next(&c, &mut e, &id).await;
    until(&mut e, |e| matches!(e, Event::TurnEnd(_))).await;
    eventually("the orphan to try the daemon", || out.exists()).await;
    let text = std::fs::read_to_string(&out).unwrap();
    let pid: i32 = text
        .lines()
        .find_map(|l| l.strip_prefix("pid "))
        .and_then(|p| p.trim().parse().ok())
        .unwrap();
    // It really was an orphan in its own session, adopted by the daemon.
    assert!(
        text.contains(&format!("ppid {dpid} sid {pid}")),
        "not adopted: {text}"
    );
    assert!(!text.contains("ls=0") && !text.contains("kill=0"), "{text}");
    // Refused as an adopted orphan (the CLI says only that no `hello` came; the daemon
    // logs why).
    let log = std::fs::read_to_string(h.path().join("daemon-test.log")).unwrap();
    assert!(
        log.contains(&format!(
            "descends from process {pid}, which the daemon adopted or started and which is not a runtime"
        )),
        "the daemon names the orphan"
    );
    // The agent it tried to kill is alive and idle; the daemon works for the person.
    let list = c.list().await.unwrap();
    assert_eq!(list.len(), 1);
    let runtime = runtime_pid(h.path(), &id);
    assert!(process_alive(runtime), "the orphan's kill went through");
    assert!(
        process_alive(pid),
        "the orphan is expected to run while its runtime does"
    );
    // Its Runtime ends: the orphan goes with it.
    let kill = json!({"type":"agent.kill","agent_id":id,"force":true});
    c.call(serde_json::from_value(kill).unwrap()).await.unwrap();
    eventually("the runtime to exit", || !process_alive(runtime)).await;
    eventually("the orphan to die with its runtime", || !process_alive(pid)).await;
}

/// A daemon socket another user serves (a `SHARD_HOME` on a shared folder, a squatter
/// after the daemon died) gets nothing from a client: `shard ls`, `shard attach` and the
/// terminal client refuse it with one line naming who serves it, and never fall back to
/// talking to it. The listener drops to `nobody` before `listen()`, so the kernel reports
/// that user for it.
#[test]
fn attack_a_daemon_socket_served_by_another_user_is_refused() {
    if nix::unistd::geteuid().as_raw() != 0 {
        crate::skip::skip("needs root to start a listener as another user");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o777)).unwrap();
    let listener = r#"
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o777)
os.setgid(65534)
os.setuid(65534)
s.listen(8)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    try:
        c.sendall(b'{"type":"hello","protocol_version":"0.1.0","server_version":"x","capabilities":[]}\n')
        got = c.recv(65536)
        if got:
            open("/tmp/shard-foreign-socket-got-" + str(os.getpid()), "ab").write(got)
    except OSError:
        pass
    c.close()
"#;
    let mut child = std::process::Command::new("python3")
        .args(["-c", listener, home.join("daemon.sock").to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut line = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let guard = Kill(child);
    assert_eq!(line.trim(), "ready");
    for args in [
        &["ls"][..],
        &["attach", "agent-x"][..],
        &["kill", "agent-x"][..],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_shard"))
            .args(args)
            .env("SHARD_HOME", &home)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {err}");
        assert!(
            err.contains("served by user id 65534") && err.contains("refusing"),
            "{args:?}: {err}"
        );
    }
    let got = format!("/tmp/shard-foreign-socket-got-{}", guard.0.id());
    assert!(
        !std::path::Path::new(&got).exists(),
        "a command reached the foreign socket"
    );
}
