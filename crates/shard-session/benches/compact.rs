//! Compaction bookkeeping on a large session: everything a compaction does but the model
//! call. Writes a ~200 MB, ~1,000,000-token transcript (images carry most of the bytes,
//! text most of the tokens), loads its context as a Runtime holds it, then times the cut,
//! the durable append of the `compaction` entry and the new in-memory context; the reload
//! of a compacted session and a `recall` page are reported beside it.
//!
//! Run: `cargo bench -p shard-session --bench compact`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use shard_protocol::ids;
use shard_protocol::types::{ContentBlock, Message, Role, ToolResultContent};
use shard_session::compact::{estimate_tokens, plan_cut};
use shard_session::{EntryKind, NewCompaction, SessionStore, summary_message};

fn message(role: Role, content: Vec<ContentBlock>) -> EntryKind {
    EntryKind::message(Message {
        id: String::new(),
        role,
        content,
    })
}

/// A turn: a prompt with a screenshot (~1.6 MB), ten read calls with ~3 KB results, an
/// answer. About 8,300 tokens.
fn write_turn(session: &mut shard_session::Session, i: usize) {
    session
        .append(message(
            Role::User,
            vec![
                ContentBlock::Text {
                    text: format!("Turn {i}: the layout in this screenshot is broken, fix it"),
                },
                ContentBlock::Image {
                    data: "iVBORw0KGgo".repeat(150_000),
                    mime_type: "image/png".into(),
                },
            ],
        ))
        .unwrap();
    for c in 0..10 {
        let mut args = Map::new();
        args.insert("path".into(), Value::from(format!("src/view_{i}_{c}.rs")));
        session
            .append(message(
                Role::Assistant,
                vec![ContentBlock::ToolCall {
                    id: format!("call_{i}_{c}"),
                    name: "read".into(),
                    args,
                }],
            ))
            .unwrap();
        session
            .append(message(
                Role::User,
                vec![ContentBlock::ToolResult {
                    tool_call_id: format!("call_{i}_{c}"),
                    content: ToolResultContent::Text {
                        text: "fn render(&self) -> Layout { todo() }\n".repeat(80),
                    },
                    is_error: None,
                    exit_code: None,
                    duration_ms: Some(2),
                    render: None,
                    images: None,
                }],
            ))
            .unwrap();
    }
    session
        .append(message(
            Role::Assistant,
            vec![ContentBlock::Text {
                text: "The flex container lacked a min-width; fixed. ".repeat(10),
            }],
        ))
        .unwrap();
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let dir =
        tempfile::tempdir_in(std::env::var("SHARD_BENCH_DIR").unwrap_or("/tmp".into())).unwrap();
    let store = SessionStore::new(dir.path());
    let cwd = Path::new("/home/user/project");
    let id = ids::new_id(ids::SESSION);
    let mut s = store.open_or_create(&id, cwd).unwrap();
    let mut turns = 0;
    loop {
        write_turn(&mut s, turns);
        turns += 1;
        let len = s.state().transcript_len;
        if len >= 200 * 1024 * 1024 {
            break;
        }
    }
    s.sync_data().unwrap();
    let context: Vec<Arc<Message>> = s
        .context_messages()
        .unwrap()
        .into_iter()
        .map(Arc::new)
        .collect();
    let tokens: u64 = context.iter().map(|m| estimate_tokens(m)).sum();
    println!(
        "session: {turns} turns, {} messages, {:.0} MB, ~{tokens} tokens",
        context.len(),
        s.state().transcript_len as f64 / 1048576.0
    );

    let keep = 20_000;
    let started = Instant::now();
    let cut = plan_cut(&context, 0, keep).unwrap();
    let planned = started.elapsed();
    let first = context[cut.summarized.start].id.clone();
    let last = context[cut.summarized.end - 1].id.clone();
    let summary = "## Goal\nFix the layout.\n".repeat(200);
    let (entry, c) = s
        .append_compaction(NewCompaction {
            summary,
            tokens_before: cut.tokens_before,
            tokens_after: cut.tokens_kept + 1_200,
            first_kept_entry_id: context[cut.first_kept].id.clone(),
            message_range: [first, last],
        })
        .unwrap();
    let mut next: Vec<Arc<Message>> = vec![Arc::new(summary_message(&entry.id, &c))];
    next.extend(context[cut.first_kept..].iter().cloned());
    let total = started.elapsed();
    println!(
        "bookkeeping: cut {} (summarized {} messages), total with durable append and new \
         context {} (target <= 100 ms)",
        ms(planned),
        cut.summarized.len(),
        ms(total)
    );
    s.write_meta().unwrap();
    drop(s);

    let started = Instant::now();
    let s = store.open_existing(&id).unwrap();
    let reloaded = s.context_messages().unwrap();
    println!(
        "reopen + context of the compacted session: {} ({} messages)",
        ms(started.elapsed()),
        reloaded.len()
    );
    assert_eq!(reloaded.len(), next.len());
    let started = Instant::now();
    let recalled = s.recall(0).unwrap();
    println!(
        "recall(0): {} ({} messages read back)",
        ms(started.elapsed()),
        recalled.len()
    );
}
