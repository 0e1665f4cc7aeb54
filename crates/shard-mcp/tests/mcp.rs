//! The manager against a real MCP server process (tests/servers/mcp_test_server.py, over
//! stdio and streamable HTTP): tools appear, calls go through, list_changed updates,
//! a crash is reported and restarted, a hang times out with `notifications/cancelled`,
//! and the server gets only the environment it should.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../tests/support/skip.rs"]
mod skip;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use shard_mcp::config::{Origin, ServerSpec, Transport};
use shard_mcp::{McpManager, McpUpdate, ServerState, StartContext};
use shard_protocol::types::ToolResultContent;
use shard_tools::{Tool, ToolContext};
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(30);

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/servers/mcp_test_server.py")
}

fn python() -> Option<&'static str> {
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        Some("python3")
    } else {
        skip::skip("python3 is not installed");
        None
    }
}

fn stdio_spec(name: &str, env: BTreeMap<String, String>, timeout: Duration) -> ServerSpec {
    ServerSpec {
        name: name.into(),
        origin: Origin::User,
        transport: Transport::Stdio {
            command: "python3".into(),
            args: vec![script().display().to_string()],
            env,
            cwd: None,
        },
        read_only: false,
        read_only_tools: vec!["echo".into()],
        timeout,
        secret_vars: vec![],
        secret_values: vec![],
        // These tests are about the protocol; the sandbox has its own (docs/security.md).
        sandboxed: false,
    }
}

fn ctx(dir: &std::path::Path, remove: Vec<String>) -> StartContext {
    StartContext {
        cwd: dir.to_path_buf(),
        env_remove: Arc::new(remove),
        processes: Default::default(),
        sandbox: None,
    }
}

async fn next(rx: &mut mpsc::Receiver<McpUpdate>) -> McpUpdate {
    tokio::time::timeout(WAIT, rx.recv())
        .await
        .expect("an update in time")
        .expect("the sink is open")
}

async fn ready(rx: &mut mpsc::Receiver<McpUpdate>) -> Vec<Arc<dyn Tool>> {
    loop {
        let u = next(rx).await;
        if let ServerState::Ready { .. } = u.state {
            return u.tools;
        }
    }
}

fn find(tools: &[Arc<dyn Tool>], name: &str) -> Arc<dyn Tool> {
    tools
        .iter()
        .find(|t| t.name() == name)
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "no {name} in {:?}",
                tools.iter().map(|t| t.name()).collect::<Vec<_>>()
            )
        })
}

fn text(c: &ToolResultContent) -> String {
    match c {
        ToolResultContent::Text { text } => text.clone(),
        ToolResultContent::Error { message } => message.clone(),
        other => format!("{other:?}"),
    }
}

#[tokio::test]
async fn stdio_server_tools_calls_list_changed_and_env() {
    let Some(_) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut env = BTreeMap::new();
    env.insert("SERVER_TOKEN".into(), "tok-123456".into());
    let (tx, mut rx) = mpsc::channel(16);
    let mgr = McpManager::start(
        vec![stdio_spec("t", env, Duration::from_secs(20))],
        ctx(dir.path(), vec!["HOME".into()]),
        tx,
    );
    let tools = ready(&mut rx).await;
    let echo = find(&tools, "mcp__t__echo");
    assert!(echo.is_read_only(&json!({})), "configured read-only");
    assert!(
        echo.permission_note(&json!({}))
            .unwrap()
            .contains("readOnlyHint")
    );
    let write = find(&tools, "mcp__t__write_note");
    assert!(
        !write.is_read_only(&json!({})),
        "mutating unless configured"
    );
    assert_eq!(echo.input_schema()["required"], json!(["text"]));

    let tctx = ToolContext::new(dir.path(), dir.path().join("out"));
    let out = echo.execute(json!({"text": "hi"}), &tctx).await;
    assert_eq!(text(&out.content), "echo: hi");
    assert!(!out.is_error);

    let env_tool = find(&tools, "mcp__t__env");
    let out = env_tool
        .execute(json!({"name": "SERVER_TOKEN"}), &tctx)
        .await;
    assert_eq!(
        text(&out.content),
        "tok-123456",
        "the server gets its own env"
    );
    let out = env_tool.execute(json!({"name": "HOME"}), &tctx).await;
    assert_eq!(
        text(&out.content),
        "<unset>",
        "removed variables never reach it"
    );

    let add = find(&tools, "mcp__t__add_tool");
    let out = add.execute(json!({}), &tctx).await;
    assert_eq!(text(&out.content), "added extra");
    let tools = ready(&mut rx).await;
    let extra = find(&tools, "mcp__t__extra");
    assert_eq!(
        text(&extra.execute(json!({}), &tctx).await.content),
        "extra ran"
    );

    let img = find(&tools, "mcp__t__image");
    let out = img.execute(json!({}), &tctx).await;
    assert!(
        matches!(out.content, ToolResultContent::Image { .. }),
        "{out:?}"
    );

    mgr.stop().await;
}

#[tokio::test]
async fn crash_is_reported_and_restarted_and_hang_times_out_with_cancel() {
    let Some(_) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let mut env = BTreeMap::new();
    env.insert("MCP_TEST_LOG".into(), log.display().to_string());
    let (tx, mut rx) = mpsc::channel(16);
    let mgr = McpManager::start(
        vec![stdio_spec("c", env, Duration::from_secs(2))],
        ctx(dir.path(), vec![]),
        tx,
    );
    let tools = ready(&mut rx).await;
    let tctx = ToolContext::new(dir.path(), dir.path().join("out"));

    let hang = find(&tools, "mcp__c__hang");
    let out = hang.execute(json!({}), &tctx).await;
    assert!(out.is_error);
    assert!(
        text(&out.content).contains("timed out after 2 s"),
        "{out:?}"
    );
    let cancelled = async {
        loop {
            let body = std::fs::read_to_string(&log).unwrap_or_default();
            if body.contains("notifications/cancelled") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(WAIT, cancelled)
        .await
        .expect("the server got notifications/cancelled");

    let crash = find(&tools, "mcp__c__crash");
    let out = crash.execute(json!({}), &tctx).await;
    assert!(out.is_error, "{out:?}");
    let failed = next(&mut rx).await;
    match &failed.state {
        ServerState::Failed { reason, restarting } => {
            assert!(*restarting);
            assert!(reason.contains("crashing on purpose"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(failed.tools.is_empty());
    let tools = ready(&mut rx).await;
    let echo = find(&tools, "mcp__c__echo");
    assert_eq!(
        text(&echo.execute(json!({"text": "back"}), &tctx).await.content),
        "echo: back"
    );
    mgr.stop().await;
}

#[tokio::test]
async fn http_server_with_headers() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let mut child = tokio::process::Command::new(py)
        .arg(script())
        .args(["--http", "0"])
        .env("MCP_TEST_LOG", &log)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let port: u16 = first.trim_start_matches("listening ").parse().unwrap();
    let mut headers = BTreeMap::new();
    headers.insert("Authorization".into(), "Bearer hdr-secret".into());
    let spec = ServerSpec {
        name: "h".into(),
        origin: Origin::Project,
        transport: Transport::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers,
        },
        read_only: true,
        read_only_tools: vec![],
        timeout: Duration::from_secs(20),
        secret_vars: vec![],
        secret_values: vec![],
        sandboxed: false,
    };
    let (tx, mut rx) = mpsc::channel(16);
    let mgr = McpManager::start(vec![spec], ctx(dir.path(), vec![]), tx);
    let tools = ready(&mut rx).await;
    let echo = find(&tools, "mcp__h__echo");
    assert!(
        find(&tools, "mcp__h__write_note").is_read_only(&json!({})),
        "server marked read-only"
    );
    let tctx = ToolContext::new(dir.path(), dir.path().join("out"));
    assert_eq!(
        text(&echo.execute(json!({"text": "web"}), &tctx).await.content),
        "echo: web"
    );
    let body = std::fs::read_to_string(&log).unwrap();
    assert!(
        body.contains("Bearer hdr-secret"),
        "the headers reach the server"
    );
    mgr.stop().await;
    let _ = child.kill().await;
}
