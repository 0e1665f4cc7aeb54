//! Tests of `edit.rs`, kept beside it so the module stays readable.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn op(old: &str, new: &str) -> NamedOp {
    NamedOp {
        label: "old_string".into(),
        op: EditOp {
            old_string: old.into(),
            new_string: new.into(),
            replace_all: false,
        },
    }
}

#[test]
fn the_permission_detail_is_the_diff_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "one\ntwo\n").unwrap();
    let ctx = ToolContext::new(dir.path(), dir.path());
    let tool = crate::Typed::new(EditTool);
    let details = crate::Tool::permission_details(
        &tool,
        &serde_json::json!({"path": "f.txt", "old_string": "two", "new_string": "TWO"}),
        &ctx,
    );
    assert_eq!(details.len(), 1);
    assert_eq!(details[0].format, Some(DetailFormat::Diff));
    assert_eq!(
        details[0].value,
        "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        "one\ntwo\n"
    );
    let failing = crate::Tool::permission_details(
        &tool,
        &serde_json::json!({"path": "f.txt", "old_string": "three", "new_string": "3"}),
        &ctx,
    );
    assert_eq!(failing[0].label.as_deref(), Some("will fail"));
    assert_eq!(failing[0].format, Some(DetailFormat::Text));
}

#[test]
fn a_write_detail_shows_a_new_file_against_dev_null() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(dir.path(), dir.path());
    let tool = crate::Typed::new(crate::write::WriteTool);
    let details = crate::Tool::permission_details(
        &tool,
        &serde_json::json!({"path": "n.txt", "content": "hi\n"}),
        &ctx,
    );
    assert_eq!(
        details[0].value,
        "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,1 @@\n+hi\n"
    );
    assert!(!dir.path().join("n.txt").exists());
}

fn run(original: &[u8], ops: &[NamedOp]) -> Result<Vec<u8>, String> {
    plan_edits(original, ops, "f").map(|p| apply(original, &p))
}

#[test]
fn crlf_bom_and_final_newline_are_kept() {
    let orig = b"\xEF\xBB\xBFfn a() {\r\n    one();  \r\n}\r\n";
    let out = run(
        orig,
        &[op(
            "fn a() {\n    one();",
            "fn a() {\n    two();\n    three();",
        )],
    )
    .unwrap();
    assert_eq!(
        out,
        b"\xEF\xBB\xBFfn a() {\r\n    two();\r\n    three();  \r\n}\r\n"
    );
}

#[test]
fn non_unique_lists_lines() {
    let err = run(b"x\ny\nx\nz\nx\n", &[op("x", "q")]).unwrap_err();
    assert!(err.contains("3 times"), "{err}");
    assert!(err.contains("lines 1, 3, 5"), "{err}");
}

#[test]
fn replace_all_replaces_every_occurrence() {
    let mut o = op("x", "q");
    o.op.replace_all = true;
    assert_eq!(run(b"x\ny\nx\n", &[o]).unwrap(), b"q\ny\nq\n");
}

#[test]
fn not_found_shows_candidates() {
    let err = run(
        b"fn main() {\n    let value = 1;\n}\n",
        &[op("let valeu = 1;", "x")],
    )
    .unwrap_err();
    assert!(err.contains("not found"), "{err}");
    assert!(err.contains("     2\t    let value = 1;"), "{err}");
}

#[test]
fn byte_prefilter() {
    assert!(similar_bytes("let value = 1;", "let valeu = 1;"));
    assert!(!similar_bytes("let value = 1;", "}}}}}}}}}}}}}}"));
}

#[test]
fn overlapping_edits_are_refused() {
    let ops = [
        NamedOp {
            label: "edits[0]".into(),
            op: op("abc", "x").op,
        },
        NamedOp {
            label: "edits[1]".into(),
            op: op("bcd", "y").op,
        },
    ];
    let err = run(b"abcde\n", &ops).unwrap_err();
    assert!(err.contains("edits[0] and edits[1] overlap"), "{err}");
}

#[test]
fn multi_edit_matches_against_original() {
    let ops = [
        NamedOp {
            label: "edits[0]".into(),
            op: op("a", "b").op,
        },
        NamedOp {
            label: "edits[1]".into(),
            op: op("b", "c").op,
        },
    ];
    assert_eq!(run(b"a b\n", &ops).unwrap(), b"b c\n");
}

#[test]
fn invalid_utf8_elsewhere_is_kept() {
    let out = run(b"\xff\xfe hello \x80\n", &[op("hello", "bye")]).unwrap();
    assert_eq!(out, b"\xff\xfe bye \x80\n");
}
