//! Opening a large session: writes a ~200 MB transcript through the public API, then
//! times open (with a current meta, with none, with a stale one), `state()` and
//! `live_window(8 MiB)`, warm and with the file evicted from the page cache.
//!
//! Run: `cargo bench -p shard-session --bench open` (SHARD_BENCH_MB overrides the size).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::File;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::fcntl::{PosixFadviseAdvice, posix_fadvise};
use serde_json::{Map, Value};
use shard_protocol::ids;
use shard_protocol::types::{ContentBlock, Message, Role, ToolResultContent};
use shard_session::{CompactionEntry, DEFAULT_LIVE_WINDOW_BYTES, EntryKind, SessionStore};

fn message(role: Role, content: Vec<ContentBlock>) -> EntryKind {
    EntryKind::message(Message {
        id: String::new(),
        role,
        content,
    })
}

/// One realistic turn: a prompt, an assistant message with thinking and a tool call, a
/// tool result of ~8 KB, and a closing answer. About 11 KB on disk.
fn write_turn(session: &mut shard_session::Session, i: usize) {
    session
        .append(message(
            Role::User,
            vec![ContentBlock::Text {
                text: format!(
                    "Turn {i}: please look at src/module_{i}.rs and fix the failing test"
                ),
            }],
        ))
        .unwrap();
    let mut args = Map::new();
    args.insert("path".into(), Value::from(format!("src/module_{i}.rs")));
    session
        .append(message(
            Role::Assistant,
            vec![
                ContentBlock::Thinking {
                    text: "The user wants the test fixed; read the file first. ".repeat(8),
                    signature: Some("sig".repeat(40)),
                },
                ContentBlock::ToolCall {
                    id: format!("call_{i}"),
                    name: "read".into(),
                    args,
                },
            ],
        ))
        .unwrap();
    let body: String = (0..120)
        .map(|l| format!("{l:>4}\tfn line_{l}() -> u32 {{ \"quoted\\tvalue\".len() as u32 }}\n"))
        .collect();
    session
        .append(message(
            Role::User,
            vec![ContentBlock::ToolResult {
                tool_call_id: format!("call_{i}"),
                content: ToolResultContent::Text { text: body },
                is_error: None,
                exit_code: None,
                duration_ms: Some(3),
                render: None,
                images: None,
            }],
        ))
        .unwrap();
    session
        .append(message(
            Role::Assistant,
            vec![ContentBlock::Text {
                text: "I changed the comparison and the test passes now. ".repeat(6),
            }],
        ))
        .unwrap();
    if i.is_multiple_of(500) {
        session
            .append(EntryKind::ModeChange {
                mode: if i.is_multiple_of(1000) {
                    "build"
                } else {
                    "plan"
                }
                .into(),
            })
            .unwrap();
    }
}

fn evict(path: &Path) {
    let f = File::open(path).unwrap();
    f.sync_all().unwrap();
    posix_fadvise(&f, 0, 0, PosixFadviseAdvice::POSIX_FADV_DONTNEED).unwrap();
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let target_mb: u64 = std::env::var("SHARD_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let dir =
        tempfile::tempdir_in(std::env::var("SHARD_BENCH_DIR").unwrap_or("/tmp".into())).unwrap();
    let store = SessionStore::new(dir.path());
    let cwd = Path::new("/home/user/project");
    let id = ids::new_id(ids::SESSION);

    let started = Instant::now();
    let mut turns = 0;
    let (path, len) = {
        let mut s = store.open_or_create(&id, cwd).unwrap();
        while s.state().transcript_len < target_mb * 1024 * 1024 {
            write_turn(&mut s, turns);
            turns += 1;
        }
        s.write_meta().unwrap();
        (s.transcript_path(), s.state().transcript_len)
    };
    let write = started.elapsed();
    let mb = len as f64 / (1024.0 * 1024.0);
    println!(
        "wrote {mb:.0} MiB ({turns} turns) through append in {} ({:.0} MiB/s)",
        ms(write),
        mb / write.as_secs_f64()
    );
    let meta = dir.path().join("sessions").join(&id).join("meta.json");

    let measure = |label: &str, cold: bool| {
        if cold {
            evict(&path);
        } else {
            // Warm: the whole transcript in the page cache first.
            std::io::copy(&mut File::open(&path).unwrap(), &mut std::io::sink()).unwrap();
        }
        let t = Instant::now();
        let s = store.open_existing(&id).unwrap();
        let open = t.elapsed();
        let t = Instant::now();
        let count = s.state().entry_count;
        let state = t.elapsed();
        let t = Instant::now();
        let window = s.live_window(DEFAULT_LIVE_WINDOW_BYTES).unwrap();
        let live = t.elapsed();
        println!(
            "{label:<34} {}: open {:>9}  state() {:>7}  live_window(8 MiB) {:>9} ({} msgs)  total {:>9}  [{count} entries]",
            if cold { "cold" } else { "warm" },
            ms(open),
            ms(state),
            ms(live),
            window.messages.len(),
            ms(open + state + live)
        );
    };

    for cold in [false, false, true, true] {
        measure("current meta.json (fast path)", cold);
    }
    for cold in [false, false, true, true] {
        std::fs::remove_file(&meta).unwrap();
        measure("no meta.json (full scan)", cold);
    }
    // 10 MiB appended after the meta was last written: only that tail is scanned.
    {
        let mut s = store.open_existing(&id).unwrap();
        s.write_meta().unwrap();
        let stop = s.state().transcript_len + 10 * 1024 * 1024;
        while s.state().transcript_len < stop {
            write_turn(&mut s, turns);
            turns += 1;
        }
    }
    measure("meta 10 MiB behind (tail scan)", true);

    // Compact all but the last 40 turns: context_messages reads only the kept tail.
    {
        let mut s = store.open_existing(&id).unwrap();
        let mut kept = Vec::new();
        s.for_each_entry_rev(|e| {
            if matches!(e.kind, EntryKind::Message(_)) {
                kept.push(e.id);
            }
            if kept.len() == 161 {
                std::ops::ControlFlow::Break(())
            } else {
                std::ops::ControlFlow::Continue(())
            }
        })
        .unwrap();
        s.append(EntryKind::Compaction(CompactionEntry {
            index: 0,
            summary: "summary ".repeat(500),
            tokens_before: 50_000_000,
            tokens_after: 40_000,
            first_kept_entry_id: kept[159].clone(),
            message_range: [String::new(), kept[160].clone()],
        }))
        .unwrap();
        s.write_meta().unwrap();
    }
    evict(&path);
    let s = store.open_existing(&id).unwrap();
    let t = Instant::now();
    let context = s.context_messages().unwrap();
    println!(
        "context_messages after compaction  cold: {:>9} ({} msgs)",
        ms(t.elapsed()),
        context.len()
    );
}
