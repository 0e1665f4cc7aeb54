//! Helpers shared by the integration tests.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use shard_protocol::types::ToolResultContent;
use shard_tools::bash::process::group_alive;
use shard_tools::{ProcessTracker, Tool, ToolContext, ToolOutput, ToolRegistry};

/// Generous bound for anything that should finish "promptly": failure means a hang.
pub const HANG: Duration = Duration::from_secs(60);

pub fn ctx(dir: &Path) -> ToolContext {
    ToolContext::new(dir, dir.join(".shard-out"))
}

pub fn tool(name: &str) -> Arc<dyn Tool> {
    ToolRegistry::builtin().get(name).unwrap()
}

pub async fn call(name: &str, args: Value, ctx: &ToolContext) -> ToolOutput {
    tokio::time::timeout(HANG, tool(name).execute(args, ctx))
        .await
        .expect("tool call hung")
}

pub fn text(out: &ToolOutput) -> String {
    match &out.content {
        ToolResultContent::Text { text } => text.clone(),
        ToolResultContent::Error { message } => message.clone(),
        other => panic!("unexpected content {other:?}"),
    }
}

/// Runs one `#[ignore]`d test of this binary in a fresh process (own memory peak, own
/// environment) and returns whether it passed, with its output.
pub fn run_child(test: &str, env: &[(&str, &str)]) -> (bool, String) {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = std::process::Command::new(exe);
    cmd.args([
        test,
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.env("SHARD_TOOLS_CHILD", "1");
    let out = cmd.output().unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success() && all.contains("1 passed"), all)
}

pub fn is_child() -> bool {
    std::env::var_os("SHARD_TOOLS_CHILD").is_some()
}

/// A tracker that remembers every group it ever saw, so tests can check them afterwards.
pub type Recording = (
    ProcessTracker,
    Arc<Mutex<Vec<i32>>>,
    tokio::sync::mpsc::UnboundedReceiver<Vec<i32>>,
);

pub fn recording_tracker() -> Recording {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let s = seen.clone();
    let tracker = ProcessTracker::with_hook(Arc::new(move |groups: Vec<i32>| {
        let mut all = s.lock().unwrap();
        for g in &groups {
            if !all.contains(g) {
                all.push(*g);
            }
        }
        let _ = tx.send(groups);
    }));
    (tracker, seen, rx)
}

/// Waits (bounded) until no live process is left in any of the groups.
pub async fn assert_groups_gone(groups: &[i32]) {
    assert!(!groups.is_empty());
    for &g in groups {
        let gone = tokio::time::timeout(HANG, async {
            while group_alive(g) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(gone.is_ok(), "process group {g} still has live processes");
    }
}

pub fn write_tree(root: &Path, files: &[(&str, &str)]) {
    for (p, content) in files {
        let full = root.join(p);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }
}

pub fn make_ignored_tree(root: &Path) {
    // A repository, so that external tools without --no-require-git agree on .gitignore.
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".gitignore"), "ignored/\n*.log\n").unwrap();
    std::fs::write(root.join(".ignore"), "secret-dir/\n").unwrap();
    for d in 0..100 {
        for f in 0..50 {
            let kept = root.join(format!("kept/d{d}"));
            let ignored = root.join(format!("ignored/d{d}"));
            std::fs::create_dir_all(&kept).unwrap();
            std::fs::create_dir_all(&ignored).unwrap();
            let body = if f == 7 { "marker here\n" } else { "nothing\n" };
            std::fs::write(kept.join(format!("f{f}.txt")), body).unwrap();
            std::fs::write(ignored.join(format!("f{f}.txt")), "marker\n").unwrap();
        }
    }
    std::fs::write(root.join("kept/x.log"), "marker\n").unwrap();
    std::fs::create_dir_all(root.join("secret-dir")).unwrap();
    std::fs::write(root.join("secret-dir/s.txt"), "marker\n").unwrap();
}
