//! Issue 11 §5: a provider failure reaches the client as the protocol code of its kind.

use serde_json::json;

use crate::harness::*;

#[test]
fn each_provider_error_kind_is_reported_with_its_code() {
    for (kind, code) in [
        ("context_window_exceeded", "CONTEXT_WINDOW_EXCEEDED"),
        ("auth", "PROVIDER_AUTH"),
        ("rate_limited", "PROVIDER_RATE_LIMITED"),
        ("overloaded", "PROVIDER_OVERLOADED"),
        ("invalid_request", "PROVIDER_INVALID_REQUEST"),
        ("network", "PROVIDER_UNREACHABLE"),
        ("server", "PROVIDER_ERROR"),
    ] {
        let sb = Sandbox::new();
        let script = sb.script(
            "s.json",
            json!({"turns": [{"steps": [{"error": format!("it failed: {kind}"), "kind": kind, "status": 400}]}]}),
        );
        let mut a = Agent::spawn(&sb, Some(&script), &[]);
        a.until_type("sync");
        a.send(prompt("x"));
        let err = a.until_type("error");
        assert_eq!(err["code"], code, "{kind}: {err}");
        assert!(
            err["message"].as_str().unwrap().contains(kind),
            "{kind}: {err}"
        );
        a.until_type("turn_end");
        assert!(a.finish().success());
    }
}
