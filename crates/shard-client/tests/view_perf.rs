//! Cost of the client-side reducer per streamed delta (docs/architecture.md#what-good-means: microseconds per
//! delta). Ignored by default; run with
//! `cargo test --release -p shard-client --test view_perf -- --ignored --nocapture`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::Instant;

use serde_json::json;
use shard_client::sanitize::Sanitizer;
use shard_client::view::{AgentView, Change};
use shard_protocol::Event;

#[test]
#[ignore = "a measurement, not a check"]
fn per_delta_cost_with_a_long_live_window() {
    let messages: Vec<_> = (0..2000)
        .map(|i| {
            json!({"id": format!("ent-{i}"), "role": if i % 2 == 0 { "user" } else { "assistant" },
                        "content": [{"type": "text", "text": "x".repeat(200)}]})
        })
        .collect();
    let sync: Event = serde_json::from_value(json!({"type": "sync", "status": "streaming",
        "mode": "build", "live_window": {"messages": messages}, "pending_requests": []}))
    .unwrap();
    let n = 200_000;
    let deltas: Vec<Event> = (0..n)
        .map(|i| {
            serde_json::from_value(json!({"type": "message_delta", "message_id": "ent-new",
                "block_index": 0, "kind": "text", "text_delta": format!("tok{i} ")}))
            .unwrap()
        })
        .collect();
    let mut view = AgentView::new();
    view.apply(&sync);
    let mut sanitizer = Sanitizer::new();
    let mut printed = 0usize;
    let start = Instant::now();
    for d in &deltas {
        for c in view.apply(d) {
            if let Change::Delta { text, .. } = c {
                printed += sanitizer.push(&text).len();
            }
        }
    }
    let per = start.elapsed() / n;
    println!(
        "AgentView::apply + sanitize per text delta, 2,000-message window: {per:?} ({printed} bytes)"
    );
    assert!(printed > 0);
}
