//! The streaming journal's cost on the hot path: 100,000 `message_delta` events through
//! the Runtime's event writer (`write_events`) into a sink, without a journal (the writer
//! as it was) and with one (each delta's line also kept in `streaming.jsonl`, written once
//! per batch before the batch can reach the client). Same channel, same serialization.
//!
//! Run: `cargo bench -p shard-agent --bench journal`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use shard_agent::transport::write_events;
use shard_protocol::Event;
use shard_protocol::event::{DeltaKind, MessageDelta};
use shard_session::streaming::StreamJournal;

fn main() {
    divan::main();
}

const DELTAS: usize = 100_000;

fn delta() -> Event {
    Event::MessageDelta(MessageDelta {
        agent_id: None,
        message_id: "ent-01M8YKR4FXHSF9M9VV230DZ40Y".into(),
        block_index: 0,
        kind: DeltaKind::Text,
        text_delta: Some("word ".into()),
        tool_call_id: None,
        name: None,
        args_delta: None,
    })
}

fn run(journal: bool) {
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (tx, rx) = tokio::sync::mpsc::channel(1024);
        let j = journal.then(|| StreamJournal::new(dir.path()));
        let writer = tokio::spawn(write_events(tokio::io::sink(), rx, j));
        for _ in 0..DELTAS {
            tx.send(delta()).await.unwrap();
        }
        drop(tx);
        writer.await.unwrap();
    });
}

#[divan::bench(args = [false, true], sample_count = 10)]
fn deltas_through_the_writer(journal: bool) {
    run(journal);
}
