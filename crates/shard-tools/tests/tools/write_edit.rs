//! The write and edit tools.

use std::os::unix::fs::PermissionsExt;

use serde_json::json;
use shard_protocol::types::RenderDescriptor;

use crate::common::*;

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
