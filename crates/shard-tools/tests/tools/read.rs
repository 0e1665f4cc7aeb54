//! The read tool.

use serde_json::json;
use shard_protocol::types::{RenderDescriptor, ToolResultContent};

use crate::common::*;

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
    let (ok, output) = run_child("read::child_read_huge_file", &[]);
    assert!(ok, "{output}");
}
