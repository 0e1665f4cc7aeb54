//! Widget and reducer tests: events through `App`, frames into a `TestBackend`,
//! compared with insta snapshots (colourless, so they read as text).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::{Value, json};
use shard_protocol::{Command, Event};

use super::app::{Action, App};
use super::editor::Editor;
use super::theme::Theme;
use super::ui;

pub(super) fn app() -> App {
    App::new(Editor::default(), Theme::plain(), std::env::temp_dir())
}

pub(super) fn ev(v: Value) -> Event {
    serde_json::from_value(v).expect("a valid event")
}

fn sync() -> Event {
    ev(
        json!({"type": "sync", "status": "idle", "mode": "build", "session_id": "sess-1",
        "live_window": {"messages": [
            {"id": "m1", "role": "user", "content": [{"type": "text", "text": "explain the plan"}]},
            {"id": "m2", "role": "assistant", "content": [
                {"type": "thinking", "text": "let me think\nabout it"},
                {"type": "text", "text": "## Steps\n1. read\n2. write\n```rust\nfn main() {}\n```"},
                {"type": "tool_call", "id": "c1", "name": "bash", "args": {"command": "cargo test"}}
            ]},
            {"id": "m3", "role": "user", "content": [{"type": "tool_result", "tool_call_id": "c1",
                "content": {"kind": "text", "text": "ok"}, "exit_code": 0, "duration_ms": 1200,
                "render": {"kind": "command", "command": "cargo test", "exitCode": 0, "durationMs": 1200}}]}
        ]},
        "pending_requests": []}),
    )
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        app.key(key(KeyCode::Char(c)));
    }
}

pub(super) fn frame(app: &mut App, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    t.draw(|f| ui::draw(f, app)).expect("draw");
    let buf = t.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut line = String::new();
        for x in 0..buf.area.width {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[test]
fn a_session_renders_at_sixty_columns() {
    let mut a = app();
    a.apply(&sync());
    a.apply(&ev(json!({"type": "usage", "input": 1200, "output": 300, "cost": 0.0123, "context_tokens": 1500, "model": "scripted/script"})));
    insta::assert_snapshot!(frame(&mut a, 60, 22));
}

#[test]
fn streaming_deltas_show_as_they_come_and_the_spinner_runs() {
    let mut a = app();
    a.apply(&sync());
    a.apply(&ev(json!({"type": "turn_start", "turn_id": "t1"})));
    a.apply(&ev(json!({"type": "message_delta", "message_id": "m9", "block_index": 0, "kind": "text", "text_delta": "Working on **it**"})));
    let f = frame(&mut a, 60, 12);
    assert!(f.contains("Working on it"), "{f}");
    assert!(f.contains("working"), "{f}");
    assert!(f.contains("Enter queues a follow-up"), "{f}");
}

#[test]
fn thinking_is_collapsed_until_ctrl_t() {
    let mut a = app();
    a.apply(&sync());
    let f = frame(&mut a, 60, 22);
    assert!(f.contains("▸ thinking (2 lines)"), "{f}");
    a.key(ctrl('t'));
    let f = frame(&mut a, 60, 22);
    assert!(f.contains("about it"), "{f}");
}

fn permission() -> Event {
    ev(
        json!({"type": "permission_request", "request_id": "r1", "tool_name": "bash",
        "input": {"command": "rm -rf build"}, "prompt": "Allow bash to run this command?",
        "options": ["allow", "allow_always", "deny"],
        "choices": [
            {"id": "allow", "label": "Allow once", "accelerator": "y", "intent": "allow"},
            {"id": "always", "label": "Always allow", "accelerator": "a", "intent": "persist"},
            {"id": "deny", "label": "Deny", "accelerator": "n", "intent": "deny"}
        ]}),
    )
}

#[test]
fn a_permission_prompt_owns_the_keyboard_and_answers_with_its_accelerator() {
    let mut a = app();
    a.apply(&sync());
    a.apply(&permission());
    insta::assert_snapshot!(frame(&mut a, 60, 16));
    // Typing goes to the prompt, not the input; `x` is no accelerator.
    typed(&mut a, "x");
    assert!(a.editor.text.is_empty());
    assert!(a.outbox.is_empty());
    a.key(key(KeyCode::Char('y')));
    let Some(Command::PermissionResponse(r)) = a.outbox.pop() else {
        panic!("no answer sent")
    };
    assert_eq!(r.request_id, "r1");
    assert_eq!(
        serde_json::to_value(&r.answer).expect("json")["choice_id"],
        "allow"
    );
    // Typing resumes once answered.
    typed(&mut a, "hi");
    assert_eq!(a.editor.text, "hi");
}

#[test]
fn an_edit_permission_shows_its_diff_in_a_window_that_pages() {
    let mut a = app();
    a.apply(&sync());
    let body: String = (0..30).map(|i| format!("+new {i}\n")).collect();
    a.apply(&ev(
        json!({"type": "permission_request", "request_id": "r2", "tool_name": "edit",
        "input": {"path": "notes.txt"}, "prompt": "Allow edit on notes.txt?",
        "options": ["allow", "deny"],
        "details": [{"label": "diff", "format": "diff",
            "value": format!("--- a/notes.txt\n+++ b/notes.txt\n@@ -1,1 +1,31 @@\n-old\n{body}")}],
        "choices": [
            {"id": "allow", "label": "Allow once", "accelerator": "y", "intent": "allow"},
            {"id": "deny", "label": "Deny", "accelerator": "n", "intent": "deny"}
        ]}),
    ));
    insta::assert_snapshot!(frame(&mut a, 60, 20));
    a.key(key(KeyCode::PageDown));
    let f = frame(&mut a, 60, 20);
    assert!(!f.contains("--- a/notes.txt"), "{f}");
    assert!(f.contains("[y] Allow once"), "{f}");
    a.key(key(KeyCode::End));
    let f = frame(&mut a, 60, 20);
    assert!(f.contains("+new 29"), "{f}");
    assert!(a.outbox.is_empty(), "scrolling answers nothing");
}

#[test]
fn escape_denies_a_permission_prompt() {
    let mut a = app();
    a.apply(&permission());
    a.key(key(KeyCode::Esc));
    let Some(Command::PermissionResponse(r)) = a.outbox.pop() else {
        panic!("no answer sent")
    };
    assert_eq!(
        serde_json::to_value(&r.answer).expect("json")["choice_id"],
        "deny"
    );
}

#[test]
fn an_observer_sees_the_prompt_but_cannot_answer() {
    let mut a = app();
    a.observer = true;
    a.apply(&permission());
    a.key(key(KeyCode::Char('y')));
    assert!(a.outbox.is_empty());
    let f = frame(&mut a, 60, 12);
    assert!(f.contains("waiting for an interactive client"), "{f}");
}

#[test]
fn enter_sends_queues_while_working_and_ctrl_enter_steers() {
    let mut a = app();
    a.apply(&sync());
    typed(&mut a, "first");
    a.key(key(KeyCode::Enter));
    let Some(Command::Prompt(p)) = a.outbox.pop() else {
        panic!("no prompt")
    };
    assert_eq!(p.message, "first");
    assert!(p.streaming_behavior.is_none());
    a.apply(&ev(json!({"type": "turn_start", "turn_id": "t1"})));
    typed(&mut a, "later");
    a.key(key(KeyCode::Enter));
    let Some(Command::Prompt(p)) = a.outbox.pop() else {
        panic!("no follow-up")
    };
    assert_eq!(
        serde_json::to_value(p.streaming_behavior).expect("json"),
        "follow_up"
    );
    typed(&mut a, "now");
    a.key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT));
    assert!(matches!(a.outbox.pop(), Some(Command::Steer(s)) if s.message == "now"));
    a.key(key(KeyCode::Esc));
    assert!(matches!(a.outbox.pop(), Some(Command::Abort(_))));
}

#[test]
fn shift_enter_and_ctrl_j_add_lines() {
    let mut a = app();
    typed(&mut a, "a");
    a.key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT));
    typed(&mut a, "b");
    a.key(ctrl('j'));
    typed(&mut a, "c");
    assert_eq!(a.editor.text, "a\nb\nc");
    assert!(a.outbox.is_empty());
}

#[test]
fn ctrl_c_twice_quits() {
    let mut a = app();
    typed(&mut a, "draft");
    assert!(a.key(ctrl('c')).is_empty());
    assert!(
        a.editor.text.is_empty(),
        "the first Ctrl+C clears the input"
    );
    assert_eq!(a.key(ctrl('c')), vec![Action::Quit]);
}

#[test]
fn slash_mode_sets_the_mode_and_the_status_line_follows() {
    let mut a = app();
    a.apply(&sync());
    typed(&mut a, "/mode plan");
    a.key(key(KeyCode::Enter));
    assert!(matches!(a.outbox.pop(), Some(Command::SetMode(m)) if m.mode == "plan"));
    a.apply(&ev(
        json!({"type": "mode_changed", "previous_mode": "build", "mode": "plan"}),
    ));
    let f = frame(&mut a, 60, 10);
    assert!(
        f.lines().last().is_some_and(|l| l.starts_with("plan")),
        "{f}"
    );
}

#[test]
fn tab_completes_commands() {
    let mut a = app();
    typed(&mut a, "/comp");
    a.key(key(KeyCode::Tab));
    assert_eq!(a.editor.text, "/compact ");
    let mut b = app();
    typed(&mut b, "/mo");
    let f = frame(&mut b, 60, 8);
    assert!(f.contains("/mode  /model"), "{f}");
}

#[test]
fn errors_of_slash_commands_are_shown() {
    let mut a = app();
    a.purposes.insert(7, super::slash::Purpose::Compact);
    a.reply(7, Err("compaction is not implemented yet".into()));
    let f = frame(&mut a, 60, 8);
    assert!(
        f.contains("error: compaction is not implemented yet"),
        "{f}"
    );
}

#[test]
fn help_lists_the_alt_enter_fallback() {
    let mut a = app();
    typed(&mut a, "/help");
    a.key(key(KeyCode::Enter));
    let f = frame(&mut a, 100, 30);
    assert!(f.contains("Alt+Enter"), "{f}");
}

#[test]
fn a_ui_select_is_answered_with_the_chosen_option() {
    let mut a = app();
    a.apply(&ev(
        json!({"type": "ui_request", "request_id": "u1", "kind": "select",
        "message": "Which one?", "options": ["A", "B"]}),
    ));
    a.key(key(KeyCode::Down));
    a.key(key(KeyCode::Enter));
    let Some(Command::UiResponse(r)) = a.outbox.pop() else {
        panic!("no answer")
    };
    assert_eq!(serde_json::to_value(r.value).expect("json"), "B");
}

#[test]
fn scrolling_moves_back_through_the_session_and_end_follows() {
    let mut a = app();
    a.apply(&sync());
    for i in 0..50 {
        a.note_text(format!("line {i}"), ratatui::style::Style::default());
    }
    let bottom = frame(&mut a, 60, 10);
    assert!(bottom.contains("line 49"), "{bottom}");
    a.key(key(KeyCode::PageUp));
    a.key(key(KeyCode::PageUp));
    let up = frame(&mut a, 60, 10);
    assert!(!up.contains("line 49"), "{up}");
    assert!(up.contains("lines above the bottom"), "{up}");
    a.key(KeyEvent::new(KeyCode::End, KeyModifiers::CONTROL));
    assert!(frame(&mut a, 60, 10).contains("line 49"));
}

#[test]
fn terminal_control_sequences_from_the_model_are_stripped() {
    let mut a = app();
    a.apply(&ev(json!({"type": "message_complete", "message_id": "m1", "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "safe\u{1b}]52;c;ZXZpbA==\u{7} text\u{1b}[2J"}]}})));
    let f = frame(&mut a, 60, 6);
    assert!(f.contains("safe text"), "{f}");
    assert!(!f.contains('\u{1b}'));
}

/// Frame cost with a 10,000-message session and a stream of deltas, drawing after every
/// delta (the loop batches a burst into one frame; this is the worst case). Run with
/// `cargo test --release -p shard-cli --bin shard frame_time -- --ignored --nocapture`
/// (bench/tui/run.sh does).
#[test]
#[ignore = "a benchmark: run by bench/tui/run.sh"]
fn frame_time_with_ten_thousand_messages() {
    let mut messages = Vec::new();
    for i in 0..10_000 {
        let (role, text) = if i % 2 == 0 {
            ("user", format!("question {i}"))
        } else {
            (
                "assistant",
                format!(
                    "## Answer {i}\n- a **point**\n- another `one`\n```rust\nfn f() -> u32 {{ {i} }}\n```"
                ),
            )
        };
        messages.push(json!({"id": format!("m{i}"), "role": role, "content": [{"type": "text", "text": text}]}));
    }
    let mut a = App::new(Editor::default(), Theme::from_env(), std::env::temp_dir());
    let t0 = std::time::Instant::now();
    a.apply(&ev(
        json!({"type": "sync", "status": "idle", "mode": "build",
        "live_window": {"messages": messages}, "pending_requests": []}),
    ));
    let sync_ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut term = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    let t0 = std::time::Instant::now();
    term.draw(|f| ui::draw(f, &mut a)).expect("draw");
    let first_ms = t0.elapsed().as_secs_f64() * 1e3;
    a.apply(&ev(json!({"type": "turn_start", "turn_id": "t1"})));
    let mut times = Vec::new();
    for i in 0..2_000 {
        let text = if i % 40 == 39 {
            "word\n".to_string()
        } else {
            format!("w{i} ")
        };
        a.apply(&ev(json!({"type": "message_delta", "message_id": "live", "block_index": 0, "kind": "text", "text_delta": text})));
        let t = std::time::Instant::now();
        term.draw(|f| ui::draw(f, &mut a)).expect("draw");
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    let p = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    println!(
        "sync of 10000 messages {sync_ms:.1} ms; first frame {first_ms:.2} ms; \
         frame after a delta: median {:.3} ms, p95 {:.3} ms, max {:.3} ms",
        p(0.5),
        p(0.95),
        p(1.0)
    );
    assert!(p(0.95) < 16.0, "p95 frame {:.2} ms", p(0.95));
}

#[test]
fn compaction_and_fork_answers_read_as_sentences() {
    let mut a = app();
    a.purposes.insert(7, super::slash::Purpose::Compact);
    a.reply(
        7,
        Ok(Some(serde_json::json!({
            "compacted": true, "index": 1, "tokens_before": 12345, "tokens_after": 2100,
            "first_kept_entry_id": "e9", "message_range": ["e1", "e8"]
        }))),
    );
    a.purposes.insert(8, super::slash::Purpose::Compact);
    a.reply(
        8,
        Ok(Some(
            serde_json::json!({"compacted": false, "reason": "no_safe_cut"}),
        )),
    );
    a.purposes.insert(9, super::slash::Purpose::Fork);
    a.reply(
        9,
        Ok(Some(serde_json::json!({
            "fork_id": "f1", "session_id": "s-forked", "head_entry_id": "e4"
        }))),
    );
    let f = frame(&mut a, 70, 12);
    assert!(f.contains("compacted: 12,345 \u{2192} 2,100 tokens"), "{f}");
    assert!(f.contains("nothing to compact (no safe cut)"), "{f}");
    assert!(f.contains("forked: session s-forked"), "{f}");
    assert!(!f.contains("first_kept_entry_id"), "{f}");
    insta::assert_snapshot!(f);
}

#[test]
fn token_counts_are_grouped_by_thousands() {
    use shard_protocol::responses::CompactData;
    let line = |before, after| {
        super::slash::compact_line(&CompactData::Compacted {
            compacted: true,
            index: 0,
            tokens_before: before,
            tokens_after: after,
            first_kept_entry_id: String::new(),
            message_range: [String::new(), String::new()],
        })
    };
    assert_eq!(line(999, 0), "compacted: 999 \u{2192} 0 tokens");
    assert_eq!(
        line(1_000, 1_234_567),
        "compacted: 1,000 \u{2192} 1,234,567 tokens"
    );
}

#[test]
fn scrolling_past_the_top_pages_in_older_history_once() {
    let mut a = app();
    a.apply(&ev(
        json!({"type": "sync", "status": "idle", "mode": "build", "session_id": "sess-1",
        "live_window": {"truncated_before": "m5", "messages": [
            {"id": "m5", "role": "user", "content": [{"type": "text", "text": "the newest question"}]}
        ]}, "pending_requests": []}),
    ));
    for i in 0..20 {
        a.note_text(format!("line {i}"), ratatui::style::Style::default());
    }
    frame(&mut a, 60, 10);
    assert!(a.outbox.is_empty(), "nothing asked while at the bottom");
    for _ in 0..5 {
        a.key(key(KeyCode::PageUp));
    }
    frame(&mut a, 60, 10);
    frame(&mut a, 60, 10);
    let asked: Vec<Value> = a
        .outbox
        .drain(..)
        .map(|c| serde_json::to_value(c).expect("json"))
        .collect();
    assert_eq!(asked.len(), 1, "one page at a time: {asked:?}");
    assert_eq!(asked[0]["op"], "history");
    assert_eq!(asked[0]["args"]["before"], "m5");

    a.purposes
        .insert(9, super::slash::Purpose::History("m5".into()));
    a.reply(
        9,
        Ok(Some(json!({"messages": [
            {"id": "m1", "role": "user", "content": [{"type": "text", "text": "the oldest words"}]},
            {"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "an old answer"}]}
        ]}))),
    );
    assert_eq!(a.view.messages.len(), 3);
    assert_eq!(a.view.messages[0].id, "m1");
    assert_eq!(a.view.truncated_before, None);
    for _ in 0..5 {
        a.key(key(KeyCode::PageUp));
    }
    let top = frame(&mut a, 60, 10);
    assert!(top.contains("the oldest words"), "{top}");
    assert!(a.outbox.is_empty(), "the start of the session was reached");
    // A note keeps its place after the newest message, below the older page.
    a.key(KeyEvent::new(KeyCode::End, KeyModifiers::CONTROL));
    assert!(frame(&mut a, 60, 10).contains("line 19"));
}

#[test]
fn a_stale_history_page_changes_nothing() {
    let mut v = shard_client::view::AgentView::new();
    v.apply(&ev(
        json!({"type": "sync", "status": "idle", "mode": "build",
        "live_window": {"truncated_before": "m9", "messages": [
            {"id": "m9", "role": "user", "content": [{"type": "text", "text": "now"}]}
        ]}, "pending_requests": []}),
    ));
    let old = vec![
        serde_json::from_value(
            json!({"id": "m1", "role": "user", "content": [{"type": "text", "text": "old"}]}),
        )
        .expect("message"),
    ];
    assert_eq!(v.prepend_history("m7", old.clone(), None), 0);
    assert_eq!(v.messages.len(), 1);
    assert_eq!(v.prepend_history("m9", old, Some("m1".into())), 1);
    assert_eq!(v.messages[0].id, "m1");
    assert_eq!(v.index_of("m9"), Some(1));
    assert_eq!(v.truncated_before.as_deref(), Some("m1"));
}

#[test]
fn a_large_paste_collapses_in_the_input_and_is_sent_whole() {
    let mut a = app();
    a.apply(&sync());
    let pasted: String = (0..15).map(|i| format!("line {i}\n")).collect();
    typed(&mut a, "look: ");
    a.paste(&pasted);
    assert_eq!(a.editor.text, "look: [Pasted 15 lines]");
    let f = frame(&mut a, 60, 12);
    assert!(f.contains("› look: [Pasted 15 lines]"), "{f}");
    a.paste("short\n");
    a.key(key(KeyCode::Enter));
    let Some(Command::Prompt(p)) = a.outbox.pop() else {
        panic!("no prompt")
    };
    assert_eq!(p.message, format!("look: {pasted}short\n"));
    assert!(a.pastes.is_empty());
}

#[test]
fn page_up_and_down_move_a_screen() {
    let mut a = app();
    a.apply(&sync());
    frame(&mut a, 60, 20);
    let page = a.page_rows;
    assert!(page > 10, "a screen, not a fixed step: {page}");
    a.key(key(KeyCode::PageUp));
    assert_eq!(a.scroll, page);
    a.key(key(KeyCode::PageDown));
    assert_eq!(a.scroll, 0);
}

#[test]
fn long_tool_output_expands_with_ctrl_o() {
    let mut a = app();
    a.apply(&sync());
    let out: String = (0..100).map(|i| format!("out {i}\n")).collect();
    a.apply(&ev(
        json!({"type": "tool_call", "tool_call_id": "c9", "name": "bash",
        "args": {"command": "seq 100"}}),
    ));
    a.apply(&ev(json!({"type": "tool_result", "tool_call_id": "c9",
        "content": {"kind": "text", "text": out}, "is_error": false})));
    a.apply(&ev(
        json!({"type": "message_complete", "message_id": "m9", "message": {
        "id": "m9", "role": "assistant", "content": [
            {"type": "tool_call", "id": "c9", "name": "bash", "args": {"command": "seq 100"}}]}}),
    ));
    let f = frame(&mut a, 60, 60);
    assert!(f.contains("more lines — Ctrl+O shows all"), "{f}");
    assert!(
        f.contains("Ctrl+O full tool output"),
        "the footer names the key: {f}"
    );
    assert!(!f.contains("out 99"), "{f}");
    a.key(ctrl('o'));
    let f = frame(&mut a, 60, 60);
    assert!(f.contains("out 99"), "{f}");
    assert!(!f.contains("more lines — Ctrl+O"), "{f}");
}

#[test]
fn fork_without_an_argument_picks_a_message() {
    let mut a = app();
    a.apply(&sync());
    typed(&mut a, "/fork");
    a.key(key(KeyCode::Enter));
    let f = frame(&mut a, 60, 16);
    assert!(f.contains("fork after which message?"), "{f}");
    assert!(f.contains("you: explain the plan"), "{f}");
    assert!(f.contains("assistant: ## Steps"), "{f}");
    assert!(a.outbox.is_empty(), "nothing sent before a pick");
    // Newest first: the assistant's answer, then the prompt.
    a.key(key(KeyCode::Down));
    a.key(key(KeyCode::Enter));
    let Some(Command::SessionOp(op)) = a.outbox.pop() else {
        panic!("no fork sent")
    };
    let v = serde_json::to_value(&op).expect("json");
    assert_eq!(v["op"], "fork");
    assert_eq!(v["args"]["from_entry_id"], "m1");
}
