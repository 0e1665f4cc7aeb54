//! A provider failure reaches the client as `PROVIDER_ERROR`, the one code docs/protocol.md §8
//! defines for it, with the failure's kind beside it (and the wait a rate limit asks for).

use serde_json::json;
use shard_protocol::error::ErrorCode;

use crate::harness::*;

#[test]
fn every_provider_failure_is_provider_error_with_its_kind() {
    for kind in [
        "context_window_exceeded",
        "auth",
        "rate_limited",
        "overloaded",
        "invalid_request",
        "network",
        "server",
    ] {
        let sb = Sandbox::new();
        let mut step = json!({"error": format!("it failed: {kind}"), "kind": kind, "status": 400});
        if kind == "rate_limited" {
            step["retry_after_ms"] = json!(2500);
        }
        let script = sb.script("s.json", json!({"turns": [{"steps": [step]}]}));
        let mut a = Agent::spawn(&sb, Some(&script), &[]);
        a.until_type("sync");
        a.send(prompt("x"));
        let err = a.until_event(pick::error);
        assert_eq!(err.code, ErrorCode::ProviderError, "{kind}: {err:?}");
        assert_eq!(
            err.kind.as_ref().map(|k| serde_json::to_value(k).unwrap()),
            Some(json!(kind)),
            "{kind}: {err:?}"
        );
        if kind == "rate_limited" {
            assert_eq!(err.retry_after_ms, Some(2500), "{err:?}");
        } else {
            assert_eq!(err.retry_after_ms, None, "{kind}: {err:?}");
        }
        assert!(err.message.contains(kind), "{kind}: {err:?}");
        a.until_type("turn_end");
        assert!(a.finish().success());
    }
}
