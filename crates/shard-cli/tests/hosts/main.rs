//! Agents on other hosts, end to end: the real `shard` daemon, a real OpenSSH server on
//! 127.0.0.1 started by the test (strict host-key checking against a generated
//! `known_hosts`), `shard agent --remote` at the far end, and clients over the daemon's
//! socket; plus the `command` launcher through a wrapper script (docs/hosts.md).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod pool;
#[path = "../../../../tests/support/skip.rs"]
mod skip;
mod sshd;
mod unavailable;
mod workspaces;
mod world;

use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use shard_client::{AgentEvents, Client};
use shard_protocol::IncomingEvent;
use shard_protocol::command::{AttachRole, Command};

use sshd::processes_with;
use world::{Daemon, World};

/// Generous: the machine is small and shared.
pub const T: Duration = Duration::from_secs(60);

/// The `shard` under test: the daemon, the far end and the line client.
pub const SHARD: &str = env!("CARGO_BIN_EXE_shard");
/// Stands in for a provider key: it must reach the Runtime's memory and nothing else.
pub const FAKE_KEY: &str = "sk-ant-hosts-test-3e1f9b0c7d";

fn prompt(agent: &str, text: &str) -> Command {
    serde_json::from_value(json!({"type":"prompt","agent_id":agent,"message":text})).unwrap()
}

/// The next event of `rx` matching `pred`, as JSON.
async fn until(rx: &mut AgentEvents, pred: impl Fn(&Value) -> bool) -> Value {
    loop {
        let e = tokio::time::timeout(T, rx.recv())
            .await
            .expect("event in time")
            .expect("stream open");
        let v = serde_json::to_value(&e).unwrap();
        if pred(&v) {
            return v;
        }
    }
}

/// The next orchestrator event matching `pred`, as JSON.
async fn orchestrator_until(c: &Client, pred: impl Fn(&Value) -> bool) -> Value {
    loop {
        let e = tokio::time::timeout(T, c.next_event())
            .await
            .expect("event in time")
            .expect("open");
        if let IncomingEvent::Known(e) = e {
            let v = serde_json::to_value(&e).unwrap();
            if pred(&v) {
                return v;
            }
        }
    }
}

/// A world with the test server as `[hosts.box]` and a daemon on it.
fn ssh_world() -> Option<(World, Daemon)> {
    let w = World::with_sshd()?;
    w.ssh_host(SHARD, "");
    let d = Daemon::start(&w.home());
    Some((w, d))
}

/// Prompts until the agent's Runtime is back (the host's backoff may refuse at first).
async fn prompt_until_restored(c: &Client, agent: &str, text: &str) {
    let deadline = Instant::now() + T;
    loop {
        match c.call(prompt(agent, text)).await {
            Ok(_) => return,
            Err(e) => {
                assert!(Instant::now() < deadline, "never restored: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// Waits (bounded) until `cond` holds.
fn wait_for(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + T;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
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

fn session_file(rhome: &Path) -> PathBuf {
    files_under(&rhome.join("sessions"))
        .into_iter()
        .find(|f| f.file_name().is_some_and(|n| n == "session.jsonl"))
        .expect("a session on the host")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_agent_answers_over_one_shared_connection_and_keys_stay_in_memory() {
    let Some((w, d)) = ssh_world() else { return };
    let c = d.client().await;
    let s = w.script(
        "s.json",
        json!([{"steps":[{"text":"hello from the host"}]},{"steps":[{"text":"second"}]}]),
    );
    let a = c.create(w.create(&s)).await.unwrap();
    let b = c.create(w.create(&s)).await.unwrap();
    let (data, mut ev) = c.attach(&a, AttachRole::Interactive).await.unwrap();
    assert_eq!(data.info.host.as_deref(), Some("box"));
    c.call(prompt(&a, "hi")).await.unwrap();
    let done = until(&mut ev, |v| v["type"] == "message_complete").await;
    assert_eq!(done["message"]["content"][0]["text"], "hello from the host");
    let list = c.list().await.unwrap();
    assert!(
        list.iter().all(|i| i.host.as_deref() == Some("box")),
        "{list:?}"
    );
    // The session lives on the host, not with the daemon.
    assert!(w.rhome().join("sessions").is_dir());
    assert!(!w.home().join("sessions").exists());
    // Two agents, one connection: one ssh master, one Runtime per agent behind it.
    let masters = processes_with(&format!("-M -S {}", w.home().join("hosts").display()));
    assert_eq!(masters.len(), 1, "{masters:?}");
    let ours = w.far_runtimes();
    // A Runtime's sandbox zygote is a fork with the same command line: count the tops.
    let tops = ours
        .iter()
        .filter(|p| sshd::parent_of(**p).is_none_or(|pp| !ours.contains(&pp)))
        .count();
    assert_eq!(tops, 2, "one far Runtime per agent");
    // The key reached the far Runtime over its stdin only: not its command line, not its
    // environment, no file on the host, no log of the daemon.
    for p in &ours {
        assert!(!sshd::cmdline(*p).contains(FAKE_KEY));
        let env = std::fs::read(format!("/proc/{p}/environ")).unwrap_or_default();
        assert!(!String::from_utf8_lossy(&env).contains(FAKE_KEY));
    }
    for f in files_under(&w.rhome())
        .into_iter()
        .chain(files_under(&w.home()))
    {
        let bytes = std::fs::read(&f).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(FAKE_KEY),
            "the key is in {}",
            f.display()
        );
    }
    // Owner-only control socket folder.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(w.home().join("hosts"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "{mode:o}");
    let _ = b;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_is_down_at_create_creates_nothing() {
    let Some(mut w) = World::with_sshd() else {
        return;
    };
    w.ssh_host(SHARD, "");
    w.sshd().stop();
    let d = Daemon::start(&w.home());
    let c = d.client().await;
    let s = w.script("s.json", json!([]));
    let e = c.create(w.create(&s)).await.unwrap_err().to_string();
    assert!(e.contains("host box"), "{e}");
    assert!(e.contains("refused") || e.contains("connect"), "{e}");
    assert!(c.list().await.unwrap().is_empty());
    let manifests = std::fs::read_dir(w.home().join("manifests")).map_or(0, |r| r.count());
    assert_eq!(manifests, 0);
    // An unknown host is one clear error too.
    let mut bad = w.create(&s);
    bad.host = Some("nowhere".into());
    let e = c.create(bad).await.unwrap_err().to_string();
    assert!(
        e.contains("unknown host \"nowhere\"") && e.contains("[hosts.nowhere]"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_host_key_is_refused_never_accepted() {
    let Some(w) = World::with_sshd() else { return };
    w.ssh_host(SHARD, "");
    w.sshd.as_ref().unwrap().distrust_host_key();
    let known = w.dir.path().join("ssh/known_hosts");
    let before = std::fs::read(&known).unwrap();
    let d = Daemon::start(&w.home());
    let c = d.client().await;
    let s = w.script("s.json", json!([]));
    let e = c.create(w.create(&s)).await.unwrap_err().to_string();
    assert!(e.contains("Host key verification failed"), "{e}");
    assert!(c.list().await.unwrap().is_empty());
    assert_eq!(
        std::fs::read(&known).unwrap(),
        before,
        "known_hosts untouched"
    );
    assert!(!w.rhome().join("sessions").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_lost_mid_turn_fails_the_turn_keeps_what_was_written_and_restores() {
    let Some((mut w, d)) = ssh_world() else {
        return;
    };
    let c = d.client().await;
    let s = w.script(
        "s.json",
        json!([
            {"steps":[{"text":"partial "},{"delay_ms":120000},{"text":"never"}]},
            {"steps":[{"text":"back again"}]}
        ]),
    );
    let a = c.create(w.create(&s)).await.unwrap();
    let (_, mut ev) = c.attach(&a, AttachRole::Interactive).await.unwrap();
    c.call(prompt(&a, "remember this")).await.unwrap();
    until(&mut ev, |v| v["type"] == "message_delta").await;
    let far = w.far_runtimes();
    // The far Runtime (and its sandbox's zygote, a fork with the same command line).
    assert!(!far.is_empty());
    w.sshd().stop();
    let exited =
        orchestrator_until(&c, |v| v["type"] == "agent_exited" && v["agent_id"] == a).await;
    assert_eq!(exited["runtime_state"], "failed", "{exited}");
    assert!(
        exited["reason"]
            .as_str()
            .unwrap()
            .contains("the connection to its host was lost"),
        "{exited}"
    );
    // The far Runtime saw end of input and exited: nothing is left on the host.
    wait_for("the far Runtime to exit", || {
        far.iter().all(|p| {
            !std::path::Path::new(&format!("/proc/{p}")).exists() || sshd::cmdline(*p).is_empty()
        })
    });
    let info = c.list().await.unwrap();
    assert_eq!(serde_json::to_value(info[0].status).unwrap(), "error");
    // What was written before the drop is in the host's session.
    let transcript = std::fs::read_to_string(session_file(&w.rhome())).unwrap();
    assert!(transcript.contains("remember this"), "{transcript}");
    // While the host is down, a command says so.
    let e = c
        .call(prompt(&a, "are you there"))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("host box"), "{e}");
    w.sshd().restart();
    // The next command restores the agent on the same host and session (after the
    // backoff has passed).
    prompt_until_restored(&c, &a, "and now").await;
    // The restored generation answers on the same session, on the host.
    until(&mut ev, |v| v["type"] == "user_message").await;
    wait_for("the new prompt in the host's session", || {
        std::fs::read_to_string(session_file(&w.rhome()))
            .is_ok_and(|t| t.contains("remember this") && t.contains("and now"))
    });
    let sessions = w.host_sessions();
    assert_eq!(sessions, 1, "restored on the same session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_pending_when_the_connection_drops_ends_as_the_runtime_exit() {
    let Some((mut w, d)) = ssh_world() else {
        return;
    };
    let c = d.client().await;
    let s = w.script(
        "s.json",
        json!([
            {"steps":[{"tool_call":{"id":"b1","name":"bash","args":{"command":"echo ran > ran.txt"}}}]},
            {"steps":[{"text":"done"}]},
            {"steps":[{"text":"restored"}]}
        ]),
    );
    let a = c.create(w.create(&s)).await.unwrap();
    let (_, mut ev) = c.attach(&a, AttachRole::Interactive).await.unwrap();
    c.call(prompt(&a, "run it")).await.unwrap();
    let req = until(&mut ev, |v| v["type"] == "permission_request").await;
    w.sshd().stop();
    let resolved = until(&mut ev, |v| v["type"] == "permission_resolved").await;
    assert_eq!(resolved["request_id"], req["request_id"]);
    assert_eq!(resolved["decision"], "deny");
    assert_eq!(resolved["source"], "runtime_exited");
    // A late answer to the dead request changes nothing, and nothing ran.
    let late = json!({"type":"permission_response","agent_id":a,"request_id":req["request_id"],"decision":"allow"});
    let _ = c.request(serde_json::from_value(late).unwrap()).await;
    assert!(!w.work().join("ran.txt").exists());
    w.sshd().restart();
    prompt_until_restored(&c, &a, "again").await;
    let sync = until(&mut ev, |v| v["type"] == "sync").await;
    assert_eq!(sync["pending_requests"], json!([]), "{sync}");
    assert!(!w.work().join("ran.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_kill_leaves_nothing_running_on_the_host() {
    let Some((w, d)) = ssh_world() else { return };
    let c = d.client().await;
    let s = w.script(
        "s.json",
        json!([{"steps":[{"tool_call":{"id":"b1","name":"bash","args":{"command":"sleep 417"}}}]}]),
    );
    let a = c.create(w.create(&s)).await.unwrap();
    let (_, mut ev) = c.attach(&a, AttachRole::Interactive).await.unwrap();
    c.call(prompt(&a, "sleep")).await.unwrap();
    let req = until(&mut ev, |v| v["type"] == "permission_request").await;
    let allow = json!({"type":"permission_response","agent_id":a,"request_id":req["request_id"],"decision":"allow"});
    c.request(serde_json::from_value(allow).unwrap())
        .await
        .unwrap();
    until(&mut ev, |v| v["type"] == "tool_call").await;
    wait_for("the tool to start", || {
        !processes_with("sleep 417").is_empty()
    });
    let far = || w.far_runtimes();
    assert!(!far().is_empty());
    let kill: Command = serde_json::from_value(json!({"type":"agent.kill","agent_id":a})).unwrap();
    c.call(kill).await.unwrap();
    wait_for("the tool and the far Runtime to end", || {
        processes_with("sleep 417").is_empty() && far().is_empty()
    });
}

/// A `command` host through a wrapper script: any prefix that gives a process stdio.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_launcher_runs_through_a_wrapper() {
    let w = World::new();
    let log = w.wrapper_host();
    let d = Daemon::start(&w.home());
    let c = d.client().await;
    let s = w.script("s.json", json!([{"steps":[{"text":"via the wrapper"}]}]));
    let a = c.create(w.create(&s)).await.unwrap();
    let (_, mut ev) = c.attach(&a, AttachRole::Interactive).await.unwrap();
    c.call(prompt(&a, "hi")).await.unwrap();
    let done = until(&mut ev, |v| v["type"] == "message_complete").await;
    assert_eq!(done["message"]["content"][0]["text"], "via the wrapper");
    let ran = std::fs::read_to_string(&log).unwrap();
    assert!(ran.contains("protocol version"), "{ran}");
    assert!(ran.contains("agent --remote --cwd"), "{ran}");
    assert!(!ran.contains(FAKE_KEY));
    assert!(w.rhome().join("sessions").is_dir());
}

/// A host without shard, or with a shard of another protocol: one line saying what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_other_version_shard_is_one_line_naming_the_fix() {
    let Some(w) = World::with_sshd() else { return };
    w.ssh_host("/nonexistent/bin/shard", "");
    let d = Daemon::start(&w.home());
    let c = d.client().await;
    let s = w.script("s.json", json!([]));
    let e = c.create(w.create(&s)).await.unwrap_err().to_string();
    assert!(e.contains("no shard at `/nonexistent/bin/shard`"), "{e}");
    assert!(e.contains("shard hosts install box"), "{e}");
    assert!(!e.contains('\n'));
    drop(c);
    drop(d);
    let fake = w.dir.path().join("old-shard");
    std::fs::write(&fake, "#!/bin/sh\necho 0.0.1\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    w.ssh_host(&fake.display().to_string(), "");
    let d = Daemon::start(&w.home());
    let c = d.client().await;
    let e = c.create(w.create(&s)).await.unwrap_err().to_string();
    assert!(
        e.contains("protocol \"0.0.1\"") && e.contains("shard hosts install box"),
        "{e}"
    );
}

/// `shard hosts install` checks the platform, copies the binary and checks it answers;
/// agents then run with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_install_copies_this_shard_and_agents_run_with_it() {
    let Some(w) = World::with_sshd() else { return };
    let target = w.dir.path().join("remote-bin/shard");
    w.ssh_host(&target.display().to_string(), "");
    let out = StdCommand::new(SHARD)
        .args(["hosts", "install", "box"])
        .env("SHARD_HOME", w.home())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("installed shard on box"), "{said}");
    let listed = StdCommand::new(SHARD)
        .args(["hosts", "list"])
        .env("SHARD_HOME", w.home())
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.starts_with("box") && listed.contains("ssh box"),
        "{listed}"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&target).unwrap().permissions().mode();
    assert_eq!(mode & 0o111, 0o111);
    let d = Daemon::start(&w.home());
    let c = d.client().await;
    let s = w.script("s.json", json!([{"steps":[{"text":"installed works"}]}]));
    let a = c.create(w.create(&s)).await.unwrap();
    let (_, mut ev) = c.attach(&a, AttachRole::Interactive).await.unwrap();
    c.call(prompt(&a, "hi")).await.unwrap();
    let done = until(&mut ev, |v| v["type"] == "message_complete").await;
    assert_eq!(done["message"]["content"][0]["text"], "installed works");
}

/// Idle reaping ends a remote Runtime like a local one (end of input), and the next
/// prompt starts a new generation on the same host and session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_remote_runtime_is_reaped_and_restored() {
    let Some(w) = World::with_sshd() else { return };
    w.ssh_host(SHARD, "");
    let d = Daemon::start_with(
        &w.home(),
        &[
            "--idle-runtime-timeout",
            "1",
            "--attached-idle-timeout",
            "1",
        ],
    );
    let c = d.client().await;
    let s = w.script(
        "s.json",
        json!([{"steps":[{"text":"one"}]},{"steps":[{"text":"two"}]}]),
    );
    let a = c.create(w.create(&s)).await.unwrap();
    let far = || w.far_runtimes();
    let stopped = orchestrator_until(&c, |v| {
        v["type"] == "agent_status_changed" && v["agent_id"] == a && v["runtime_state"] == "stopped"
    })
    .await;
    assert!(stopped["detail"].is_null(), "a clean stop: {stopped}");
    wait_for("the far Runtime to exit", || far().is_empty());
    let (_, mut ev) = c.attach(&a, AttachRole::Interactive).await.unwrap();
    c.call(prompt(&a, "again")).await.unwrap();
    until(&mut ev, |v| v["type"] == "message_complete").await;
    let sessions = w.host_sessions();
    assert_eq!(sessions, 1);
}

/// The Runtime's own start check runs on the host with the forwarded settings: a mode the
/// host does not know, or a cwd it lacks, is one error, and nothing is created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_settings_on_the_host_are_one_error_and_nothing_is_created() {
    let Some((w, d)) = ssh_world() else { return };
    let c = d.client().await;
    let s = w.script("s.json", json!([]));
    let mut bad_mode = w.create(&s);
    bad_mode.mode = Some("nope".into());
    let e = c.create(bad_mode).await.unwrap_err().to_string();
    assert!(
        e.contains("on host box") && e.contains("unknown mode `nope`"),
        "{e}"
    );
    let mut bad_cwd = w.create(&s);
    bad_cwd.cwd = "/nonexistent/project".into();
    let e = c.create(bad_cwd).await.unwrap_err().to_string();
    assert!(
        e.contains("on host box") && e.contains("/nonexistent/project"),
        "{e}"
    );
    let mut relative = w.create(&s);
    relative.cwd = "project".into();
    let e = c.create(relative).await.unwrap_err().to_string();
    assert!(e.contains("absolute path on host box"), "{e}");
    let mut with_mcp = w.create(&s);
    with_mcp.mcp_servers = Some(vec![
        serde_json::from_value(json!({"name": "files", "command": "mcp-server"})).unwrap(),
    ]);
    let e = c.create(with_mcp).await.unwrap_err().to_string();
    assert!(
        e.contains("mcp_servers are not supported for an agent on a host"),
        "{e}"
    );
    assert!(c.list().await.unwrap().is_empty());
    assert!(!w.rhome().join("sessions").exists());
}

/// A program on the daemon's `PATH` that logs its environment and runs the real one.
fn env_logger(dir: &Path, name: &str, real: &str, log: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("logbin");
    std::fs::create_dir_all(&bin).unwrap();
    let p = bin.join(name);
    std::fs::write(
        &p,
        format!(
            "#!/bin/sh\n{{ env; echo ----; }} >> '{}'\nexec '{real}' \"$@\"\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// Each environment of the log: no provider key, no `SHARD_*` variable of the daemon's,
/// only the allow-listed names.
fn assert_clean_envs(log: &Path) {
    let text = std::fs::read_to_string(log).unwrap();
    let envs: Vec<&str> = text
        .split("----\n")
        .filter(|e| !e.trim().is_empty())
        .collect();
    assert!(!envs.is_empty(), "the logging program never ran");
    for env in envs {
        assert!(!env.contains(FAKE_KEY), "a host's child saw the key: {env}");
        for line in env.lines() {
            let name = line.split_once('=').map_or(line, |(k, _)| k);
            // What the logging shell sets itself.
            if ["PWD", "OLDPWD", "SHLVL", "_"].contains(&name) {
                continue;
            }
            assert!(
                !name.starts_with("SHARD_") && !name.ends_with("_API_KEY"),
                "{name} reached a host's child: {env}"
            );
            assert!(
                [
                    "PATH",
                    "HOME",
                    "USER",
                    "LOGNAME",
                    "LANG",
                    "LANGUAGE",
                    "LC_ALL",
                    "LC_CTYPE",
                    "LC_MESSAGES",
                    "TZ",
                    "TMPDIR",
                    "SSH_AUTH_SOCK",
                    "KRB5CCNAME",
                    "XDG_RUNTIME_DIR",
                    "XDG_CONFIG_HOME",
                    "DBUS_SESSION_BUS_ADDRESS",
                ]
                .contains(&name),
                "{name} is not on the allow-list: {env}"
            );
        }
    }
}

/// The daemon's `ssh` children (its shared connection and every command through it) and
/// a `command` host's prefix start with a cleared environment: the provider key and the
/// daemon's `SHARD_*` variables stay behind; the key reaches the Runtime over the pipe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemons_ssh_and_prefix_children_get_no_key_and_no_shard_variable() {
    let Some(w) = World::with_sshd() else { return };
    w.ssh_host(SHARD, "");
    let log = w.dir.path().join("ssh-env.log");
    let real = String::from_utf8(
        StdCommand::new("sh")
            .args(["-c", "command -v ssh"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let bin = env_logger(w.dir.path(), "ssh", real.trim(), &log);
    let d = Daemon::start_path(&w.home(), &[], Some(&bin));
    let c = d.client().await;
    let s = w.script("s.json", json!([{"steps":[{"text":"clean env"}]}]));
    let a = c.create(w.create(&s)).await.unwrap();
    let (_, mut ev) = c.attach(&a, AttachRole::Interactive).await.unwrap();
    c.call(prompt(&a, "hi")).await.unwrap();
    let done = until(&mut ev, |v| v["type"] == "message_complete").await;
    assert_eq!(done["message"]["content"][0]["text"], "clean env");
    assert_clean_envs(&log);
    drop(c);
    drop(d);

    // A `command` host: its prefix is the logging program.
    let plog = w.dir.path().join("prefix-env.log");
    let pbin = env_logger(w.dir.path(), "prefix", "/usr/bin/env", &plog);
    w.config(&format!(
        "[hosts.box]\ncommand = [\"{}\"]\nshard = \"{SHARD}\"\nhome = \"{}\"\n",
        pbin.join("prefix").display(),
        w.rhome().display()
    ));
    let d = Daemon::start(&w.home());
    let c = d.client().await;
    let a = c.create(w.create(&s)).await.unwrap();
    let (_, mut ev) = c.attach(&a, AttachRole::Interactive).await.unwrap();
    c.call(prompt(&a, "hi")).await.unwrap();
    let done = until(&mut ev, |v| v["type"] == "message_complete").await;
    assert_eq!(done["message"]["content"][0]["text"], "clean env");
    assert_clean_envs(&plog);
}
