#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Behaviour of the session store as the Runtime and the daemon use it.

#[path = "session/first_meta.rs"]
mod first_meta;
#[path = "session/fork_index.rs"]
mod fork_index;

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;
use shard_protocol::ids;
use shard_protocol::types::{ContentBlock, Message, Role, ToolResultContent};
use shard_session::records::{atomic_write, locked_update};
use shard_session::{
    CompactionEntry, EntryKind, MessageEntry, SUMMARY_PREAMBLE, Session, SessionError,
    SessionStore, TITLE_CHARS,
};

struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
    cwd: PathBuf,
}

fn home() -> Home {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("shard-home");
    let cwd = dir.path().join("project");
    fs::create_dir_all(&cwd).unwrap();
    Home {
        _dir: dir,
        home,
        cwd,
    }
}

fn text(role: Role, t: &str) -> EntryKind {
    EntryKind::message(Message {
        id: String::new(),
        role,
        content: vec![ContentBlock::Text { text: t.into() }],
    })
}

fn user(t: &str) -> EntryKind {
    text(Role::User, t)
}

fn assistant(t: &str) -> EntryKind {
    text(Role::Assistant, t)
}

/// An assistant message that says `t` and calls a tool (its result must follow it: the
/// model's context pairs results with their calls).
fn calling(t: &str, call: &str) -> EntryKind {
    EntryKind::message(Message {
        id: String::new(),
        role: Role::Assistant,
        content: vec![
            ContentBlock::Text { text: t.into() },
            ContentBlock::ToolCall {
                id: call.into(),
                name: "bash".into(),
                args: Default::default(),
            },
        ],
    })
}

fn tool_result(call: &str, out: &str) -> EntryKind {
    EntryKind::message(Message {
        id: String::new(),
        role: Role::User,
        content: vec![ContentBlock::ToolResult {
            tool_call_id: call.into(),
            content: ToolResultContent::Text { text: out.into() },
            is_error: None,
            exit_code: Some(0),
            duration_ms: None,
            render: None,
            images: None,
        }],
    })
}

fn transcript(s: &Session) -> PathBuf {
    s.transcript_path()
}

fn raw_lines(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn texts(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|m| match &m.content[0] {
            ContentBlock::Text { text } => text.clone(),
            ContentBlock::ToolResult {
                content: ToolResultContent::Text { text },
                ..
            } => format!("result:{text}"),
            other => format!("{other:?}"),
        })
        .collect()
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn create_append_and_reopen_restores_state_and_messages() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    {
        let mut s = store.open_or_create(&id, &h.cwd).unwrap();
        assert_eq!(s.id(), id);
        assert_eq!(s.header().cwd, h.cwd.to_string_lossy());
        assert_eq!(s.header().version, 1);
        assert_eq!(s.state().entry_count, 0);
        s.append(EntryKind::ModeChange {
            mode: "plan".into(),
        })
        .unwrap();
        s.append(EntryKind::ModelChange {
            provider: "anthropic".into(),
            model: "claude".into(),
        })
        .unwrap();
        s.append(EntryKind::ReasoningLevelChange {
            level: "high".into(),
        })
        .unwrap();
        s.append(user("hello there")).unwrap();
        s.append(calling("hi", "call-1")).unwrap();
        s.append(EntryKind::ModeChange {
            mode: "build".into(),
        })
        .unwrap();
        let last = s.append(tool_result("call-1", "ok")).unwrap();
        s.sync_data().unwrap();
        assert_eq!(s.state().last_entry_id.as_deref(), Some(last.id.as_str()));
    }
    // Without meta.json (the full scan) and with it (the fast path) the state is the same.
    fs::remove_file(h.home.join("sessions").join(&id).join("meta.json")).unwrap();
    let scanned = {
        let s = store.open_existing(&id).unwrap();
        let state = s.state().clone();
        assert_eq!(state.mode.as_deref(), Some("build"));
        let model = state.model.clone().unwrap();
        assert_eq!(
            (model.provider.as_str(), model.model.as_str()),
            ("anthropic", "claude")
        );
        assert_eq!(state.reasoning_level.as_deref(), Some("high"));
        assert_eq!(state.entry_count, 7);
        assert_eq!(state.title.as_deref(), Some("hello there"));
        assert_eq!(
            texts(&s.context_messages().unwrap()),
            vec!["hello there", "hi", "result:ok"]
        );
        state
    };
    // The open above rewrote meta.json; this open trusts it.
    let s = store.open_existing(&id).unwrap();
    assert_eq!(s.state(), &scanned);
    assert!(s.torn().is_none());
}

#[test]
fn meta_fast_path_scans_only_the_tail_and_agrees_with_a_full_scan() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    {
        let mut s = store.open_or_create(&id, &h.cwd).unwrap();
        s.append(user("first")).unwrap();
        s.append(EntryKind::ModeChange { mode: "a".into() })
            .unwrap();
        s.write_meta().unwrap();
        // Appended after the meta was written: the next open must pick these up.
        s.append(EntryKind::ModeChange { mode: "b".into() })
            .unwrap();
        s.append(assistant("second")).unwrap();
    }
    let fast = store.open_existing(&id).unwrap().state().clone();
    assert_eq!(fast.mode.as_deref(), Some("b"));
    assert_eq!(fast.entry_count, 4);
    fs::remove_file(h.home.join("sessions").join(&id).join("meta.json")).unwrap();
    let full = store.open_existing(&id).unwrap().state().clone();
    assert_eq!(fast, full);

    // A meta that does not describe this transcript is ignored.
    let meta_path = h.home.join("sessions").join(&id).join("meta.json");
    let mut meta: Value = serde_json::from_slice(&fs::read(&meta_path).unwrap()).unwrap();
    meta["transcript_len"] = Value::from(90);
    meta["mode"] = Value::from("stale");
    fs::write(&meta_path, serde_json::to_vec(&meta).unwrap()).unwrap();
    let again = store.open_existing(&id).unwrap().state().clone();
    assert_eq!(again, full);
}

#[test]
fn message_id_is_entry_id_and_entries_chain_to_their_parent() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    let mut s = store.open_or_create(&id, &h.cwd).unwrap();
    let mut kind = user("q");
    if let EntryKind::Message(m) = &mut kind {
        m.message.id = "caller-chosen".into();
    }
    let a = s.append(kind).unwrap();
    let b = s
        .append(EntryKind::Message(MessageEntry {
            message: Message {
                id: String::new(),
                role: Role::Assistant,
                content: vec![ContentBlock::Text { text: "a".into() }],
            },
            aborted: true,
            stop_reason: Some("aborted".into()),
            usage: None,
            model: Some("m".into()),
        }))
        .unwrap();
    let c = s
        .append(EntryKind::ModeChange { mode: "x".into() })
        .unwrap();
    assert!(ids::is_valid(ids::ENTRY, &a.id));
    assert_eq!(a.parent_id, None);
    assert_eq!(b.parent_id.as_deref(), Some(a.id.as_str()));
    assert_eq!(c.parent_id.as_deref(), Some(b.id.as_str()));
    match &a.kind {
        EntryKind::Message(m) => assert_eq!(m.message.id, a.id),
        other => panic!("{other:?}"),
    }

    let text = fs::read_to_string(transcript(&s)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with(r#"{"type":"header","version":1,"#),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with(&format!(
            r#"{{"type":"message","id":"{}","parent_id":null,"timestamp":"#,
            a.id
        )),
        "{}",
        lines[1]
    );
    let raw = raw_lines(&transcript(&s));
    assert_eq!(raw[1]["message"]["id"], Value::from(a.id.clone()));
    assert_eq!(raw[2]["parent_id"], Value::from(a.id.clone()));
    assert_eq!(raw[2]["aborted"], Value::from(true));
    assert_eq!(raw[3]["type"], Value::from("mode_change"));
    assert_eq!(raw[3]["mode"], Value::from("x"));
    let messages = s.context_messages().unwrap();
    assert_eq!(messages[0].id, a.id);
    assert_eq!(messages[1].id, b.id);
}

#[test]
fn a_second_open_gets_conflict_naming_the_holder_pid() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    let first = store.open_or_create(&id, &h.cwd).unwrap();
    match store.open_existing(&id) {
        Err(SessionError::Conflict(msg)) => {
            assert!(
                msg.contains(&format!("in use by pid {}", std::process::id())),
                "{msg}"
            );
        }
        other => panic!("expected conflict, got {other:?}"),
    }
    assert!(matches!(
        store.open_or_create(&id, &h.cwd),
        Err(SessionError::Conflict(_))
    ));
    // inspect never locks.
    assert_eq!(store.inspect(&id).unwrap().session_id, id);
    drop(first);
    store.open_existing(&id).unwrap();
}

#[test]
fn torn_last_line_is_set_aside_and_appends_continue_cleanly() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    let path;
    let second;
    {
        let mut s = store.open_or_create(&id, &h.cwd).unwrap();
        s.append(user("one")).unwrap();
        second = s.append(assistant("two")).unwrap();
        s.write_meta().unwrap();
        path = transcript(&s);
    }
    let good_len = fs::metadata(&path).unwrap().len();
    let torn_bytes =
        br#"{"type":"message","id":"ent-01ARZ3NDEKTSV4RRFFQ69G5FAV","parent_id":"x","timest"#;
    fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(torn_bytes)
        .unwrap();

    let mut s = store.open_existing(&id).unwrap();
    let torn = s.torn().cloned().expect("torn line reported");
    assert_eq!(torn.offset, good_len);
    assert_eq!(torn.len, torn_bytes.len() as u64);
    assert_eq!(fs::read(&torn.path).unwrap(), torn_bytes);
    assert!(
        torn.path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("session.jsonl.torn-")
    );
    assert_eq!(mode(&torn.path), 0o600);
    assert_eq!(fs::metadata(&path).unwrap().len(), good_len);
    assert_eq!(s.state().entry_count, 2);

    let third = s.append(user("three")).unwrap();
    assert_eq!(third.parent_id.as_deref(), Some(second.id.as_str()));
    drop(s);
    let s = store.open_existing(&id).unwrap();
    assert!(s.torn().is_none());
    assert_eq!(s.state().entry_count, 3);
    assert_eq!(
        texts(&s.context_messages().unwrap()),
        vec!["one", "two", "three"]
    );
    assert_eq!(raw_lines(&path).len(), 4);
}

#[test]
fn a_complete_last_entry_missing_only_its_newline_is_kept() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    let path = {
        let mut s = store.open_or_create(&id, &h.cwd).unwrap();
        s.append(user("kept")).unwrap();
        transcript(&s)
    };
    let mut bytes = fs::read(&path).unwrap();
    assert_eq!(bytes.pop(), Some(b'\n'));
    fs::write(&path, &bytes).unwrap();
    let mut s = store.open_existing(&id).unwrap();
    assert!(s.torn().is_none());
    assert_eq!(s.state().entry_count, 1);
    s.append(assistant("next")).unwrap();
    assert_eq!(texts(&s.context_messages().unwrap()), vec!["kept", "next"]);
}

#[test]
fn unreadable_transcripts_are_corrupt() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let cases: [&[u8]; 5] = [
        b"",
        b"garbage\n",
        b"{\"type\":\"header\",\"version\":1,\"session_id\":\"sess-",
        b"{\"type\":\"message\",\"id\":\"ent-1\"}\n",
        b"{\"type\":\"header\",\"version\":99,\"session_id\":\"X\",\"cwd\":\"/\",\"created_at\":1}\n",
    ];
    for case in cases {
        let id = ids::new_id(ids::SESSION);
        let dir = h.home.join("sessions").join(&id);
        fs::create_dir_all(&dir).unwrap();
        let content = String::from_utf8_lossy(case).replace("\"X\"", &format!("\"{id}\""));
        fs::write(dir.join("session.jsonl"), content).unwrap();
        assert!(
            matches!(store.inspect(&id), Err(SessionError::Corrupt(_))),
            "inspect {:?}",
            String::from_utf8_lossy(case)
        );
        assert!(
            matches!(store.open_existing(&id), Err(SessionError::Corrupt(_))),
            "open {:?}",
            String::from_utf8_lossy(case)
        );
    }
    // A header naming another session is corrupt too.
    let id = ids::new_id(ids::SESSION);
    let other = ids::new_id(ids::SESSION);
    let dir = h.home.join("sessions").join(&id);
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("session.jsonl"),
        format!(
            "{{\"type\":\"header\",\"version\":1,\"session_id\":\"{other}\",\"cwd\":\"/\",\"created_at\":1}}\n"
        ),
    )
    .unwrap();
    assert!(matches!(store.inspect(&id), Err(SessionError::Corrupt(_))));
}

#[test]
fn missing_sessions_are_not_found() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    assert!(matches!(
        store.open_existing(&id),
        Err(SessionError::NotFound(_))
    ));
    assert!(matches!(store.inspect(&id), Err(SessionError::NotFound(_))));
    assert!(!h.home.join("sessions").join(&id).exists());
}

#[test]
fn unknown_kinds_and_unreadable_middle_lines_are_skipped() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    let (path, first) = {
        let mut s = store.open_or_create(&id, &h.cwd).unwrap();
        let first = s.append(user("before")).unwrap();
        (transcript(&s), first)
    };
    let unknown = ids::new_id(ids::ENTRY);
    let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
    writeln!(f, "this line is not json").unwrap();
    writeln!(
        f,
        r#"{{"type":"bookmark","id":"{unknown}","parent_id":"{}","timestamp":5,"label":"x"}}"#,
        first.id
    )
    .unwrap();
    drop(f);
    fs::remove_file(h.home.join("sessions").join(&id).join("meta.json")).unwrap();

    let mut s = store.open_existing(&id).unwrap();
    assert_eq!(s.state().skipped_lines, 1);
    assert_eq!(s.state().entry_count, 2);
    assert_eq!(s.state().last_entry_id.as_deref(), Some(unknown.as_str()));
    let next = s.append(assistant("after")).unwrap();
    assert_eq!(next.parent_id.as_deref(), Some(unknown.as_str()));
    assert_eq!(
        texts(&s.context_messages().unwrap()),
        vec!["before", "after"]
    );
    let window = s.live_window(1 << 20).unwrap();
    assert_eq!(texts(&window.messages), vec!["before", "after"]);
    assert_eq!(window.truncated_before, None);
}

#[test]
fn live_window_keeps_the_newest_messages_within_budget() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    let mut s = store.open_or_create(&id, &h.cwd).unwrap();
    let mut entries = Vec::new();
    for i in 0..10 {
        let body = format!("{i}:{}", "x".repeat(1000));
        entries.push(
            s.append(if i % 2 == 0 {
                user(&body)
            } else {
                assistant(&body)
            })
            .unwrap(),
        );
    }
    let one = serde_json::to_vec(&s.context_messages().unwrap()[0])
        .unwrap()
        .len();

    let all = s.live_window(1 << 20).unwrap();
    assert_eq!(all.messages.len(), 10);
    assert_eq!(all.truncated_before, None);
    assert_eq!(all.compaction_index, None);

    let window = s.live_window(one * 3 + one / 2).unwrap();
    assert_eq!(window.messages.len(), 3);
    assert_eq!(window.messages[0].id, entries[7].id);
    assert_eq!(window.messages[2].id, entries[9].id);
    assert_eq!(
        window.truncated_before.as_deref(),
        Some(entries[7].id.as_str())
    );
    let used: usize = window
        .messages
        .iter()
        .map(|m| serde_json::to_vec(m).unwrap().len())
        .sum();
    assert!(used <= one * 3 + one / 2);
}

#[test]
fn an_oversized_block_is_cut_instead_of_emptying_the_window() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    let mut s = store.open_or_create(&id, &h.cwd).unwrap();
    s.append(user("run it")).unwrap();
    s.append(calling("running", "c1")).unwrap();
    let big = s.append(tool_result("c1", &"y".repeat(200_000))).unwrap();
    let last = s.append(assistant("done")).unwrap();
    let budget = 16 * 1024;
    let window = s.live_window(budget).unwrap();
    let ids_in: Vec<&str> = window.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids_in[ids_in.len() - 1], last.id);
    assert!(ids_in.contains(&big.id.as_str()), "{ids_in:?}");
    let size: usize = window
        .messages
        .iter()
        .map(|m| serde_json::to_vec(m).unwrap().len())
        .sum();
    assert!(size <= budget, "{size}");
    let cut = window.messages.iter().find(|m| m.id == big.id).unwrap();
    match &cut.content[0] {
        ContentBlock::ToolResult {
            content: ToolResultContent::Text { text },
            ..
        } => assert!(text.contains("bytes cut"), "{}", &text[text.len() - 40..]),
        other => panic!("{other:?}"),
    }
    // The stored transcript is untouched.
    let full = s.context_messages().unwrap();
    assert_eq!(full[2].content, {
        let EntryKind::Message(m) = big.kind else {
            panic!()
        };
        m.message.content
    });
}

#[test]
fn compaction_starts_the_window_at_the_first_kept_entry_with_the_summary_first() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    let mut s = store.open_or_create(&id, &h.cwd).unwrap();
    let m: Vec<_> = ["m1", "m2", "m3", "m4", "m5"]
        .iter()
        .map(|t| s.append(user(t)).unwrap())
        .collect();
    let compaction = s
        .append(EntryKind::Compaction(CompactionEntry {
            index: 0,
            summary: "goal: test".into(),
            tokens_before: 1000,
            tokens_after: 100,
            first_kept_entry_id: m[3].id.clone(),
            message_range: [m[0].id.clone(), m[2].id.clone()],
        }))
        .unwrap();
    s.append(assistant("m6")).unwrap();
    assert_eq!(s.state().compaction_index, Some(0));

    let context = s.context_messages().unwrap();
    assert_eq!(context.len(), 4);
    assert_eq!(context[0].id, compaction.id);
    assert_eq!(context[0].role, Role::User);
    let summary = &texts(&context)[0];
    assert!(summary.starts_with(SUMMARY_PREAMBLE) && summary.contains("goal: test"));
    assert_eq!(texts(&context)[1..], ["m4", "m5", "m6"]);

    let window = s.live_window(1 << 20).unwrap();
    assert_eq!(window.messages, context);
    assert_eq!(window.compaction_index, Some(0));
    assert_eq!(window.truncated_before, None);

    // A budget with no room for the summary drops it (it is the oldest) and says so.
    let tail: usize = context[1..]
        .iter()
        .map(|m| serde_json::to_vec(m).unwrap().len())
        .sum();
    let window = s.live_window(tail + 10).unwrap();
    assert_eq!(texts(&window.messages), ["m4", "m5", "m6"]);
    assert_eq!(window.truncated_before.as_deref(), Some(m[3].id.as_str()));

    // A second compaction supersedes the first.
    let second = s
        .append(EntryKind::Compaction(CompactionEntry {
            index: 1,
            summary: "goal: test, later".into(),
            tokens_before: 500,
            tokens_after: 80,
            first_kept_entry_id: m[4].id.clone(),
            message_range: [m[3].id.clone(), m[3].id.clone()],
        }))
        .unwrap();
    drop(s);
    fs::remove_file(h.home.join("sessions").join(&id).join("meta.json")).unwrap();
    let s = store.open_existing(&id).unwrap();
    assert_eq!(s.state().compaction_index, Some(1));
    let context = s.context_messages().unwrap();
    assert_eq!(context[0].id, second.id);
    assert_eq!(texts(&context)[1..], ["m5", "m6"]);
}

fn wait_for_next_millisecond() {
    let now = ids::now_millis();
    while ids::now_millis() == now {
        std::thread::yield_now();
    }
}

#[test]
fn list_for_cwd_is_newest_first_with_titles_from_meta_only() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let other_cwd = h.cwd.join("elsewhere");
    let mut made = Vec::new();
    for (i, prompt) in ["first task", "second\n  task   here", &"long ".repeat(40)]
        .iter()
        .enumerate()
    {
        let id = ids::new_id(ids::SESSION);
        let mut s = store.open_or_create(&id, &h.cwd).unwrap();
        wait_for_next_millisecond();
        if i == 1 {
            // A tool result is not a prompt; the title comes from the first real prompt.
            s.append(tool_result("c", "noise")).unwrap();
        }
        s.append(user(prompt)).unwrap();
        s.write_meta().unwrap();
        made.push(id);
    }
    let elsewhere = ids::new_id(ids::SESSION);
    store.open_or_create(&elsewhere, &other_cwd).unwrap();
    let no_prompt = {
        wait_for_next_millisecond();
        let id = ids::new_id(ids::SESSION);
        store.open_or_create(&id, &h.cwd).unwrap();
        id
    };

    let list = store.list_for_cwd(&h.cwd).unwrap();
    let listed: Vec<&str> = list.iter().map(|m| m.session_id.as_str()).collect();
    assert_eq!(listed, [no_prompt.as_str(), &made[2], &made[1], &made[0]]);
    assert_eq!(list[0].title, None);
    assert_eq!(list[3].title.as_deref(), Some("first task"));
    assert_eq!(list[2].title.as_deref(), Some("second task here"));
    let long = list[1].title.as_deref().unwrap();
    assert_eq!(long.chars().count(), TITLE_CHARS + 1);
    assert!(long.ends_with('…'));
    assert_eq!(list[2].entry_count, 2);
    assert_eq!(store.latest_for_cwd(&h.cwd).unwrap(), Some(no_prompt));
    assert_eq!(
        store.latest_for_cwd(&other_cwd).unwrap(),
        Some(elsewhere.clone())
    );
    assert_eq!(store.latest_for_cwd(&h.cwd.join("none")).unwrap(), None);

    // Listing never reads transcripts: a session whose transcript is garbage still lists.
    fs::write(
        h.home.join("sessions").join(&made[0]).join("session.jsonl"),
        "garbage",
    )
    .unwrap();
    assert_eq!(store.list_for_cwd(&h.cwd).unwrap().len(), 4);
}

#[test]
fn files_are_0600_and_directories_0700() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    let mut s = store.open_or_create(&id, &h.cwd).unwrap();
    s.append(user("x")).unwrap();
    s.write_meta().unwrap();
    let dir = h.home.join("sessions").join(&id);
    assert_eq!(mode(&h.home), 0o700);
    assert_eq!(mode(&h.home.join("sessions")), 0o700);
    assert_eq!(mode(&dir), 0o700);
    for f in ["session.jsonl", "meta.json", "session.lock"] {
        assert_eq!(mode(&dir.join(f)), 0o600, "{f}");
    }
    let record = h.home.join("grants.json");
    atomic_write(&record, b"{}").unwrap();
    assert_eq!(mode(&record), 0o600);
    assert_eq!(fs::read(&record).unwrap(), b"{}");
}

#[test]
fn locked_update_loses_no_update_under_concurrent_threads() {
    let h = home();
    fs::create_dir_all(&h.home).unwrap();
    let record = h.home.join("counter.json");
    let threads = 8;
    let per_thread = 25;
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                for _ in 0..per_thread {
                    locked_update(&record, |current| {
                        let n: u64 = match current {
                            Some(bytes) => serde_json::from_slice(&bytes).unwrap(),
                            None => 0,
                        };
                        Ok::<_, SessionError>(serde_json::to_vec(&(n + 1)).unwrap())
                    })
                    .unwrap();
                }
            });
        }
    });
    let n: u64 = serde_json::from_slice(&fs::read(&record).unwrap()).unwrap();
    assert_eq!(n, threads * per_thread);
    assert_eq!(mode(&record), 0o600);

    // A failing change writes nothing.
    let err = locked_update(&record, |_| Err(SessionError::Corrupt("no".into())));
    assert!(matches!(err, Err(SessionError::Corrupt(_))));
    let n: u64 = serde_json::from_slice(&fs::read(&record).unwrap()).unwrap();
    assert_eq!(n, threads * per_thread);
}

#[test]
fn invalid_ids_are_rejected_before_touching_the_file_system() {
    let h = home();
    let store = SessionStore::new(&h.home);
    for bad in [
        "",
        "sess-../../etc/passwd",
        "../sess-01ARZ3NDEKTSV4RRFFQ69G5FAV",
        "agent-01ARZ3NDEKTSV4RRFFQ69G5FAV",
        "sess-01arz3ndektsv4rrffq69g5fav",
    ] {
        assert!(matches!(
            store.open_or_create(bad, &h.cwd),
            Err(SessionError::InvalidId(_))
        ));
        assert!(matches!(
            store.open_existing(bad),
            Err(SessionError::InvalidId(_))
        ));
        assert!(matches!(
            store.inspect(bad),
            Err(SessionError::InvalidId(_))
        ));
    }
    assert!(!h.home.exists());
}

#[test]
fn reopening_keeps_the_original_cwd() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    drop(store.open_or_create(&id, &h.cwd).unwrap());
    let s = store
        .open_or_create(&id, Path::new("/somewhere/else"))
        .unwrap();
    assert_eq!(s.header().cwd, h.cwd.to_string_lossy());
}

#[test]
fn an_open_trusts_meta_for_the_prefix_it_describes() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    let path = {
        let mut s = store.open_or_create(&id, &h.cwd).unwrap();
        s.append(user("p")).unwrap();
        s.append(EntryKind::ModeChange { mode: "a".into() })
            .unwrap();
        s.append(assistant("r")).unwrap();
        s.write_meta().unwrap();
        transcript(&s)
    };
    // Same length, different mode: only a full scan would see it.
    let text = fs::read_to_string(&path).unwrap();
    fs::write(&path, text.replace(r#""mode":"a""#, r#""mode":"z""#)).unwrap();
    assert_eq!(
        store.open_existing(&id).unwrap().state().mode.as_deref(),
        Some("a")
    );
    fs::remove_file(h.home.join("sessions").join(&id).join("meta.json")).unwrap();
    assert_eq!(
        store.open_existing(&id).unwrap().state().mode.as_deref(),
        Some("z")
    );
}

#[test]
fn a_torn_first_entry_after_the_header_is_set_aside() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    let path = transcript(&store.open_or_create(&id, &h.cwd).unwrap());
    let header_len = fs::metadata(&path).unwrap().len();
    fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(b"{\"type\":\"mess")
        .unwrap();
    let mut s = store.open_or_create(&id, &h.cwd).unwrap();
    assert_eq!(s.torn().map(|t| t.offset), Some(header_len));
    assert_eq!(s.state().entry_count, 0);
    let first = s.append(user("fresh")).unwrap();
    assert_eq!(first.parent_id, None);
    assert_eq!(texts(&s.context_messages().unwrap()), vec!["fresh"]);
}

#[test]
fn entries_can_be_visited_newest_first() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    let mut s = store.open_or_create(&id, &h.cwd).unwrap();
    let a = s.append(user("a")).unwrap();
    let b = s
        .append(EntryKind::ModeChange { mode: "m".into() })
        .unwrap();
    let c = s.append(assistant("c")).unwrap();
    let mut seen = Vec::new();
    s.for_each_entry_rev(|e| {
        seen.push(e.id);
        std::ops::ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(seen, [c.id.clone(), b.id, a.id]);
    let mut first_only = Vec::new();
    s.for_each_entry_rev(|e| {
        first_only.push(e.id);
        std::ops::ControlFlow::Break(())
    })
    .unwrap();
    assert_eq!(first_only, [c.id]);
}

#[test]
fn planned_compaction_reloads_as_summary_plus_kept_and_recall_returns_the_summarized() {
    use shard_session::NewCompaction;
    use shard_session::compact::plan_cut;
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    let mut s = store.open_or_create(&id, &h.cwd).unwrap();
    for i in 0..6 {
        s.append(user(&format!("prompt {i} {}", "x".repeat(400))))
            .unwrap();
        s.append(calling("looking", &format!("call-{i}"))).unwrap();
        s.append(tool_result(&format!("call-{i}"), &"y".repeat(400)))
            .unwrap();
        s.append(assistant(&format!("answer {i}"))).unwrap();
    }
    let context = s.context_messages().unwrap();
    let cut = plan_cut(&context, 0, 200).unwrap();
    // Keeps the last turn whole: 4 messages of roughly 100 + 5 + 100 + 5 tokens.
    assert_eq!(cut.first_kept, 20);
    let summarized: Vec<Message> = context[cut.summarized.clone()].to_vec();
    let (entry, c) = s
        .append_compaction(NewCompaction {
            summary: "goal: six prompts".into(),
            tokens_before: cut.tokens_before,
            tokens_after: cut.tokens_kept + 20,
            first_kept_entry_id: context[cut.first_kept].id.clone(),
            message_range: [
                summarized[0].id.clone(),
                summarized.last().unwrap().id.clone(),
            ],
        })
        .unwrap();
    assert_eq!(c.index, 0);
    assert_eq!(s.next_compaction_index(), 1);
    drop(s);

    let s = store.open_existing(&id).unwrap();
    let reloaded = s.context_messages().unwrap();
    assert_eq!(reloaded[0].id, entry.id);
    assert!(texts(&reloaded)[0].contains("goal: six prompts"));
    assert_eq!(reloaded[1..], context[20..]);
    assert_eq!(s.live_window(1 << 20).unwrap().compaction_index, Some(0));
    assert_eq!(s.recall(0).unwrap(), summarized);
    assert!(matches!(s.recall(1), Err(SessionError::NotFound(_))));
    // Nothing is cut twice: the new context offers no cut keeping a whole turn.
    assert_eq!(plan_cut(&reloaded, 1, 200), None);
}

#[test]
fn fork_copies_the_window_at_an_entry_into_a_new_session_and_leaves_the_source_alone() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    let mut s = store.open_or_create(&id, &h.cwd).unwrap();
    let first = s.append(user("first prompt")).unwrap();
    s.append(calling("reading", "c1")).unwrap();
    s.append(tool_result("c1", "out")).unwrap();
    let at = s.append(assistant("done")).unwrap();
    s.append(user("later")).unwrap();
    s.append(assistant("later answer")).unwrap();
    s.sync_data().unwrap();
    let before = fs::read(transcript(&s)).unwrap();
    let window_at: Vec<Message> = s.context_messages().unwrap()[..4].to_vec();

    let forked = store.fork(&s.reader().unwrap(), &at.id).unwrap();
    assert_eq!(
        fs::read(transcript(&s)).unwrap(),
        before,
        "source bytes changed"
    );
    assert!(forked.fork_id.starts_with("fork-"));
    let dir = h
        .home
        .join("sessions")
        .join(&id)
        .join("forks")
        .join(&forked.session_id);
    assert!(dir.join("session.jsonl").is_file());

    let f = store.open_existing(&forked.session_id).unwrap();
    let origin = f.header().forked_from.clone().unwrap();
    assert_eq!(origin.source_session_id, id);
    assert_eq!(origin.source_entry_id, at.id);
    assert_eq!(origin.fork_id, forked.fork_id);
    let lines = raw_lines(&transcript(&f));
    assert_eq!(lines[1]["type"], "checkpoint");
    assert_eq!(lines[1]["artifactKind"], "fork");
    assert_eq!(lines[1]["sourceSessionId"], id.as_str());
    assert_eq!(lines[1]["sourceEntryId"], at.id.as_str());
    assert_eq!(
        f.state().last_entry_id.as_deref(),
        Some(forked.head_entry_id.as_str())
    );
    let copied = f.context_messages().unwrap();
    assert_eq!(texts(&copied), texts(&window_at));
    assert!(copied.iter().all(|m| m.id != first.id && m.id != at.id));
    assert_eq!(f.state().message_count, 4);
    drop(f);

    let listed = store.list_for_cwd(&h.cwd).unwrap();
    assert_eq!(listed.len(), 2);
    let fork_meta = listed
        .iter()
        .find(|m| m.session_id == forked.session_id)
        .unwrap();
    assert_eq!(
        fork_meta.forked_from.as_ref().unwrap().source_entry_id,
        at.id
    );
    assert!(matches!(
        store.fork(&s.reader().unwrap(), "ent-01J00000000000000000000000"),
        Err(SessionError::NotFound(_))
    ));
}

#[test]
fn history_pages_back_to_the_summary_and_never_past_the_compaction() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    let mut s = store.open_or_create(&id, &h.cwd).unwrap();
    let before: Vec<_> = (0..4)
        .map(|i| s.append(user(&format!("old{i}"))).unwrap())
        .collect();
    let compaction = s
        .append(EntryKind::Compaction(CompactionEntry {
            index: 0,
            summary: "goal: paging".into(),
            tokens_before: 1000,
            tokens_after: 100,
            first_kept_entry_id: before[2].id.clone(),
            message_range: [before[0].id.clone(), before[1].id.clone()],
        }))
        .unwrap();
    for i in 0..40 {
        s.append(assistant(&format!("new{i:02}"))).unwrap();
    }
    let reader = s.reader().unwrap();
    let window = reader.live_window(400).unwrap();
    let mut seen = texts(&window.messages);
    let mut anchor = window.truncated_before.clone();
    let mut pages = 0;
    while let Some(before_id) = anchor {
        let page = reader.history(&before_id, 400).unwrap();
        assert!(
            !page.messages.is_empty(),
            "a page before {before_id} is empty"
        );
        let mut texts_of_page = texts(&page.messages);
        texts_of_page.append(&mut seen);
        seen = texts_of_page;
        anchor = page.truncated_before;
        pages += 1;
    }
    assert!(pages >= 3, "only {pages} pages");
    let mut expected = vec![seen[0].clone(), "old2".into(), "old3".into()];
    expected.extend((0..40).map(|i| format!("new{i:02}")));
    assert!(seen[0].starts_with(SUMMARY_PREAMBLE), "{seen:?}");
    assert_eq!(
        seen, expected,
        "every message once, in order, summary first"
    );

    // The summary opens the span: nothing before it; a summarized message or an
    // unknown id is not part of the span.
    assert!(
        reader
            .history(&compaction.id, 400)
            .unwrap()
            .messages
            .is_empty()
    );
    for outside in [before[0].id.as_str(), before[1].id.as_str(), "ent-unknown"] {
        assert!(
            matches!(reader.history(outside, 400), Err(SessionError::NotFound(_))),
            "{outside}"
        );
    }
}

#[test]
fn an_interruption_marks_the_message_before_it_and_is_no_message() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    let mut s = store.open_or_create(&id, &h.cwd).unwrap();
    let first = s.append(user("go")).unwrap();
    let partial = s.append(assistant("half an")).unwrap();
    s.append(EntryKind::interruption()).unwrap();
    let next = s.append(user("again")).unwrap();
    s.append(assistant("done")).unwrap();
    let w = s.live_window(1 << 20).unwrap();
    assert_eq!(w.messages.len(), 4, "the marker is no message");
    assert_eq!(w.interrupted_after, Some(vec![partial.id.clone()]));
    assert!(
        s.context_messages()
            .unwrap()
            .iter()
            .all(|m| !m.content.is_empty())
    );
    // History paging carries the mark with its page.
    let page = s.reader().unwrap().history(&next.id, 1 << 20).unwrap();
    assert_eq!(page.messages[0].id, first.id);
    assert_eq!(page.interrupted_after, Some(vec![partial.id]));
    drop(s);
    let reopened = store.open_or_create(&id, &h.cwd).unwrap();
    assert_eq!(reopened.state().message_count, 4);
}

#[test]
fn a_permission_answer_is_kept_and_comes_back_with_its_call() {
    let h = home();
    let store = SessionStore::new(&h.home);
    let id = ids::new_id(ids::SESSION);
    let mut s = store.open_or_create(&id, &h.cwd).unwrap();
    s.append(user("go")).unwrap();
    s.append(calling("writing", "c1")).unwrap();
    let answer: shard_protocol::PermissionAnswered = serde_json::from_value(serde_json::json!({
        "request_id": "perm-1", "tool_call_id": "c1", "tool_name": "write",
        "choice_id": "allow", "label": "Allow once", "source": "client-2 (a terminal)"}))
    .unwrap();
    s.append(EntryKind::PermissionAnswer(answer.clone()))
        .unwrap();
    s.append(tool_result("c1", "written")).unwrap();
    let next = s.append(user("again")).unwrap();
    s.append(assistant("done")).unwrap();
    let w = s.live_window(1 << 20).unwrap();
    assert_eq!(w.messages.len(), 5, "the answer is no message");
    assert_eq!(w.permission_answers, Some(vec![answer.clone()]));
    assert_eq!(
        s.context_messages().unwrap().len(),
        5,
        "nor part of the model's context"
    );
    // On disk it is its own kind, with no free-text reason.
    let lines = raw_lines(&transcript(&s));
    let rec = lines
        .iter()
        .find(|l| l["type"] == "permission_answer")
        .unwrap();
    assert_eq!(rec["source"], "client-2 (a terminal)");
    assert!(rec.get("reason").is_none());
    // A history page carries the answers of its own calls only.
    let page = s.reader().unwrap().history(&next.id, 1 << 20).unwrap();
    assert_eq!(page.permission_answers, Some(vec![answer.clone()]));
    // A page that holds neither the call nor its result has none.
    let first = s.live_window(1 << 20).unwrap().messages[1].id.clone();
    let older = s.reader().unwrap().history(&first, 1 << 20).unwrap();
    assert_eq!(older.permission_answers, None);
    drop(s);
    // Reopened, the record is still there.
    let reopened = store.open_or_create(&id, &h.cwd).unwrap();
    let w = reopened.live_window(1 << 20).unwrap();
    assert_eq!(w.permission_answers, Some(vec![answer]));
}
