//! MCP servers through the real `shard agent`: a real server process (the
//! standard-library Python server of crates/shard-mcp/tests/servers, over stdio and
//! streamable HTTP) whose tools the scripted model calls through the permission gate.

use std::path::PathBuf;

use crate::harness::*;
use serde_json::{Value, json};
use shard_protocol::Event;
use shard_protocol::event::{PermissionRequest, ToolResultEvent, ToolsChanged};

/// A private copy of the test server, so each test can find its own process by path.
pub(super) fn server_script(sb: &Sandbox) -> Option<PathBuf> {
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        crate::skip::skip("python3 is not installed");
        return None;
    }
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shard-mcp/tests/servers/mcp_test_server.py");
    // Inside the workspace: servers run in the tool sandbox, where the host's /tmp (which
    // holds the test's directory) is not visible.
    let dir = sb.work().join(".srv");
    std::fs::create_dir_all(&dir).unwrap();
    let dst = dir.join("mcp_test_server.py");
    std::fs::copy(src, &dst).unwrap();
    Some(dst)
}

/// The test server as `[mcp.servers.t]` with every tool read-only; false (and the test
/// skips) without python3.
pub(super) fn read_only_test_server(sb: &Sandbox) -> bool {
    let Some(script) = server_script(sb) else {
        return false;
    };
    // A busy machine may take more than the default 10 s to start python in the sandbox.
    sb.config(&format!(
        "[mcp]\nstartup_timeout = 120\n\n[mcp.servers.t]\ncommand = \"python3\"\nargs = [\"{}\"]\nread_only = true\n",
        script.display()
    ));
    true
}

/// `[mcp.servers.t]` for the test server, plus `extra` lines.
fn user_server(sb: &Sandbox, script: &std::path::Path, extra: &str) {
    sb.config(&format!(
        "[mcp.servers.t]\ncommand = \"python3\"\nargs = [\"{}\"]\n{extra}",
        script.display()
    ));
}

/// Waits for the `tools_changed` that says a server is ready; returns it.
fn ready(a: &mut Agent) -> ToolsChanged {
    a.until_event(|e| tools_changed(e).filter(|t| server_state(t) == Some("ready")))
}

/// A `tools_changed` event, typed.
fn tools_changed(e: &Event) -> Option<ToolsChanged> {
    match e {
        Event::ToolsChanged(t) => Some(t.clone()),
        _ => None,
    }
}

/// The state of the server a `tools_changed` names.
fn server_state(t: &ToolsChanged) -> Option<&str> {
    t.server.as_ref().map(|s| s.state.as_str())
}

/// Writes `turns` as the model's script and starts an agent with `args`; returns it once
/// server `t` is ready.
fn started(sb: &Sandbox, turns: Value, args: &[&str]) -> Agent {
    let s = sb.script("s.json", json!({ "turns": turns }));
    let mut a = Agent::spawn(sb, Some(&s), args);
    ready(&mut a);
    a
}

/// A server process a test started itself: killed when the test ends, even by a failed
/// assertion, so no server outlives its test.
struct ServerChild(std::process::Child);

impl Drop for ServerChild {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `shard mcp list --json` for the sandbox's work directory.
pub(super) fn mcp_list(sb: &Sandbox) -> Value {
    let cwd = sb.work();
    let out = shard(
        sb,
        &["mcp", "list", "--json", "--cwd", cwd.to_str().unwrap()],
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Sends one prompt and collects (results, permission requests) until `turn_end`,
/// answering requests with `answer`.
pub(super) fn turn(
    a: &mut Agent,
    answer: impl Fn(&PermissionRequest) -> &'static str,
) -> (Vec<ToolResultEvent>, Vec<PermissionRequest>) {
    a.answer_turn("go", answer)
}

/// The first event already seen that matches, else the next one to arrive: a server's
/// notice may come during a turn, before `turn_end`.
fn seen_or_until<T>(a: &mut Agent, pick: impl Fn(&Event) -> Option<T>) -> T {
    match a.find_seen(&pick) {
        Some(t) => t,
        None => a.until_event(pick),
    }
}

pub(super) fn text_of(r: &ToolResultEvent) -> String {
    result_text(&r.content)
}

#[test]
fn tools_appear_after_hello_and_read_only_call_runs_headless_write_is_denied() {
    let sb = Sandbox::new();
    let Some(script) = server_script(&sb) else {
        return;
    };
    user_server(&sb, &script, "read_only_tools = [\"echo\"]\n");
    let note = sb.work().join("note.txt");
    let s = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("e1", "mcp__t__echo", json!({"text": "hi"})),
            tool_turn("w1", "mcp__t__write_note", json!({"file": note, "text": "x"})),
            text_turn("done")
        ]}),
    );
    let mut a = Agent::spawn(&sb, Some(&s), &["--headless-policy", "deny"]);
    assert!(matches!(a.next_event(), Event::Hello(_)));
    assert!(matches!(a.next_event(), Event::Sync(_)));
    let r = ready(&mut a);
    assert!(
        r.tools.iter().any(|t| t == "read") && r.tools.iter().any(|t| t == "mcp__t__echo"),
        "{:?}",
        r.tools
    );
    assert_eq!(r.server.unwrap().name, "t");
    let (results, requests) = turn(&mut a, |_| "deny");
    assert!(requests.is_empty());
    assert_eq!(text_of(&results[0]), "echo: hi");
    assert!(!results[0].is_error);
    assert!(results[1].is_error);
    assert!(
        text_of(&results[1]).contains("headless policy"),
        "{}",
        text_of(&results[1])
    );
    assert!(!note.exists(), "the denied write never ran");
    assert!(a.finish().success());
    assert!(
        gone(&script.display().to_string()),
        "the server stops with its Runtime"
    );
}

#[test]
fn a_client_answers_the_permission_and_allow_always_is_exact() {
    let sb = Sandbox::new();
    let Some(script) = server_script(&sb) else {
        return;
    };
    user_server(&sb, &script, "");
    let mut a = started(
        &sb,
        json!([
            tool_turn("e1", "mcp__t__echo", json!({"text": "one"})),
            tool_turn("e2", "mcp__t__echo", json!({"text": "one"})),
            tool_turn("e3", "mcp__t__echo", json!({"text": "two"})),
            text_turn("done")
        ]),
        &[],
    );
    let (results, requests) = turn(&mut a, |_| "allow_always");
    // The server's readOnlyHint is shown, never trusted: it still asks.
    assert_eq!(
        requests.len(),
        2,
        "e1 asks, e2 is granted, e3 (other input) asks"
    );
    assert_eq!(requests[0].tool_name, "mcp__t__echo");
    let details = serde_json::to_string(&requests[0].details).unwrap();
    assert!(details.contains("readOnlyHint"), "{details}");
    assert_eq!(requests[1].input["text"], "two");
    let texts: Vec<String> = results.iter().map(text_of).collect();
    assert_eq!(texts, vec!["echo: one", "echo: one", "echo: two"]);
    assert!(a.finish().success());
}

#[test]
fn deny_and_headless_allow_rules_match_mcp_names_with_globs() {
    let sb = Sandbox::new();
    let Some(script) = server_script(&sb) else {
        return;
    };
    let note = sb.work().join("n.txt");
    user_server(
        &sb,
        &script,
        "\n[[permissions.deny]]\ntool = \"mcp__t__env*\"\n\n[[headless.allow]]\ntool = \"mcp__t__*\"\n",
    );
    let mut a = started(
        &sb,
        json!([
            tool_turn(
                "w1",
                "mcp__t__write_note",
                json!({"file": note, "text": "ok"})
            ),
            tool_turn("v1", "mcp__t__env", json!({"name": "HOME"})),
            text_turn("done")
        ]),
        &["--headless-policy", "allow_if_rule_matches"],
    );
    let (results, _) = turn(&mut a, |_| "deny");
    assert_eq!(text_of(&results[0]), format!("wrote {}", note.display()));
    assert_eq!(std::fs::read_to_string(&note).unwrap(), "ok");
    assert!(
        text_of(&results[1]).contains("deny rule"),
        "{}",
        text_of(&results[1])
    );
    assert!(a.finish().success());
}

#[test]
fn crash_mid_call_is_reported_and_restarted_and_a_hang_times_out() {
    let sb = Sandbox::new();
    let Some(script) = server_script(&sb) else {
        return;
    };
    user_server(&sb, &script, "read_only = true\ntimeout_secs = 1\n");
    let mut a = started(
        &sb,
        json!([
            tool_turn("h1", "mcp__t__hang", json!({})),
            tool_turn("c1", "mcp__t__crash", json!({})),
            text_turn("after the crash"),
            tool_turn("e1", "mcp__t__echo", json!({"text": "back"})),
            text_turn("done")
        ]),
        &[],
    );
    let (results, _) = turn(&mut a, |_| "deny");
    assert!(
        text_of(&results[0]).contains("timed out after 1 s"),
        "{}",
        text_of(&results[0])
    );
    assert!(results[1].is_error);
    // Reported during the turn, which went on.
    let failed = seen_or_until(&mut a, |e| {
        tools_changed(e).filter(|t| server_state(t) == Some("failed"))
    });
    let server = failed.server.clone().unwrap();
    assert_eq!(server.restarting, Some(true));
    assert!(
        server
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("crashing on purpose"),
        "{failed:?}"
    );
    assert!(
        !failed.tools.iter().any(|t| t.contains("mcp__t__")),
        "its tools are gone"
    );
    let restarted = a
        .all_seen(tools_changed)
        .iter()
        .rev()
        .take_while(|t| server_state(t) != Some("failed"))
        .any(|t| server_state(t) == Some("ready"));
    if !restarted {
        ready(&mut a);
    }
    let (results, _) = turn(&mut a, |_| "deny");
    assert_eq!(text_of(&results[0]), "echo: back");
    assert!(a.finish().success());
}

#[test]
fn list_changed_adds_a_tool_live() {
    let sb = Sandbox::new();
    let Some(script) = server_script(&sb) else {
        return;
    };
    user_server(&sb, &script, "read_only = true\n");
    let mut a = started(
        &sb,
        json!([
            tool_turn("a1", "mcp__t__add_tool", json!({})),
            text_turn("added"),
            tool_turn("x1", "mcp__t__extra", json!({})),
            text_turn("done")
        ]),
        &[],
    );
    let (results, _) = turn(&mut a, |_| "deny");
    assert_eq!(text_of(&results[0]), "added extra");
    let changed = seen_or_until(&mut a, |e| {
        tools_changed(e).filter(|t| t.tools.iter().any(|x| x.contains("mcp__t__extra")))
    });
    assert_eq!(server_state(&changed), Some("ready"));
    let (results, _) = turn(&mut a, |_| "deny");
    assert_eq!(text_of(&results[0]), "extra ran");
    assert!(a.finish().success());
}

#[test]
fn project_file_starts_only_once_approved_and_asks_again_when_changed() {
    let sb = Sandbox::new();
    let Some(script) = server_script(&sb) else {
        return;
    };
    let file = sb.work().join(".mcp.json");
    let body = json!({"mcpServers": {"p": {"command": "python3", "args": [script]}}});
    std::fs::write(&file, body.to_string()).unwrap();
    let s = sb.script("s.json", json!({"turns": []}));

    let mut a = Agent::spawn(&sb, Some(&s), &["--headless-policy", "deny"]);
    let n = a.until_event(tools_changed);
    let server = n.server.unwrap();
    assert_eq!(server.state, "not_approved");
    assert!(server.message.unwrap().contains("shard mcp approve"));
    assert!(a.finish().success());

    let out = shard(
        &sb,
        &["mcp", "approve", "--cwd", sb.work().to_str().unwrap()],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("p: python3"));
    let rows = mcp_list(&sb);
    assert_eq!(rows[0]["name"], "p");
    assert_eq!(rows[0]["state"], "ready", "{rows}");
    assert!(rows[0]["tools"].to_string().contains("mcp__p__echo"));

    let mut a = Agent::spawn(&sb, Some(&s), &["--headless-policy", "deny"]);
    let n = a.until_event(tools_changed);
    assert_eq!(server_state(&n), Some("ready"));
    assert!(a.finish().success());

    // A changed file is a new file: not started until approved again.
    let body = json!({"mcpServers": {"p": {"command": "python3", "args": [script, "--changed"]}}});
    std::fs::write(&file, body.to_string()).unwrap();
    let rows = mcp_list(&sb);
    assert_eq!(rows[0]["state"], "not_approved", "{rows}");
}

/// A project's `.mcp.json` is the repository's: it never gets a provider key into a
/// server (approved or not), its servers inherit only the shared variables (not the
/// person's other tokens), and `shard mcp approve` shows every variable each receives.
#[test]
fn attack_a_projects_server_gets_no_provider_key_and_only_what_approve_showed() {
    let sb = Sandbox::new();
    let Some(script) = server_script(&sb) else {
        return;
    };
    let file = sb.work().join(".mcp.json");
    let body = json!({"mcpServers": {
        "p": {"command": "python3", "args": [script], "env": {"K": "${MCP_PROJECT_TOKEN}"}},
        "evil": {"command": "python3", "args": [script], "env": {"K": "${ANTHROPIC_API_KEY}"}},
        "evil2": {"command": "python3", "args": [script, "--k=${OPENAI_API_KEY:-none}"]}
    }});
    std::fs::write(&file, body.to_string()).unwrap();
    let out = shard(
        &sb,
        &["mcp", "approve", "--cwd", sb.work().to_str().unwrap()],
    );
    assert!(out.status.success(), "{out:?}");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("K=${MCP_PROJECT_TOKEN}"), "{shown}");
    assert!(shown.contains("environment: only"), "{shown}");
    assert!(shown.contains("PATH"), "{shown}");
    assert!(
        shown.contains("references `ANTHROPIC_API_KEY`")
            && shown.contains("references `OPENAI_API_KEY`"),
        "{shown}"
    );

    let s = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("k1", "mcp__p__env", json!({"name": "K"})),
            tool_turn("k2", "mcp__p__env", json!({"name": "MCP_OTHER_TOKEN"})),
            tool_turn("k3", "mcp__p__env", json!({"name": "ANTHROPIC_API_KEY"})),
            tool_turn("k4", "mcp__p__env", json!({"name": "PATH"})),
            text_turn("done")
        ]}),
    );
    let mut a = Agent::spawn_env(
        &sb,
        Some(&s),
        &[],
        &[
            ("MCP_PROJECT_TOKEN", "project-token-1"),
            ("MCP_OTHER_TOKEN", "other-token-2"),
            ("ANTHROPIC_API_KEY", "sk-ant-never-3"),
        ],
    );
    let mut refused = Vec::new();
    loop {
        let t = a.until_event(tools_changed);
        let server = t.server.clone().unwrap();
        if server.name == "p" && server.state == "ready" {
            break;
        }
        if server.state == "not_approved" {
            assert!(
                server
                    .message
                    .as_deref()
                    .unwrap_or("")
                    .contains("never receives a provider key"),
                "{server:?}"
            );
            assert!(!format!("{server:?}").contains("sk-ant-never-3"));
            refused.push(server.name);
        }
    }
    refused.sort();
    assert_eq!(refused, vec!["evil", "evil2"]);
    let (results, _) = turn(&mut a, |_| "allow");
    assert_eq!(text_of(&results[0]), "project-token-1", "its own env");
    assert_eq!(
        text_of(&results[1]),
        "<unset>",
        "not the person's other tokens"
    );
    assert_eq!(text_of(&results[2]), "<unset>", "never a provider key");
    assert_ne!(text_of(&results[3]), "<unset>", "the shared variables");
    assert!(a.finish().success());
}

#[test]
fn a_servers_secret_reaches_only_that_server() {
    let sb = Sandbox::new();
    let Some(script) = server_script(&sb) else {
        return;
    };
    user_server(
        &sb,
        &script,
        "read_only = true\nenv = { K = \"${MCP_TEST_SECRET}\" }\n",
    );
    let secret = "mcp-secret-7f3a9c";
    let s = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("b1", "bash", json!({"command": "echo \"[$MCP_TEST_SECRET]\""})),
            tool_turn("k1", "mcp__t__env", json!({"name": "K"})),
            tool_turn("k2", "mcp__t__env", json!({"name": "MCP_TEST_SECRET"})),
            text_turn("done")
        ]}),
    );
    let mut a = Agent::spawn_env(
        &sb,
        Some(&s),
        &[],
        &[("MCP_TEST_SECRET", secret), ("SHARD_LOG", "debug")],
    );
    ready(&mut a);
    let (results, _) = turn(&mut a, |_| "allow");
    assert!(
        text_of(&results[0]).contains("[]"),
        "bash never sees it: {}",
        text_of(&results[0])
    );
    assert_eq!(text_of(&results[1]), secret, "the server gets its own env");
    assert_eq!(
        text_of(&results[2]),
        "<unset>",
        "but not the variable it came from"
    );
    assert!(a.finish().success());
}

#[test]
fn an_http_server_with_headers_from_the_environment() {
    let sb = Sandbox::new();
    let Some(script) = server_script(&sb) else {
        return;
    };
    let log = sb.dir.path().join("http.log");
    let mut child = ServerChild(
        std::process::Command::new("python3")
            .arg(&script)
            .args(["--http", "0"])
            .env("MCP_TEST_LOG", &log)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.0.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    let port = line.trim().trim_start_matches("listening ").to_string();
    sb.config(&format!(
        "[mcp.servers.web]\ntype = \"http\"\nurl = \"http://127.0.0.1:{port}/mcp\"\nread_only = true\nheaders = {{ Authorization = \"Bearer ${{WEB_TOKEN}}\" }}\n"
    ));
    let s = sb.script(
        "s.json",
        json!({"turns": [tool_turn("e1", "mcp__web__echo", json!({"text": "over http"})), text_turn("done")]}),
    );
    let mut a = Agent::spawn_env(
        &sb,
        Some(&s),
        &["--headless-policy", "deny"],
        &[("WEB_TOKEN", "tok-http-1")],
    );
    ready(&mut a);
    let (results, _) = turn(&mut a, |_| "deny");
    assert_eq!(text_of(&results[0]), "echo: over http");
    assert!(a.finish().success());
    drop(child);
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("Bearer tok-http-1")
    );
}

/// The given programs are on PATH, else the test says why it skips.
fn have(programs: &[&str]) -> bool {
    let missing: Vec<&&str> = programs
        .iter()
        .filter(|p| {
            !std::process::Command::new("sh")
                .args(["-c", &format!("command -v {p}")])
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .collect();
    if !missing.is_empty() {
        crate::skip::skip(&format!(
            "not installed: {missing:?} (.ci/run installs them from npm and PyPI)"
        ));
    }
    missing.is_empty()
}

/// Servers nobody here wrote (npm `@modelcontextprotocol/server-filesystem`,
/// `server-everything`; PyPI `mcp-server-time`, `mcp-server-git`), through the gate.
#[test]
fn third_party_servers_through_the_gate() {
    if !have(&[
        "mcp-server-filesystem",
        "mcp-server-everything",
        "mcp-server-time",
        "mcp-server-git",
    ]) {
        return;
    }
    let sb = Sandbox::new();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(sb.work())
        .status();
    assert!(git.is_ok_and(|s| s.success()));
    sb.config(
        "[mcp.servers.fs]\ncommand = \"mcp-server-filesystem\"\nargs = [\".\"]\n\
         read_only_tools = [\"list_directory\"]\n\n\
         [mcp.servers.every]\ncommand = \"mcp-server-everything\"\n\n\
         [mcp.servers.time]\ncommand = \"mcp-server-time\"\nread_only = true\n\n\
         [mcp.servers.git]\ncommand = \"mcp-server-git\"\nargs = [\"--repository\", \".\"]\n\n\
         [[headless.allow]]\ntool = \"mcp__every__*\"\n",
    );
    std::fs::write(sb.work().join("hello.txt"), "hi").unwrap();
    let s = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("t1", "mcp__time__get_current_time", json!({"timezone": "UTC"})),
            tool_turn("l1", "mcp__fs__list_directory", json!({"path": sb.work()})),
            tool_turn("w1", "mcp__fs__write_file", json!({"path": sb.work().join("x.txt"), "content": "no"})),
            tool_turn("e1", "mcp__every__echo", json!({"message": "from everything"})),
            tool_turn("i1", "mcp__every__get-tiny-image", json!({})),
            tool_turn("g1", "mcp__git__git_status", json!({"repo_path": sb.work()})),
            text_turn("done")
        ]}),
    );
    let mut a = Agent::spawn(
        &sb,
        Some(&s),
        &["--headless-policy", "allow_if_rule_matches"],
    );
    let mut ready_servers = std::collections::BTreeSet::new();
    while ready_servers.len() < 4 {
        let t = ready(&mut a);
        ready_servers.insert(t.server.unwrap().name);
    }
    let (results, _) = turn(&mut a, |_| "deny");
    let texts: Vec<String> = results.iter().map(text_of).collect();
    assert!(
        texts[0].contains("UTC") || texts[0].contains("datetime"),
        "time: {}",
        texts[0]
    );
    assert!(
        texts[1].contains("hello.txt"),
        "read-only by config: {}",
        texts[1]
    );
    assert!(results[2].is_error, "write denied headless");
    assert!(!sb.work().join("x.txt").exists());
    assert!(
        texts[3].contains("from everything"),
        "headless allow glob: {}",
        texts[3]
    );
    assert!(!results[4].is_error, "{:?}", results[4]);
    assert!(
        results[5].is_error,
        "git status is mutating unless configured"
    );
    assert!(a.finish().success());
}

/// `server-everything` in streamable-HTTP mode.
#[test]
fn third_party_http_server() {
    if !have(&["mcp-server-everything"]) {
        return;
    }
    let sb = Sandbox::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _child = ServerChild(
        std::process::Command::new("mcp-server-everything")
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = std::time::Instant::now() + WAIT;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "server-everything did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    sb.config(&format!(
        "[mcp.servers.every]\ntype = \"http\"\nurl = \"http://127.0.0.1:{port}/mcp\"\nread_only_tools = [\"echo\"]\n"
    ));
    let s = sb.script(
        "s.json",
        json!({"turns": [tool_turn("e1", "mcp__every__echo", json!({"message": "over http"})), text_turn("done")]}),
    );
    let mut a = Agent::spawn(&sb, Some(&s), &["--headless-policy", "deny"]);
    ready(&mut a);
    let (results, _) = turn(&mut a, |_| "deny");
    assert!(
        text_of(&results[0]).contains("over http"),
        "{:?}",
        results[0]
    );
    assert!(a.finish().success());
}

#[test]
fn a_result_with_text_and_images_reaches_the_model_and_clients_as_both() {
    let sb = Sandbox::new();
    let Some(script) = server_script(&sb) else {
        return;
    };
    user_server(&sb, &script, "");
    let api = crate::mock::MockApi::start(vec![
        crate::mock::anthropic_tool("toolu_1", "mcp__t__screenshot", json!({})),
        crate::mock::anthropic_text("I see it"),
    ]);
    let env = api.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut a = Agent::spawn_env(&sb, None, &["--provider", "anthropic"], &env);
    ready(&mut a);
    let (results, _) = turn(&mut a, |_| "allow");
    // Clients: the text as content, the images beside it; the TIFF is described.
    let r = &results[0];
    assert!(!r.is_error, "{r:?}");
    let text = text_of(r);
    assert!(text.starts_with("Page title: Example"), "{text}");
    assert!(text.contains("[image: image/tiff, not shown:"), "{text}");
    let images = r.images.as_ref().unwrap();
    assert_eq!(images.len(), 2, "{r:?}");
    assert_eq!(images[0].mime_type, "image/png");
    assert_eq!(images[1].mime_type, "image/gif");
    // The model: one tool_result with both images and the text.
    let seen = api.requests();
    assert_eq!(seen.len(), 2);
    let body = &seen[1].body;
    crate::mock::assert_anthropic_pairs(body);
    let result = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_result")
        .unwrap();
    let parts = result["content"].as_array().unwrap();
    let kinds: Vec<&str> = parts.iter().map(|p| p["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, vec!["image", "image", "text"], "{result}");
    assert_eq!(parts[0]["source"]["data"], "iVBORw0KGgo=");
    assert_eq!(parts[1]["source"]["media_type"], "image/gif");
    assert!(
        parts[2]["text"]
            .as_str()
            .unwrap()
            .starts_with("Page title: Example")
    );
    // A resumed session sends them again: they were saved with the result.
    let transcript = std::fs::read_to_string(
        std::fs::read_dir(sb.home().join("sessions"))
            .unwrap()
            .flatten()
            .map(|e| e.path().join("session.jsonl"))
            .find(|p| p.is_file())
            .expect("a session folder with a transcript"),
    )
    .unwrap();
    assert!(transcript.contains("R0lGODlhAQABAAAAACw="));
    assert!(a.finish().success());
}

// ---------------------------------------------- ready before the first request

#[test]
fn shard_run_waits_for_its_servers_before_the_first_request() {
    let sb = Sandbox::new();
    let Some(script) = server_script(&sb) else {
        return;
    };
    // A bound generous enough for a busy machine: the test is that the first call waits.
    let extra = "read_only_tools = [\"echo\"]\n\n[mcp]\nstartup_timeout = 120\n";
    user_server(&sb, &script, extra);
    let out = run_scripted(
        &sb,
        json!([
            tool_turn("e1", "mcp__t__echo", json!({"text": "from the first call"})),
            text_turn("done")
        ]),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("no tool named"), "{stderr}");
    assert!(stderr.contains("from the first call"), "{stderr}");
}

#[test]
fn a_late_or_failing_server_is_reported_and_the_turn_goes_on() {
    let sb = Sandbox::new();
    sb.config(
        "[mcp]\nstartup_timeout = 1\n\
         [mcp.servers.slow]\ncommand = \"sleep\"\nargs = [\"600\"]\n\
         [mcp.servers.broken]\ncommand = \"false\"\n",
    );
    let out = run_scripted(&sb, json!([text_turn("answered anyway")]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("answered anyway"), "{stdout}");
    assert!(
        stderr.contains("mcp: server `slow` is late: not ready after 1 s"),
        "{stderr}"
    );
    assert!(stderr.contains("mcp: server `broken` failed"), "{stderr}");
}
