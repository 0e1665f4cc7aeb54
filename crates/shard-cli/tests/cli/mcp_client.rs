//! Attack suite: MCP servers a client supplies (`SHARD_CLIENT_MCP_SERVERS`, as `shard acp`
//! and the daemon pass an editor's) run in the tool sandbox, ask through the gate (each
//! request naming its call), take no variable of the Runtime's, and keep their secrets
//! from other tools and from the session's files.

use std::path::Path;

use serde_json::json;
use shard_protocol::Event;

use crate::harness::*;
use crate::mcp::{server_script, text_of, turn};

/// Every file under `dir` holding `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<String> {
    let mut hits = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() {
            hits.extend(files_holding(&p, needle));
        } else if std::fs::read(&p).is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle)) {
            hits.push(p.display().to_string());
        }
    }
    hits
}

#[test]
fn a_client_server_is_sandboxed_gated_literal_and_keeps_its_secret() {
    let sb = Sandbox::new();
    let Some(script) = server_script(&sb) else {
        return;
    };
    let secret = "client-secret-value-7f3a";
    let escape = sb.dir.path().join("escape.txt");
    let servers = json!([{
        "name": "ed", "command": "python3", "args": [script],
        "env": {"ED_TOKEN": secret, "ED_HOME": "${HOME}"}
    }]);
    let s = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("e1", "mcp__ed__env", json!({"name": "ED_HOME"})),
            tool_turn("w1", "mcp__ed__write_note", json!({"file": escape, "text": "out"})),
            tool_turn("b1", "bash", json!({"command": "echo \"[${SHARD_CLIENT_MCP_SERVERS:-}]\""})),
            text_turn("done")
        ]}),
    );
    let mut a = Agent::spawn_env(
        &sb,
        Some(&s),
        &[],
        &[("SHARD_CLIENT_MCP_SERVERS", &servers.to_string())],
    );
    let hello = a.until_event(pick::hello);
    let caps = &hello.capabilities;
    let sandboxed = caps.iter().any(|c| c == "sandbox")
        && !caps.iter().any(|c| c.starts_with("sandbox-missing"));
    a.until_event(|e| match e {
        Event::ToolsChanged(t) if t.server.as_ref().is_some_and(|s| s.state == "ready") => Some(()),
        _ => None,
    });
    let (results, requests) = turn(&mut a, |_| "allow");
    assert!(a.finish().success());

    // Every call asked, each request naming its call.
    let asked: Vec<&str> = requests
        .iter()
        .map(|r| r.tool_call_id.as_deref().unwrap_or_default())
        .collect();
    assert_eq!(asked, ["e1", "w1", "b1"], "{requests:?}");
    let texts: Vec<String> = results.iter().map(text_of).collect();
    assert_eq!(texts[0], "${HOME}", "values are taken literally: {texts:?}");
    if sandboxed {
        assert!(
            !escape.exists(),
            "the client's server wrote outside: {texts:?}"
        );
    } else {
        eprintln!("skipped (sandbox part): the kernel's sandbox is incomplete here: {caps:?}");
    }
    assert!(
        texts[2].contains("[]"),
        "bash saw the servers' variable: {texts:?}"
    );
    assert_eq!(files_holding(&sb.home(), secret), Vec::<String>::new());
}

#[test]
fn a_malformed_server_list_is_one_error_quoting_no_value() {
    let sb = Sandbox::new();
    let bad = "[{\"name\": \"ed\", \"command\": \"x\", \"env\": {\"T\": \"tok-123\"}";
    let out = std::process::Command::new(shard_bin())
        .args(["agent", "--cwd"])
        .arg(sb.work())
        .env("SHARD_HOME", sb.home())
        .env("SHARD_CLIENT_MCP_SERVERS", bad)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("SHARD_CLIENT_MCP_SERVERS"), "{err}");
    assert!(!err.contains("tok-123"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_refuses_a_bad_server_list_naming_the_entry_and_creating_nothing() {
    use crate::daemon::{Daemon, create_req, home, script};
    let h = home();
    let d = Daemon::start(h.path(), &[]);
    let s = script(h.path(), "s.json", json!([text_turn("hi")]));
    let c = d.client().await;
    let mut req = create_req(h.path(), &s);
    req.mcp_servers = Some(
        serde_json::from_value(json!([
            {"name": "ok", "command": "srv", "env": {"T": "tok-456"}},
            {"name": "bad name", "command": "srv"}
        ]))
        .unwrap(),
    );
    let err = c.create(req).await.unwrap_err().to_string();
    assert!(err.contains("mcp_servers[1].name"), "{err}");
    assert!(!err.contains("tok-456"), "{err}");
    assert!(c.list().await.unwrap().is_empty(), "nothing was created");
}
