//! Attack suite: a real `shard agent` runs `bash` in its sandbox, and
//! the command tries to get out, read the Runtime's keys or outlive its call.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use shard_protocol::event::Hello;

use crate::harness::*;

/// A key that must never be seen outside the Runtime's own memory.
const KEY: &str = "sk-ant-test-6f1c0ffee2sandbox";

/// Runs one scripted `bash` call per command (each allowed when asked) and returns the
/// results in order.
pub(super) fn run_bash(
    sb: &Sandbox,
    commands: &[&str],
    envs: &[(&str, &str)],
) -> (Hello, Vec<String>) {
    let mut turns: Vec<Value> = commands
        .iter()
        .enumerate()
        .map(|(i, c)| tool_turn(&format!("b{i}"), "bash", json!({"command": c})))
        .collect();
    turns.push(text_turn("done"));
    let script = sb.script("s.json", json!({ "turns": turns }));
    let mut a = Agent::spawn_env(sb, Some(&script), &[], envs);
    let hello = a.until_event(pick::hello);
    a.until_type("sync");
    a.send(prompt("go"));
    let mut out = Vec::new();
    for i in 0..commands.len() {
        let req = a.until_event(pick::permission_request);
        a.send(json!({"type": "permission_response", "request_id": req.request_id, "decision": "allow"}));
        let id = format!("b{i}");
        let r = a.until_event(|e| pick::tool_result(e).filter(|r| r.tool_call_id == id));
        out.push(result_text(&r.content));
    }
    a.until_type("turn_end");
    assert!(a.finish().success());
    (hello, out)
}

fn caps(hello: &Hello) -> Vec<String> {
    hello.capabilities.clone()
}

/// True when this machine's sandbox is complete; prints why a test is skipped otherwise.
pub(super) fn complete(hello: &Hello) -> bool {
    let caps = caps(hello);
    let missing: Vec<&String> = caps
        .iter()
        .filter(|c| c.starts_with("sandbox-missing:"))
        .collect();
    if !caps.contains(&"sandbox".to_string()) || !missing.is_empty() {
        crate::skip::skip(&format!(
            "the kernel's sandbox is incomplete here: {caps:?}"
        ));
        return false;
    }
    true
}

#[test]
fn bash_cannot_reach_shard_home_write_outside_or_read_the_runtime() {
    let sb = Sandbox::new();
    sb.config("[permissions]\n");
    let outside = sb.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(sb.home().join("grants")).unwrap();
    let sock = sb.home().join("daemon.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let h = sb.home().display().to_string();
    let cmd1 = format!(
        "cat {h}/config.toml && echo READ_CONFIG; echo '{{}}' >> {h}/grants/x.json && echo WROTE_GRANT; \
         test -e {h}/daemon.sock && echo SEES_SOCKET; echo x > {o}/escape.txt && echo ESCAPED; \
         echo inside > inside.txt",
        o = outside.display()
    );
    let cmd2 = "cat /proc/$PPID/environ | tr '\\0' '\\n'; env | grep -c ANT_TEST; echo END";
    let cmd3 = format!(
        "python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{}\"); print(\"CONNECTED\")' 2>&1 || true",
        sock.display()
    );
    let (hello, out) = run_bash(
        &sb,
        &[&cmd1, cmd2, &cmd3],
        &[("ANTHROPIC_API_KEY", KEY), ("ANT_TEST", "1")],
    );
    if !complete(&hello) {
        return;
    }
    for bad in ["READ_CONFIG", "WROTE_GRANT", "SEES_SOCKET", "ESCAPED"] {
        assert!(!out[0].contains(bad), "{bad}: {}", out[0]);
    }
    assert!(!outside.join("escape.txt").exists());
    assert!(!sb.home().join("grants/x.json").exists());
    assert_eq!(
        std::fs::read_to_string(sb.work().join("inside.txt")).unwrap(),
        "inside\n"
    );
    assert!(!out[1].contains(KEY), "{}", out[1]);
    assert!(out[1].contains("END"), "{}", out[1]);
    assert!(!out[2].contains("CONNECTED"), "{}", out[2]);
}

#[test]
fn the_runtime_environ_holds_no_key() {
    let sb = Sandbox::new();
    sb.config("[providers.custom]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9\"\napi_key_env = \"ODDLY_NAMED_VAR\"\n");
    let script = sb.script("s.json", json!({"turns": []}));
    let mut a = Agent::spawn_env(
        &sb,
        Some(&script),
        &[],
        &[
            ("ANTHROPIC_API_KEY", KEY),
            ("ODDLY_NAMED_VAR", "custom-secret-77aa"),
        ],
    );
    a.until_type("sync");
    let pid = a.child.id();
    // Read as the test's user (root here, who reads any process's environ).
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    let environ = String::from_utf8_lossy(&environ);
    assert!(!environ.contains(KEY), "{environ}");
    assert!(!environ.contains("custom-secret-77aa"), "{environ}");
    a.close_stdin();
    assert!(a.finish().success());
}

fn orphans(marker: &str) -> String {
    format!(
        "setsid -f sleep {marker}; nohup sleep {marker} >/dev/null 2>&1 & (sleep {marker} &); touch started"
    )
}

#[test]
fn orphans_die_when_the_call_ends() {
    let sb = Sandbox::new();
    let marker = format!("601.{}", std::process::id());
    let (hello, out) = run_bash(&sb, &[&orphans(&marker)], &[]);
    if !complete(&hello) {
        return;
    }
    assert!(sb.work().join("started").exists(), "{}", out[0]);
    // The namespace is gone before the call's result is sent: no waiting needed.
    assert_eq!(process_with_arg(&marker), None);
}

/// True when process `pid` runs under the sandbox's zygote: an ancestor was started
/// with the zygote's subcommand (the call's init is a fork of the zygote).
fn under_zygote(pid: u32) -> bool {
    let mut pid = pid;
    for _ in 0..16 {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if cmdline
            .split(|&b| b == 0)
            .any(|a| a == b"__shard-sandbox-zygote")
        {
            return true;
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let Some(ppid) = stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            return false;
        };
        if ppid <= 1 {
            return false;
        }
        pid = ppid;
    }
    false
}

/// Starts orphans and a long foreground command, returns the agent once they run.
fn start_orphans(sb: &Sandbox, marker: &str) -> Option<Agent> {
    let cmd = format!("{}; sleep 600", orphans(marker));
    let script = sb.script(
        "s.json",
        json!({"turns": [tool_turn("b", "bash", json!({"command": cmd})), text_turn("x")]}),
    );
    let mut a = Agent::spawn(sb, Some(&script), &[]);
    let hello = a.until_event(pick::hello);
    if !complete(&hello) {
        a.close_stdin();
        let _ = a.finish();
        return None;
    }
    a.until_type("sync");
    a.send(prompt("go"));
    let req = a.until_event(pick::permission_request);
    a.send(
        json!({"type": "permission_response", "request_id": req.request_id, "decision": "allow"}),
    );
    let deadline = Instant::now() + WAIT;
    while !sb.work().join("started").exists() || process_with_arg(marker).is_none() {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The Runtime starts its zygote with the first turn: calls run there, not per call.
    let pid = process_with_arg(marker).unwrap();
    assert!(
        under_zygote(pid),
        "the call did not run in the sandbox zygote"
    );
    Some(a)
}

#[test]
fn orphans_die_when_the_call_is_aborted() {
    let sb = Sandbox::new();
    let marker = format!("602.{}", std::process::id());
    let Some(mut a) = start_orphans(&sb, &marker) else {
        return;
    };
    a.send(json!({"type": "abort"}));
    let r = a.until_event(pick::tool_result);
    assert!(r.is_error);
    assert!(gone(&marker), "orphans outlived the abort");
    a.until_type("turn_end");
    assert!(a.finish().success());
}

#[test]
fn orphans_die_when_the_runtime_is_killed() {
    let sb = Sandbox::new();
    let marker = format!("603.{}", std::process::id());
    let Some(mut a) = start_orphans(&sb, &marker) else {
        return;
    };
    let zygote = zygote_of(a.child.id()).expect("the Runtime has a zygote");
    a.child.kill().unwrap(); // SIGKILL
    let _ = a.child.wait();
    assert!(gone(&marker), "orphans outlived the Runtime's kill -9");
    let deadline = Instant::now() + WAIT;
    while live(zygote) {
        assert!(
            Instant::now() < deadline,
            "the zygote outlived the Runtime's kill -9"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The zygote child of Runtime `runtime`.
fn zygote_of(runtime: u32) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let ppid: u32 = stat
            .rsplit(')')
            .next()?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        (ppid == runtime
            && cmdline
                .split(|&b| b == 0)
                .any(|a| a == b"__shard-sandbox-zygote"))
        .then_some(pid)
    })
}

/// True while `pid` exists and is not a zombie.
fn live(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        !state.starts_with('Z') && !state.starts_with('X')
    })
}

#[test]
fn network_off_blocks_a_local_listener() {
    let sb = Sandbox::new();
    sb.config("[sandbox]\nnetwork = false\n");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let cmd = format!("echo hi > /dev/tcp/127.0.0.1/{port} && echo CONNECTED; echo END");
    let (hello, out) = run_bash(&sb, &[&cmd], &[]);
    if !complete(&hello) {
        return;
    }
    assert!(out[0].contains("END"), "{}", out[0]);
    assert!(!out[0].contains("CONNECTED"), "{}", out[0]);
    assert!(listener.accept().is_err(), "a connection got through");
}

#[test]
fn mode_off_runs_as_before() {
    let sb = Sandbox::new();
    sb.config("[sandbox]\nmode = \"off\"\n");
    let outside = sb.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let cmd = format!("echo x > {}/plain.txt && echo WROTE", outside.display());
    let (hello, out) = run_bash(&sb, &[&cmd], &[]);
    assert!(
        caps(&hello).contains(&"sandbox-off".to_string()),
        "{hello:?}"
    );
    assert!(out[0].contains("WROTE"), "{}", out[0]);
    assert!(outside.join("plain.txt").exists());
}

#[test]
fn an_unknown_sandbox_setting_is_a_configuration_error() {
    let sb = Sandbox::new();
    sb.config("[sandbox]\nmode = \"sometimes\"\n");
    let script = sb.script("s.json", json!({"turns": []}));
    let mut a = Agent::spawn(&sb, Some(&script), &[]);
    let err = a.until_event(pick::error);
    assert!(err.message.contains("sandbox"), "{err:?}");
    let _ = a.finish();
}

/// `mode = "required"` where the kernel refuses user namespaces (as with Ubuntu's
/// AppArmor restriction or a container without them): the Runtime is started inside a
/// user namespace whose `max_user_namespaces` is 0, so its probe cannot create one. The
/// Runtime says so in `hello`, and `bash` is refused with one error naming what is
/// missing — the command never runs, sandboxed or not.
#[test]
fn required_refuses_bash_when_namespaces_are_unavailable() {
    let limit = "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$@\"";
    let works = std::process::Command::new("unshare")
        .args(["--user", "--map-root-user", "sh", "-c", limit, "sh", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !works {
        crate::skip::skip("`unshare --user` with a namespace limit is not available here");
        return;
    }
    let sb = Sandbox::new();
    sb.config("[sandbox]\nmode = \"required\"\n");
    let marker = sb.dir.path().join("ran.txt");
    let cmd = format!("echo ran > {}", marker.display());
    let turns =
        json!({"turns": [tool_turn("b0", "bash", json!({"command": cmd})), text_turn("done")]});
    let script = sb.script("s.json", turns);
    let wrapper = [
        "unshare",
        "--user",
        "--map-root-user",
        "sh",
        "-c",
        limit,
        "sh",
    ];
    let mut a = Agent::spawn_wrapped(&sb, &wrapper, Some(&script), &[], &[]);
    let hello = a.until_event(pick::hello);
    let caps = caps(&hello);
    assert!(caps.contains(&"sandbox-refused".to_string()), "{caps:?}");
    assert!(
        caps.contains(&"sandbox-missing:namespaces".to_string()),
        "{caps:?}"
    );
    a.until_type("sync");
    a.send(prompt("go"));
    let req = a.until_event(pick::permission_request);
    a.send(
        json!({"type": "permission_response", "request_id": req.request_id, "decision": "allow"}),
    );
    let r = a.until_event(|e| pick::tool_result(e).filter(|r| r.tool_call_id == "b0"));
    let text = result_text(&r.content);
    assert!(r.is_error, "{r:?}");
    assert!(
        text.contains("the sandbox is required") && text.contains("namespaces"),
        "{text}"
    );
    a.until_type("turn_end");
    assert!(a.finish().success());
    assert!(!marker.exists(), "the command ran without its sandbox");
}
