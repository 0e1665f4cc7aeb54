#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Integration tests of the built-in tools through the `Tool` trait, as the Runtime uses them.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use shard_protocol::types::{PathKind, RenderDescriptor, ToolResultContent};
use shard_tools::bash::process::group_alive;
use shard_tools::{ProcessTracker, Tool, ToolContext, ToolOutput, ToolRegistry, builtin_tools};

/// Generous bound for anything that should finish "promptly": failure means a hang.
const HANG: Duration = Duration::from_secs(60);

fn ctx(dir: &Path) -> ToolContext {
    ToolContext::new(dir, dir.join(".shard-out"))
}

fn tool(name: &str) -> Arc<dyn Tool> {
    ToolRegistry::builtin().get(name).unwrap()
}

async fn call(name: &str, args: Value, ctx: &ToolContext) -> ToolOutput {
    tokio::time::timeout(HANG, tool(name).execute(args, ctx))
        .await
        .expect("tool call hung")
}

fn text(out: &ToolOutput) -> String {
    match &out.content {
        ToolResultContent::Text { text } => text.clone(),
        ToolResultContent::Error { message } => message.clone(),
        other => panic!("unexpected content {other:?}"),
    }
}

/// Runs one `#[ignore]`d test of this binary in a fresh process (own memory peak, own
/// environment) and returns whether it passed, with its output.
fn run_child(test: &str, env: &[(&str, &str)]) -> (bool, String) {
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

fn is_child() -> bool {
    std::env::var_os("SHARD_TOOLS_CHILD").is_some()
}

// ---------------------------------------------------------------- registry, schemas

#[test]
fn builtin_tools_in_order_with_plain_schemas() {
    let names: Vec<_> = builtin_tools().iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        ["read", "write", "edit", "bash", "grep", "find", "ls"]
    );
    for t in builtin_tools() {
        let s = t.input_schema();
        let raw = s.to_string();
        assert_eq!(s["type"], "object", "{}: {raw}", t.name());
        for bad in ["$ref", "$defs", "$schema", "null", "oneOf", "anyOf"] {
            assert!(!raw.contains(bad), "{} schema has {bad}: {raw}", t.name());
        }
        assert!(!t.description().is_empty());
    }
    let ro: Vec<_> = builtin_tools()
        .iter()
        .filter(|t| t.is_read_only())
        .map(|t| t.name())
        .collect();
    assert_eq!(ro, ["read", "grep", "find", "ls"]);
    let edit = tool("edit").input_schema();
    assert_eq!(
        edit["properties"]["edits"]["items"]["properties"]["old_string"]["type"],
        "string"
    );
    assert_eq!(edit["required"], json!(["path"]));
}

#[test]
fn registry_lookup_specs_and_retain() {
    let mut reg = ToolRegistry::builtin();
    assert_eq!(reg.len(), 7);
    assert!(reg.get("grep").is_some());
    assert!(reg.get("nope").is_none());
    reg.retain(&["ls", "read"]);
    assert_eq!(reg.names(), ["read", "ls"]);
    let specs = reg.specs();
    assert_eq!(specs[1].name, "ls");
    assert_eq!(specs[1].schema["type"], "object");
}

#[tokio::test]
async fn invalid_arguments_name_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(dir.path());
    let out = call("read", json!({"path": "x", "limit": "ten"}), &c).await;
    assert!(out.is_error);
    assert!(text(&out).contains("`limit`"), "{}", text(&out));
    let out = call(
        "edit",
        json!({"path": "x", "edits": [{"old_string": "a"}]}),
        &c,
    )
    .await;
    assert!(out.is_error);
    let t = text(&out);
    assert!(t.contains("edits[0]") && t.contains("new_string"), "{t}");
    let out = call("bash", json!({}), &c).await;
    assert!(out.is_error);
    assert!(text(&out).contains("command"), "{}", text(&out));
}

// ---------------------------------------------------------------- read

#[tokio::test]
async fn read_numbers_lines_and_continues() {
    let dir = tempfile::tempdir().unwrap();
    let body: String = (1..=3000).map(|i| format!("row {i}\n")).collect();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/big.txt"), &body).unwrap();
    let c = ctx(dir.path());
    let out = call("read", json!({"path": "src/big.txt"}), &c).await;
    assert!(!out.is_error);
    let t = text(&out);
    assert!(t.starts_with("     1\trow 1\n"), "{}", &t[..40]);
    assert!(t.contains("  2000\trow 2000\n"));
    assert!(!t.contains("row 2001\n"));
    assert!(t.contains("offset=2001"), "{}", &t[t.len() - 200..]);
    assert!(t.contains("3000 lines"));
    match out.render {
        Some(RenderDescriptor::Code { path, lang, text }) => {
            assert_eq!(path.as_deref(), Some("src/big.txt"));
            assert_eq!(lang, None);
            assert!(text.starts_with("row 1\nrow 2\n"));
        }
        other => panic!("render {other:?}"),
    }
    let out = call("read", json!({"path": "src/big.txt", "offset": 2990}), &c).await;
    let t = text(&out);
    assert!(t.starts_with("  2990\trow 2990\n"), "{t}");
    assert!(t.trim_end().ends_with("  3000\trow 3000"), "{t}");
    // An absolute path inside the cwd is shown relative.
    let abs = dir.path().join("src/big.txt");
    let out = call("read", json!({"path": abs, "limit": 1}), &c).await;
    assert!(text(&out).contains("of src/big.txt"), "{}", text(&out));
}

#[tokio::test]
async fn read_respects_byte_limit() {
    let dir = tempfile::tempdir().unwrap();
    let line = "y".repeat(999);
    let body: String = (0..200).map(|_| format!("{line}\n")).collect();
    std::fs::write(dir.path().join("wide.txt"), &body).unwrap();
    let out = call("read", json!({"path": "wide.txt"}), &ctx(dir.path())).await;
    let t = text(&out);
    assert!(t.len() <= 50 * 1024 + 500, "{}", t.len());
    let shown = t.lines().filter(|l| l.contains('\t')).count();
    assert!(
        t.contains(&format!("offset={}", shown + 1)),
        "{}",
        &t[t.len() - 300..]
    );
}

#[tokio::test]
async fn read_refuses_binary_and_missing_and_dirs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.bin"), b"ELF\0\x01\x02binary").unwrap();
    let c = ctx(dir.path());
    let out = call("read", json!({"path": "a.bin"}), &c).await;
    assert!(out.is_error);
    assert!(text(&out).contains("binary"), "{}", text(&out));
    let out = call("read", json!({"path": "missing.txt"}), &c).await;
    assert!(out.is_error);
    assert!(text(&out).contains("not found"));
    let out = call("read", json!({"path": "."}), &c).await;
    assert!(out.is_error);
    assert!(text(&out).contains("directory"));
}

#[tokio::test]
async fn read_returns_images() {
    let dir = tempfile::tempdir().unwrap();
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";
    std::fs::write(dir.path().join("p.png"), png).unwrap();
    let mut c = ctx(dir.path());
    let out = call("read", json!({"path": "p.png"}), &c).await;
    match &out.content {
        ToolResultContent::Image { mime_type, data } => {
            assert_eq!(mime_type, "image/png");
            assert!(data.starts_with("iVBORw0KGgo"), "{data}");
        }
        other => panic!("{other:?}"),
    }
    c.accepts_images = false;
    let out = call("read", json!({"path": "p.png"}), &c).await;
    assert!(text(&out).contains("cannot view images"));
}

fn vm_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Runs in its own process (see `read_huge_file_in_small_memory`) so the memory peak is its own.
#[tokio::test]
#[ignore = "run by read_huge_file_in_small_memory in a child process"]
async fn child_read_huge_file() {
    if !is_child() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.log");
    // Text at the start, then a sparse gigabyte of NUL bytes: one enormous "line".
    let head: String = (1..=5000).map(|i| format!("entry {i}\n")).collect();
    std::fs::write(&path, &head).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let sparse_zero = dir.path().join("zero.img");
    std::fs::File::create(&sparse_zero)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let c = ctx(dir.path());
    let hwm_before = vm_kib("VmHWM:");
    let out = call("read", json!({"path": "huge.log"}), &c).await;
    let t = text(&out);
    assert!(!out.is_error, "{t}");
    assert!(t.contains("  2000\tentry 2000\n"));
    assert!(t.contains("offset=2001"));
    // Reading near the giant line cuts it and stops within bounds.
    let out = call(
        "read",
        json!({"path": "huge.log", "offset": 4999, "limit": 5}),
        &c,
    )
    .await;
    let t = text(&out);
    assert!(t.contains("  5000\tentry 5000"), "{t}");
    assert!(t.contains("line cut"), "{t}");
    let out = call("read", json!({"path": "zero.img"}), &c).await;
    assert!(out.is_error);
    assert!(text(&out).contains("binary"));
    let grown_mib = (vm_kib("VmHWM:") - hwm_before) / 1024;
    println!(
        "VmHWM grew by {grown_mib} MiB; VmRSS {} KiB",
        vm_kib("VmRSS:")
    );
    assert!(grown_mib < 64, "memory grew by {grown_mib} MiB");
}

#[test]
fn read_huge_file_in_small_memory() {
    let (ok, output) = run_child("child_read_huge_file", &[]);
    assert!(ok, "{output}");
}

// ---------------------------------------------------------------- write

#[tokio::test]
async fn write_creates_parents_and_keeps_permissions() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(dir.path());
    let out = call(
        "write",
        json!({"path": "a/b/c.sh", "content": "echo 1\n"}),
        &c,
    )
    .await;
    assert!(!out.is_error, "{}", text(&out));
    assert!(text(&out).contains("Created a/b/c.sh"));
    let p = dir.path().join("a/b/c.sh");
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "echo 1\n");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o751)).unwrap();
    let out = call(
        "write",
        json!({"path": "a/b/c.sh", "content": "echo 1\necho 2\n"}),
        &c,
    )
    .await;
    assert!(text(&out).contains("Replaced"));
    assert_eq!(
        std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o751
    );
    match out.render {
        Some(RenderDescriptor::Diff { path, hunks }) => {
            assert_eq!(path, "a/b/c.sh");
            assert_eq!(hunks.len(), 1);
            assert_eq!(hunks[0].lines, [" echo 1", "+echo 2"]);
            assert_eq!((hunks[0].old_start, hunks[0].old_lines), (1, 1));
            assert_eq!((hunks[0].new_start, hunks[0].new_lines), (1, 2));
        }
        other => panic!("{other:?}"),
    }
    // No temporary files are left behind.
    let names: Vec<_> = std::fs::read_dir(dir.path().join("a/b"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

// ---------------------------------------------------------------- edit

#[tokio::test]
async fn edit_keeps_crlf_bom_and_final_newline() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("win.txt");
    std::fs::write(&p, b"\xEF\xBB\xBFalpha\r\nbeta  \r\ngamma\r\n").unwrap();
    let c = ctx(dir.path());
    let out = call(
        "edit",
        json!({"path": "win.txt", "old_string": "alpha\nbeta", "new_string": "ALPHA\nBETA\nextra"}),
        &c,
    )
    .await;
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(
        std::fs::read(&p).unwrap(),
        b"\xEF\xBB\xBFALPHA\r\nBETA\r\nextra  \r\ngamma\r\n"
    );
    // No final newline stays without one.
    let q = dir.path().join("nofinal.txt");
    std::fs::write(&q, "one\ntwo").unwrap();
    call(
        "edit",
        json!({"path": "nofinal.txt", "old_string": "one", "new_string": "1"}),
        &c,
    )
    .await;
    assert_eq!(std::fs::read(&q).unwrap(), b"1\ntwo");
    match out.render {
        Some(RenderDescriptor::Diff { hunks, .. }) => {
            assert!(
                hunks[0].lines.contains(&"-alpha".to_string()),
                "{:?}",
                hunks[0].lines
            );
            assert!(
                hunks[0].lines.contains(&"+extra  ".to_string()),
                "{:?}",
                hunks[0].lines
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn edit_non_unique_lists_line_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("dup.rs");
    std::fs::write(&p, "let a = 1;\nfoo();\nlet b = 2;\nfoo();\n").unwrap();
    let out = call(
        "edit",
        json!({"path": "dup.rs", "old_string": "foo();", "new_string": "bar();"}),
        &ctx(dir.path()),
    )
    .await;
    assert!(out.is_error);
    let t = text(&out);
    assert!(t.contains("lines 2, 4"), "{t}");
    assert!(t.contains("replace_all"));
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        "let a = 1;\nfoo();\nlet b = 2;\nfoo();\n"
    );
}

#[tokio::test]
async fn failing_multi_edit_leaves_file_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.txt");
    let original = "first line\nsecond line\nthird line\n";
    std::fs::write(&p, original).unwrap();
    let before = std::fs::metadata(&p).unwrap().modified().unwrap();
    let c = ctx(dir.path());
    let out = call(
        "edit",
        json!({"path": "m.txt", "edits": [
            {"old_string": "first", "new_string": "1st"},
            {"old_string": "secnd line", "new_string": "2nd"}
        ]}),
        &c,
    )
    .await;
    assert!(out.is_error);
    let t = text(&out);
    assert!(t.contains("edits[1]"), "{t}");
    assert!(t.contains("     2\tsecond line"), "{t}");
    assert_eq!(std::fs::read_to_string(&p).unwrap(), original);
    assert_eq!(std::fs::metadata(&p).unwrap().modified().unwrap(), before);
    // The same edits, corrected, apply together.
    let out = call(
        "edit",
        json!({"path": "m.txt", "edits": [
            {"old_string": "first", "new_string": "1st"},
            {"old_string": "second line", "new_string": "2nd"}
        ]}),
        &c,
    )
    .await;
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        "1st line\n2nd\nthird line\n"
    );
}

// ---------------------------------------------------------------- bash

/// A tracker that remembers every group it ever saw, so tests can check them afterwards.
type Recording = (
    ProcessTracker,
    Arc<Mutex<Vec<i32>>>,
    tokio::sync::mpsc::UnboundedReceiver<Vec<i32>>,
);

fn recording_tracker() -> Recording {
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
async fn assert_groups_gone(groups: &[i32]) {
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

#[tokio::test]
async fn bash_runs_in_cwd_with_interleaved_output() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(dir.path());
    let out = call(
        "bash",
        json!({"command": "pwd; echo out1; echo err1 >&2; echo out2; echo \"$TERM $PAGER $GIT_PAGER\"; read x; echo \"stdin:$?\""}),
        &c,
    )
    .await;
    assert!(!out.is_error, "{}", text(&out));
    let t = text(&out);
    let real = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(
        t,
        format!(
            "{}\nout1\nerr1\nout2\ndumb cat cat\nstdin:1",
            real.display()
        )
    );
    assert_eq!(out.exit_code, Some(0));
    assert!(out.duration_ms.is_some());
}

#[tokio::test]
async fn bash_nonzero_exit_is_a_normal_result() {
    let dir = tempfile::tempdir().unwrap();
    let out = call(
        "bash",
        json!({"command": "echo failing; exit 3"}),
        &ctx(dir.path()),
    )
    .await;
    assert!(!out.is_error);
    assert_eq!(out.exit_code, Some(3));
    assert!(text(&out).contains("failing"));
    assert!(text(&out).contains("exit code 3"));
    assert!(out.duration_ms.is_some());
}

#[tokio::test]
async fn bash_spawn_failure_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(&dir.path().join("does-not-exist"));
    let out = call("bash", json!({"command": "true"}), &c).await;
    assert!(out.is_error);
    assert!(
        text(&out).contains("Could not start bash"),
        "{}",
        text(&out)
    );
    assert!(out.duration_ms.is_some());
}

#[tokio::test]
async fn bash_timeout_kills_grandchildren() {
    let dir = tempfile::tempdir().unwrap();
    let (tracker, seen, _rx) = recording_tracker();
    let mut c = ctx(dir.path());
    c.processes = tracker.clone();
    c.limits.kill_grace = Duration::from_millis(300);
    // A grandchild that ignores SIGTERM needs the SIGKILL after the grace period.
    let cmd = "echo started; bash -c 'trap \"\" TERM; sleep 1000' & sleep 1000 & wait";
    let out = call("bash", json!({"command": cmd, "timeout_ms": 300}), &c).await;
    assert!(out.is_error);
    let t = text(&out);
    assert!(t.contains("timed out after 300 ms"), "{t}");
    assert!(t.contains("started"), "{t}");
    assert!(out.duration_ms.is_some());
    let groups = seen.lock().unwrap().clone();
    assert_eq!(groups.len(), 1);
    assert_groups_gone(&groups).await;
    assert!(tracker.snapshot().is_empty());
}

#[tokio::test]
async fn bash_background_process_does_not_hang() {
    let dir = tempfile::tempdir().unwrap();
    let (tracker, seen, _rx) = recording_tracker();
    let mut c = ctx(dir.path());
    c.processes = tracker.clone();
    let out = call("bash", json!({"command": "sleep 100 & echo launched"}), &c).await;
    assert!(!out.is_error, "{}", text(&out));
    let t = text(&out);
    assert!(t.starts_with("launched"), "{t}");
    assert!(t.contains("background processes are still running"), "{t}");
    assert_eq!(out.exit_code, Some(0));
    // The group stays tracked while the background process lives, so the Runtime can
    // kill it on exit; here the test does that.
    let groups = seen.lock().unwrap().clone();
    assert_eq!(tracker.snapshot(), groups);
    tracker.kill_all();
    assert_groups_gone(&groups).await;
}

#[tokio::test]
async fn bash_background_flood_does_not_hide_exit() {
    let dir = tempfile::tempdir().unwrap();
    let (tracker, seen, _rx) = recording_tracker();
    let mut c = ctx(dir.path());
    c.processes = tracker.clone();
    // `yes` keeps the pipe full after the main process has exited.
    let out = call("bash", json!({"command": "yes flood & echo main-done"}), &c).await;
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(out.exit_code, Some(0));
    tracker.kill_all();
    let groups = seen.lock().unwrap().clone();
    assert_groups_gone(&groups).await;
}

#[tokio::test]
async fn bash_huge_output_is_cut_and_saved() {
    let dir = tempfile::tempdir().unwrap();
    let c = ctx(dir.path());
    let out = call(
        "bash",
        json!({"command": "seq 1 100000; echo done >&2"}),
        &c,
    )
    .await;
    assert!(!out.is_error);
    let t = text(&out);
    assert!(t.len() < 50 * 1024 + 1024, "{}", t.len());
    assert!(t.starts_with("1\n2\n3\n"));
    assert!(t.contains("\n100000\ndone"), "{}", &t[t.len() - 200..]);
    assert!(t.contains("lines") && t.contains("cut"));
    let saved = t
        .lines()
        .find_map(|l| l.split("saved to ").nth(1))
        .map(|rest| rest.trim_end_matches(" ...]").to_string())
        .expect("names the saved file");
    let saved = dir.path().join(saved);
    let full = std::fs::read_to_string(&saved).unwrap();
    let expected: String = (1..=100000).map(|i| format!("{i}\n")).collect::<String>() + "done\n";
    assert_eq!(full, expected);
    assert_eq!(
        std::fs::metadata(&saved).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let out_dir = dir.path().join(".shard-out");
    assert_eq!(
        std::fs::metadata(&out_dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
}

#[tokio::test]
async fn abort_mid_bash_ends_the_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let (tracker, seen, mut rx) = recording_tracker();
    let mut c = ctx(dir.path());
    c.processes = tracker.clone();
    c.limits.kill_grace = Duration::from_millis(300);
    let cancel = c.cancel.clone();
    let task = tokio::spawn(async move {
        tool("bash")
            .execute(json!({"command": "sleep 1000 & sleep 1001"}), &c)
            .await
    });
    // Abort once the process group is registered.
    let registered = tokio::time::timeout(HANG, rx.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(registered.len(), 1);
    cancel.cancel();
    let out = tokio::time::timeout(HANG, task).await.unwrap().unwrap();
    assert!(out.is_error);
    assert!(text(&out).contains("aborted"), "{}", text(&out));
    let groups = seen.lock().unwrap().clone();
    assert_groups_gone(&groups).await;
    assert!(tracker.snapshot().is_empty());
}

#[tokio::test]
async fn dropping_a_bash_call_kills_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let (tracker, seen, mut rx) = recording_tracker();
    let mut c = ctx(dir.path());
    c.processes = tracker.clone();
    let t = tool("bash");
    let call = t.execute(json!({"command": "sleep 1000 & sleep 1001"}), &c);
    // Poll the call until the group is registered, then drop it mid-run.
    let dropped = tokio::select! {
        _ = call => false,
        groups = rx.recv() => groups.is_some(),
    };
    assert!(dropped);
    let groups = seen.lock().unwrap().clone();
    assert_groups_gone(&groups).await;
    assert!(tracker.snapshot().is_empty());
}

/// Runs in a child process that exits abruptly while bash is running.
#[tokio::test]
#[ignore = "run by bash_dies_with_its_parent in a child process"]
async fn child_bash_parent_dies() {
    if !is_child() {
        return;
    }
    let (tracker, _seen, mut rx) = recording_tracker();
    let mut c = ctx(&std::env::temp_dir());
    c.processes = tracker;
    tokio::spawn(async move {
        // `exec` keeps the pid, and the parent-death signal survives exec.
        tool("bash")
            .execute(json!({"command": "exec sleep 1000"}), &c)
            .await
    });
    let groups = tokio::time::timeout(HANG, rx.recv())
        .await
        .unwrap()
        .unwrap();
    println!("PGID={}", groups[0]);
    use std::io::Write;
    std::io::stdout().flush().unwrap();
    // Like `kill -9` of the Runtime: no destructors, no cleanup code runs.
    std::process::exit(0);
}

#[test]
fn bash_dies_with_its_parent() {
    let (_, output) = run_child("child_bash_parent_dies", &[]);
    let pgid: i32 = output
        .lines()
        .find_map(|l| l.split("PGID=").nth(1))
        .unwrap_or_else(|| panic!("child printed no PGID: {output}"))
        .trim()
        .parse()
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(assert_groups_gone(&[pgid]));
}

/// Runs in a child process whose environment holds the secrets.
#[tokio::test]
#[ignore = "run by bash_never_sees_secrets in a child process"]
async fn child_bash_env() {
    if !is_child() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut c = ctx(dir.path());
    c.env_remove = Arc::new(vec!["FAKE_PROVIDER_API_KEY".to_string()]);
    let out = call(
        "bash",
        json!({"command": "echo \"key=[$FAKE_PROVIDER_API_KEY] token=[$SHARD_AGENT_TOKEN] other=[$KEEP_ME]\""}),
        &c,
    )
    .await;
    assert_eq!(text(&out), "key=[] token=[] other=[visible]");
}

#[test]
fn bash_never_sees_secrets() {
    let (ok, output) = run_child(
        "child_bash_env",
        &[
            ("FAKE_PROVIDER_API_KEY", "sk-secret"),
            ("SHARD_AGENT_TOKEN", "tok-secret"),
            ("KEEP_ME", "visible"),
        ],
    );
    assert!(ok, "{output}");
}

// ---------------------------------------------------------------- grep

fn write_tree(root: &Path, files: &[(&str, &str)]) {
    for (p, content) in files {
        let full = root.join(p);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }
}

#[tokio::test]
async fn grep_modes_context_and_filters() {
    let dir = tempfile::tempdir().unwrap();
    write_tree(
        dir.path(),
        &[
            ("src/a.rs", "fn alpha() {}\n// TODO: one\nlet x = 1;\n"),
            ("src/b.rs", "fn beta() {}\n// todo: two\n"),
            ("notes.md", "TODO: docs\n"),
            (".hidden/h.rs", "TODO hidden\n"),
            ("bin.dat", "TODO\0binary\n"),
        ],
    );
    let c = ctx(dir.path());
    let out = call("grep", json!({"pattern": "TODO"}), &c).await;
    let t = text(&out);
    assert_eq!(t, "notes.md:1:TODO: docs\nsrc/a.rs:2:// TODO: one");
    match &out.render {
        Some(RenderDescriptor::PathList { paths }) => {
            assert_eq!(paths.len(), 2);
            assert_eq!(paths[1].path, "src/a.rs");
            assert_eq!(paths[1].kind, PathKind::File);
            assert_eq!(paths[1].hint.as_deref(), Some("2: // TODO: one"));
        }
        other => panic!("{other:?}"),
    }
    let out = call(
        "grep",
        json!({"pattern": "todo", "ignore_case": true, "glob": "*.rs", "output": "files"}),
        &c,
    )
    .await;
    assert_eq!(text(&out), "src/a.rs\nsrc/b.rs");
    let out = call(
        "grep",
        json!({"pattern": "(?i)todo", "output": "count", "path": "src"}),
        &c,
    )
    .await;
    assert_eq!(text(&out), "src/a.rs:1\nsrc/b.rs:1");
    let out = call(
        "grep",
        json!({"pattern": "TODO: one", "context": 1, "path": "src/a.rs"}),
        &c,
    )
    .await;
    assert_eq!(
        text(&out),
        "src/a.rs-1-fn alpha() {}\nsrc/a.rs:2:// TODO: one\nsrc/a.rs-3-let x = 1;"
    );
    let out = call(
        "grep",
        json!({"pattern": "fn alpha()", "literal": true}),
        &c,
    )
    .await;
    assert_eq!(text(&out), "src/a.rs:1:fn alpha() {}");
    let out = call("grep", json!({"pattern": "fn alpha("}), &c).await;
    assert!(out.is_error);
    assert!(text(&out).contains("`pattern`"), "{}", text(&out));
    let out = call("grep", json!({"pattern": "nothing-matches-this"}), &c).await;
    assert!(!out.is_error);
    assert!(text(&out).contains("No matches"));
    let out = call("grep", json!({"pattern": "x", "path": "nope"}), &c).await;
    assert!(out.is_error);
}

#[tokio::test]
async fn grep_cuts_long_lines_and_honours_limit() {
    let dir = tempfile::tempdir().unwrap();
    let long = format!("needle {}\n", "z".repeat(3000));
    let many: String = (0..300).map(|i| format!("needle {i}\n")).collect();
    write_tree(dir.path(), &[("long.txt", &long), ("many.txt", &many)]);
    let c = ctx(dir.path());
    let out = call("grep", json!({"pattern": "needle", "path": "long.txt"}), &c).await;
    let t = text(&out);
    assert!(t.chars().count() < 600, "{}", t.len());
    assert!(t.ends_with('…'));
    let out = call("grep", json!({"pattern": "needle", "path": "many.txt"}), &c).await;
    let t = text(&out);
    assert_eq!(
        t.lines().filter(|l| l.starts_with("many.txt:")).count(),
        100
    );
    assert!(t.contains("limit of 100"), "{t}");
    let out = call(
        "grep",
        json!({"pattern": "needle", "path": "many.txt", "limit": 5}),
        &c,
    )
    .await;
    assert_eq!(
        text(&out)
            .lines()
            .filter(|l| l.starts_with("many.txt:"))
            .count(),
        5
    );
    // Exactly `limit` matches: no claim that there are more.
    let out = call(
        "grep",
        json!({"pattern": "needle", "path": "many.txt", "limit": 300}),
        &c,
    )
    .await;
    assert!(
        !text(&out).contains("Stopped at the limit"),
        "{}",
        text(&out)
    );
    // With context, the cut match's leading context is not shown either.
    let spaced: String = (0..20)
        .map(|i| format!("needle {i}\nfiller {i}\n"))
        .collect();
    write_tree(dir.path(), &[("spaced.txt", &spaced)]);
    let out = call(
        "grep",
        json!({"pattern": "needle", "path": "spaced.txt", "limit": 2, "context": 1}),
        &c,
    )
    .await;
    let t = text(&out);
    assert!(t.starts_with("spaced.txt:1:needle 0\nspaced.txt-2-filler 0\nspaced.txt:3:needle 1\nspaced.txt-4-filler 1\n"), "{t}");
    assert!(!t.contains("needle 2"), "{t}");
}

fn make_ignored_tree(root: &Path) {
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

#[tokio::test]
async fn grep_honours_gitignore_across_ten_thousand_files() {
    let dir = tempfile::tempdir().unwrap();
    make_ignored_tree(dir.path());
    let c = ctx(dir.path());
    let out = call(
        "grep",
        json!({"pattern": "marker", "output": "files", "limit": 1000}),
        &c,
    )
    .await;
    let t = text(&out);
    let files: Vec<&str> = t.lines().collect();
    assert_eq!(files.len(), 100, "{t}");
    assert!(
        files
            .iter()
            .all(|f| f.starts_with("kept/d") && f.ends_with("/f7.txt")),
        "{t}"
    );
    let mut sorted = files.clone();
    sorted.sort();
    assert_eq!(files, sorted);
    // Cross-check with ripgrep itself when it is installed.
    match std::process::Command::new("rg")
        .args(["--no-require-git", "-l", "marker"])
        .current_dir(dir.path())
        .output()
    {
        Ok(o) => {
            let mut rg: Vec<String> = String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(String::from)
                .collect();
            rg.sort();
            assert_eq!(rg, files);
        }
        Err(e) => println!("skipping the ripgrep cross-check: rg not runnable ({e})"),
    }
}

#[tokio::test]
async fn cancelled_grep_stops() {
    let dir = tempfile::tempdir().unwrap();
    make_ignored_tree(dir.path());
    let c = ctx(dir.path());
    c.cancel.cancel();
    let out = call("grep", json!({"pattern": "marker"}), &c).await;
    assert!(out.is_error);
    assert!(text(&out).contains("cancelled"));
    let out = call("find", json!({"pattern": "*.txt"}), &c).await;
    assert!(out.is_error);
}

// ---------------------------------------------------------------- find

#[tokio::test]
async fn find_globs_names_and_paths() {
    let dir = tempfile::tempdir().unwrap();
    write_tree(
        dir.path(),
        &[
            ("Cargo.toml", ""),
            ("src/lib.rs", ""),
            ("src/tests/t_one.rs", ""),
            ("target/debug/x.rs", ""),
            (".git/config.rs", ""),
            (".gitignore", "target/\n"),
        ],
    );
    let c = ctx(dir.path());
    let out = call("find", json!({"pattern": "*.rs"}), &c).await;
    assert_eq!(text(&out), "src/lib.rs\nsrc/tests/t_one.rs");
    let out = call("find", json!({"pattern": "src/*.rs"}), &c).await;
    assert_eq!(text(&out), "src/lib.rs");
    let out = call("find", json!({"pattern": "src/**/*.rs"}), &c).await;
    assert_eq!(text(&out), "src/lib.rs\nsrc/tests/t_one.rs");
    let out = call("find", json!({"pattern": "tests"}), &c).await;
    assert_eq!(text(&out), "src/tests/");
    match &out.render {
        Some(RenderDescriptor::PathList { paths }) => assert_eq!(paths[0].kind, PathKind::Dir),
        other => panic!("{other:?}"),
    }
    let out = call("find", json!({"pattern": "*.rs", "path": "src/tests"}), &c).await;
    assert_eq!(text(&out), "src/tests/t_one.rs");
    let out = call("find", json!({"pattern": "*", "limit": 2}), &c).await;
    assert!(text(&out).contains("limit of 2"), "{}", text(&out));
    let mut small = c.clone();
    small.limits.max_output_lines = 2;
    let out = call("find", json!({"pattern": "*"}), &small).await;
    let t = text(&out);
    assert_eq!(t.lines().count(), 3, "{t}");
    assert!(
        t.ends_with("[Output cut at the size limit; narrow the pattern or path.]"),
        "{t}"
    );
    match &out.render {
        Some(RenderDescriptor::PathList { paths }) => assert_eq!(paths.len(), 2),
        other => panic!("{other:?}"),
    }
    write_tree(
        dir.path(),
        &[("g/1", "x\n"), ("g/2", "x\n"), ("g/3", "x\n")],
    );
    let out = call("grep", json!({"pattern": "x", "output": "files"}), &small).await;
    assert_eq!(text(&out).lines().count(), 3, "{}", text(&out));
    let out = call("find", json!({"pattern": "a[", "path": "."}), &c).await;
    assert!(out.is_error);
    assert!(text(&out).contains("`pattern`"));
}

#[tokio::test]
async fn find_matches_fd_on_an_ignored_tree() {
    let dir = tempfile::tempdir().unwrap();
    make_ignored_tree(dir.path());
    let c = ctx(dir.path());
    let out = call("find", json!({"pattern": "f7.txt", "limit": 100000}), &c).await;
    let ours: Vec<String> = text(&out).lines().map(String::from).collect();
    assert_eq!(ours.len(), 100);
    let fd = ["fdfind", "fd"].into_iter().find_map(|bin| {
        std::process::Command::new(bin)
            .args(["--glob", "f7.txt"])
            .current_dir(dir.path())
            .output()
            .ok()
            .filter(|o| o.status.success())
    });
    match fd {
        Some(o) => {
            let mut theirs: Vec<String> = String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(|l| l.trim_start_matches("./").to_string())
                .collect();
            theirs.sort();
            assert_eq!(theirs, ours);
        }
        None => println!("skipping the fd cross-check: neither fdfind nor fd is installed"),
    }
}

// ---------------------------------------------------------------- ls

#[tokio::test]
async fn ls_lists_kinds_sizes_and_marks_dirs() {
    let dir = tempfile::tempdir().unwrap();
    write_tree(
        dir.path(),
        &[("b.txt", "12345"), ("sub/inner.txt", ""), (".env", "x")],
    );
    std::os::unix::fs::symlink("b.txt", dir.path().join("link")).unwrap();
    let c = ctx(dir.path());
    let out = call("ls", json!({}), &c).await;
    let t = text(&out);
    assert_eq!(
        t,
        ".env  (file, 1 bytes)\n.shard-out/  (dir)\nb.txt  (file, 5 bytes)\nlink  (link file, 5 bytes) -> b.txt\nsub/  (dir)"
            .replace(".shard-out/  (dir)\n", if dir.path().join(".shard-out").exists() { ".shard-out/  (dir)\n" } else { "" })
    );
    let out = call("ls", json!({"path": "sub"}), &c).await;
    assert_eq!(text(&out), "sub/inner.txt  (file, 0 bytes)");
    match &out.render {
        Some(RenderDescriptor::PathList { paths }) => {
            assert_eq!(paths[0].path, "sub/inner.txt");
            assert_eq!(paths[0].kind, PathKind::File);
        }
        other => panic!("{other:?}"),
    }
    let out = call("ls", json!({"limit": 2}), &c).await;
    assert!(text(&out).contains("2 of"), "{}", text(&out));
    let out = call("ls", json!({"path": "missing"}), &c).await;
    assert!(out.is_error);
    let out = call("ls", json!({"path": "/"}), &c).await;
    assert!(text(&out).contains("/tmp/"), "{}", text(&out));
}
