//! Attack suite: MCP servers a project names run in the tool sandbox, and approving a
//! project's servers covers the scripts they run, not only `.mcp.json`.

use serde_json::json;
use shard_protocol::Event;

use crate::harness::*;
use crate::mcp::{mcp_list, server_script, text_of, turn};

/// A project whose `.mcp.json` runs the test server from a script inside the project;
/// returns the script's path once `shard mcp approve` approved it.
fn approved_project(sb: &Sandbox) -> Option<std::path::PathBuf> {
    let original = server_script(sb)?;
    let script = sb.work().join("server.py");
    std::fs::copy(original, &script).unwrap();
    let body = json!({"mcpServers": {"p": {"command": "python3", "args": ["server.py"]}}});
    std::fs::write(sb.work().join(".mcp.json"), body.to_string()).unwrap();
    let out = shard(
        sb,
        &["mcp", "approve", "--cwd", sb.work().to_str().unwrap()],
    );
    assert!(out.status.success(), "{out:?}");
    Some(script)
}

#[test]
fn a_project_server_runs_in_the_tool_sandbox() {
    let sb = Sandbox::new();
    let Some(_) = approved_project(&sb) else {
        return;
    };
    let escape = sb.dir.path().join("escape.txt");
    let config = sb.home().join("config.toml");
    std::fs::write(&config, "").unwrap();
    let s = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("w1", "mcp__p__write_note", json!({"file": escape, "text": "out"})),
            tool_turn("w2", "mcp__p__write_note", json!({"file": config, "text": "[x]"})),
            tool_turn("w3", "mcp__p__write_note", json!({"file": sb.work().join("in.txt"), "text": "in"})),
            text_turn("done")
        ]}),
    );
    let mut a = Agent::spawn(&sb, Some(&s), &[]);
    let hello = a.until_event(pick::hello);
    let caps = &hello.capabilities;
    if !caps.iter().any(|c| c == "sandbox") || caps.iter().any(|c| c.starts_with("sandbox-missing"))
    {
        eprintln!("skipped: the kernel's sandbox is incomplete here: {caps:?}");
        return;
    }
    a.until_event(|e| match e {
        Event::ToolsChanged(t) if t.server.as_ref().is_some_and(|s| s.state == "ready") => Some(()),
        _ => None,
    });
    let (results, _) = turn(&mut a, |_| "allow");
    assert!(a.finish().success());
    let w3 = results.iter().find(|r| r.tool_call_id == "w3").unwrap();
    assert!(!w3.is_error, "inside the workspace works: {w3:?}");
    assert_eq!(
        std::fs::read_to_string(sb.work().join("in.txt")).unwrap(),
        "in"
    );
    assert!(!escape.exists(), "{results:?}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "", "{results:?}");
    let _ = results.iter().map(text_of).count();
}

#[test]
fn an_edited_server_script_needs_approval_again() {
    let sb = Sandbox::new();
    let Some(script) = approved_project(&sb) else {
        return;
    };
    let rows = mcp_list(&sb);
    assert_eq!(rows[0]["state"], "ready", "{rows}");
    // What the agent's sandbox can do: edit a file of the project.
    let mut text = std::fs::read_to_string(&script).unwrap();
    text.push_str("\n# changed by the agent\n");
    std::fs::write(&script, text).unwrap();
    let rows = mcp_list(&sb);
    assert_eq!(rows[0]["state"], "not_approved", "{rows}");
}

#[test]
fn only_the_users_config_runs_a_server_outside_the_sandbox() {
    let sb = Sandbox::new();
    let Some(original) = server_script(&sb) else {
        return;
    };
    let body =
        json!({"mcpServers": {"p": {"command": "python3", "args": [original], "sandbox": false}}});
    std::fs::write(sb.work().join(".mcp.json"), body.to_string()).unwrap();
    let out = shard(
        &sb,
        &["mcp", "approve", "--cwd", sb.work().to_str().unwrap()],
    );
    assert!(out.status.success(), "{out:?}");
    let rows = mcp_list(&sb);
    assert_ne!(rows[0]["state"], "ready", "{rows}");
    assert!(rows.to_string().contains("config.toml"), "{rows}");
}

/// A result over the size limit fails the call at once (the server's timeout here is an
/// hour; the harness waits 30 s for each event), and the server comes back.
#[test]
fn a_result_over_the_size_limit_is_an_error_at_once() {
    let sb = Sandbox::new();
    let Some(script) = server_script(&sb) else {
        return;
    };
    sb.config(&format!(
        "[mcp.servers.t]\ncommand = \"python3\"\nargs = [\"{}\"]\nread_only = true\ntimeout_secs = 3600\n",
        script.display()
    ));
    let s = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("big", "mcp__t__big", json!({"bytes": 17 * 1024 * 1024})),
            tool_turn("small", "mcp__t__big", json!({"bytes": 10})),
            text_turn("done")
        ]}),
    );
    let mut a = Agent::spawn(&sb, Some(&s), &[]);
    a.until_event(|e| match e {
        Event::ToolsChanged(t) if t.server.as_ref().is_some_and(|s| s.state == "ready") => Some(()),
        _ => None,
    });
    let (results, _) = turn(&mut a, |_| "allow");
    assert!(a.finish().success());
    let big = &results[0];
    assert!(big.is_error, "{big:?}");
    assert!(text_of(big).contains("limit"), "{big:?}");
}
