//! Attack suite: a hard link inside the workspace to a file the gate would refuse (a
//! deny rule, a secret location) gives the path tools no way around the rule.

use serde_json::json;

use crate::gate::run_calls;
use crate::harness::*;

#[test]
fn a_hard_link_to_a_denied_file_is_neither_read_nor_written() {
    let sb = Sandbox::new();
    let outside = sb.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let secret = outside.join("key.txt");
    std::fs::write(&secret, "TOPSECRET\n").unwrap();
    sb.config(&format!(
        "[[permissions.deny]]\ntool = \"read\"\npath = \"{}/**\"\n",
        outside.display()
    ));
    std::fs::hard_link(&secret, sb.work().join("notes.txt")).unwrap();
    std::fs::write(sb.work().join("plain.txt"), "plain\n").unwrap();
    let calls = [
        ("read", "read", json!({"path": "notes.txt"})),
        ("grep", "grep", json!({"pattern": "TOP.ECRET"})),
        (
            "edit",
            "edit",
            json!({"path": "notes.txt", "old_string": "TOPSECRET", "new_string": "changed"}),
        ),
        (
            "write",
            "write",
            json!({"path": "notes.txt", "content": "overwritten\n"}),
        ),
        ("plain", "read", json!({"path": "plain.txt"})),
    ];
    let (results, _) = run_calls(&sb, &calls, &[], |_| "allow");
    assert_eq!(results.len(), calls.len());
    for r in &results {
        let text = result_text(&r.content);
        assert!(!text.contains("TOPSECRET"), "leaked: {r:?}");
        match r.tool_call_id.as_str() {
            "plain" => assert!(!r.is_error, "{r:?}"),
            "grep" => assert!(!text.contains("notes.txt"), "{r:?}"),
            _ => {
                assert!(r.is_error, "{r:?}");
                assert!(text.contains("hard links"), "{r:?}");
            }
        }
    }
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "TOPSECRET\n");
}
