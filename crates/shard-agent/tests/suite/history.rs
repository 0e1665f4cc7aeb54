//! `session_op history`: paging back from the newest message until the start
//! of the session returns every message once, oldest first, and bad ids get one error.

use serde_json::json;
use shard_protocol::ErrorCode;
use shard_protocol::responses::SessionHistoryData;
use shard_protocol::types::Message;

use super::support::*;

fn ids(messages: &[Message]) -> Vec<String> {
    messages.iter().map(|m| m.id.clone()).collect()
}

/// The size of messages as they go over the wire.
fn wire_len(messages: &[Message]) -> usize {
    serde_json::to_string(messages)
        .expect("messages encode")
        .len()
}

#[tokio::test]
async fn history_pages_back_to_the_start_and_rejects_bad_ids() {
    let dirs = Dirs::new();
    let replies = (0..8)
        .map(|i| Reply::text(&format!("answer {i}")))
        .collect();
    let rec = Recorder::new(replies);
    let mut a = Agent::start(Start::new(&dirs, &rec)).await;
    for i in 0..8 {
        // ~3 KiB per prompt: the whole session is several 4 KiB pages.
        a.prompt(&format!("prompt {i} {}", "x".repeat(3000))).await;
    }
    a.send(json!({"type": "request_sync"})).await;
    let sync = a.until_event(pick::sync).await;
    let window = &sync.live_window;
    assert_eq!(window.truncated_before, None, "{window:?}");
    let all = ids(&window.messages);
    assert_eq!(all.len(), 16);

    // Page back from the newest message: everything before it, in several pages.
    let mut before = all.last().expect("a message").clone();
    let mut paged: Vec<String> = vec![before.clone()];
    let mut pages = 0;
    loop {
        let page: SessionHistoryData = a
            .call_as(json!({"type": "session_op", "op": "history",
                         "args": {"before": before, "max_bytes": 4096}}))
            .await;
        pages += 1;
        let got = ids(&page.messages);
        assert!(!got.is_empty(), "an empty page before {before}: {page:?}");
        let mut next = got.clone();
        next.extend(paged);
        paged = next;
        match page.truncated_before {
            Some(t) => {
                assert_eq!(t, got[0], "the page's first message");
                before = got[0].clone();
            }
            None => break,
        }
        assert!(pages < 20, "paging never reached the start");
    }
    assert!(pages >= 3, "the session fit in {pages} pages");
    assert_eq!(paged, all, "pages are the whole session, oldest first");

    // The first message has nothing before it.
    let first: SessionHistoryData = a
        .call_as(json!({"type": "session_op", "op": "history", "args": {"before": all[0]}}))
        .await;
    assert!(first.messages.is_empty(), "{first:?}");
    assert_eq!(first.truncated_before, None);

    // Default budget: one page holds the rest.
    let rest: SessionHistoryData = a
        .call_as(json!({"type": "session_op", "op": "history",
                     "args": {"before": all[15]}}))
        .await;
    assert_eq!(ids(&rest.messages), all[..15].to_vec());
    assert_eq!(rest.truncated_before, None);

    for (args, code) in [
        (
            json!({"before": "ent-01J00000000000000000000000"}),
            ErrorCode::NotFound,
        ),
        (json!({}), ErrorCode::InvalidRequest),
        (json!({"before": ""}), ErrorCode::InvalidRequest),
    ] {
        let got = a
            .fails(json!({"type": "session_op", "op": "history", "args": args}))
            .await;
        assert_eq!(got, code, "{args}");
    }
    rec.assert_clean();
    a.close().await;
}

/// `SHARD_LIVE_WINDOW_BYTES` (tests of clients that page): the `sync` window and every
/// history page stay within it, and paging still yields the whole session once.
#[tokio::test]
async fn a_lowered_live_window_truncates_sync_and_sizes_history_pages() {
    let dirs = Dirs::new();
    let replies = (0..8)
        .map(|i| Reply::text(&format!("answer {i}")))
        .collect();
    let rec = Recorder::new(replies);
    let mut start = Start::new(&dirs, &rec);
    start.live_window = Some("8192".into());
    let mut a = Agent::start(start).await;
    for i in 0..8 {
        a.prompt(&format!("prompt {i} {}", "x".repeat(3000))).await;
    }
    a.send(json!({"type": "request_sync"})).await;
    let sync = a.until_event(pick::sync).await;
    let window = &sync.live_window;
    let shown = ids(&window.messages);
    assert!(
        shown.len() < 16,
        "the window is cut: {} messages",
        shown.len()
    );
    assert!(wire_len(&window.messages) <= 8192, "{window:?}");
    let mut before = window.truncated_before.clone().expect("truncated_before");
    let mut all = shown;
    let mut pages = 0;
    loop {
        // No `max_bytes`: the default page (1 MiB) is clamped to the lowered window.
        let page: SessionHistoryData = a
            .call_as(json!({"type": "session_op", "op": "history", "args": {"before": before}}))
            .await;
        pages += 1;
        assert!(wire_len(&page.messages) <= 8192, "{page:?}");
        let mut got = ids(&page.messages);
        assert!(!got.is_empty(), "an empty page before {before}");
        before = got[0].clone();
        got.extend(all);
        all = got;
        if page.truncated_before.is_none() {
            break;
        }
        assert!(pages < 20, "paging never reached the start");
    }
    assert!(pages >= 2, "one page held the rest");
    assert_eq!(all.len(), 16, "every message once: {all:?}");
    let mut unique = all.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 16);
    rec.assert_clean();
    a.close().await;

    for bad in ["100", "8k", "99999999999"] {
        let e = prepare_error(&dirs, bad).expect("refused");
        assert!(
            e.contains("SHARD_LIVE_WINDOW_BYTES") && e.contains(bad),
            "{e}"
        );
    }
    assert_eq!(prepare_error(&dirs, "4096"), None);
}
