//! The terminal client in a real terminal (tmux): results drawn as a person reads them —
//! a short title, a directory listing, a Markdown table in columns.

use serde_json::json;

use crate::harness::*;
use crate::tui::{Tmux, have_tmux, scripted};

#[test]
fn a_listing_a_title_and_a_table_in_a_real_terminal() {
    if !have_tmux() {
        return;
    }
    let sb = Sandbox::new();
    std::fs::create_dir(sb.work().join("src")).unwrap();
    std::fs::write(sb.work().join("notes.txt"), "hi\n").unwrap();
    let script = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("l1", "ls", json!({"path": "."})),
            text_turn("| crate | tests |\n|---|---:|\n| shard-cli | 185 |\n| web | 17 |\n")
        ]}),
    );
    let mut args = scripted(&script);
    args.push("--no-daemon");
    let t = Tmux::start(&sb, &args, 80, 24);
    t.wait("type a prompt");
    t.type_text("main", "list it");
    t.keys(&["Enter"]);
    let s = t.wait("shard-cli │ 185");
    assert!(s.contains("⚙ ls ."), "{s}");
    assert!(s.contains("  src/"), "{s}");
    assert!(s.contains("  notes.txt  file"), "{s}");
    assert!(s.contains("crate     │ tests"), "{s}");
    assert!(s.contains("web       │ 17"), "{s}");
}
