//! Negative vectors: lines that must not decode, and the `DecodeError` they give (the
//! `id` is what lets a server answer `INVALID_REQUEST` to the right request).

use shard_protocol::{decode_command, decode_event};

fn command_err(line: &str) -> shard_protocol::DecodeError {
    match decode_command(line.as_bytes()) {
        Ok(m) => panic!("{line} decoded to {m:?}"),
        Err(e) => e,
    }
}

#[test]
fn permission_response_with_both_forms_is_rejected() {
    let e = command_err(
        r#"{"id":"n-1","type":"permission_response","request_id":"req-7","choice_id":"allow-once","decision":"allow"}"#,
    );
    assert_eq!(e.id.as_deref(), Some("n-1"));
    assert_eq!(e.type_name.as_deref(), Some("permission_response"));
    assert!(
        e.message.contains("both choice_id and decision"),
        "{}",
        e.message
    );
}

#[test]
fn permission_response_with_neither_form_is_rejected() {
    let e = command_err(
        r#"{"id":"n-2","type":"permission_response","request_id":"req-7","reason":"?"}"#,
    );
    assert_eq!(e.id.as_deref(), Some("n-2"));
    assert!(
        e.message.contains("either choice_id or decision"),
        "{}",
        e.message
    );
}

#[test]
fn permission_response_with_an_empty_choice_id_is_rejected() {
    // docs/protocol.md §9.5: choice ids are non-empty opaque strings (the schema says minLength 1).
    let e = command_err(
        r#"{"id":"n-2b","type":"permission_response","request_id":"req-7","choice_id":""}"#,
    );
    assert_eq!(e.id.as_deref(), Some("n-2b"));
    assert!(e.message.contains("choice_id"), "{}", e.message);
}

#[test]
fn permission_response_with_an_unknown_decision_is_rejected() {
    let e = command_err(
        r#"{"id":"n-2c","type":"permission_response","request_id":"req-7","decision":"maybe"}"#,
    );
    assert_eq!(e.id.as_deref(), Some("n-2c"));
}

#[test]
fn missing_required_field_carries_the_id() {
    let e = command_err(r#"{"id":"n-3","type":"prompt","images":[]}"#);
    assert_eq!(e.id.as_deref(), Some("n-3"));
    assert_eq!(e.type_name.as_deref(), Some("prompt"));
    assert!(
        e.message.contains("missing field `message`"),
        "{}",
        e.message
    );
    assert!(
        !e.message.contains(" at line "),
        "position noise: {}",
        e.message
    );

    // Orchestrator and job commands too.
    for (line, field) in [
        (r#"{"id":"n-3a","type":"agent.create"}"#, "cwd"),
        (r#"{"id":"n-3b","type":"agent.attach"}"#, "agent_id"),
        (
            r#"{"id":"n-3c","type":"subagent.wait","parent_agent_id":"p"}"#,
            "handles",
        ),
        (r#"{"id":"n-3d","type":"workspace.status"}"#, "workspace_id"),
        (r#"{"id":"n-3e","type":"session_op"}"#, "op"),
        (r#"{"id":"n-3f","type":"ui_response"}"#, "request_id"),
    ] {
        let e = command_err(line);
        assert!(
            e.id.as_deref().is_some_and(|id| id.starts_with("n-3")),
            "{line}: {e:?}"
        );
        assert!(e.message.contains(field), "{line}: {}", e.message);
    }
}

#[test]
fn missing_required_event_field_is_an_error() {
    let e = decode_event(
        br#"{"type":"tool_result","tool_call_id":"t","content":{"kind":"text","text":"x"}}"#,
    )
    .unwrap_err();
    assert_eq!(e.type_name.as_deref(), Some("tool_result"));
    assert!(e.message.contains("is_error"), "{}", e.message);
    let e = decode_event(br#"{"type":"hello","protocol_version":"0.1.0","server_version":"x"}"#)
        .unwrap_err();
    assert!(e.message.contains("capabilities"), "{}", e.message);
}

#[test]
fn unknown_type_names_the_type_and_keeps_the_id() {
    let e = command_err(r#"{"id":"n-4","type":"x"}"#);
    assert_eq!(e.id.as_deref(), Some("n-4"));
    assert_eq!(e.type_name.as_deref(), Some("x"));
    assert_eq!(e.message, "unknown command type `x`");
    // An event type sent as a command is just as unknown.
    assert_eq!(
        command_err(r#"{"id":"n-5","type":"hello"}"#).message,
        "unknown command type `hello`"
    );
    // `follow_up` is a streaming_behavior value, not a command (docs/protocol.md §16 item 3).
    assert_eq!(
        command_err(r#"{"type":"follow_up","message":"m"}"#).message,
        "unknown command type `follow_up`"
    );
}

#[test]
fn non_object_json_is_rejected() {
    for (line, kind) in [
        ("[1,2]", "an array"),
        (r#""prompt""#, "a string"),
        ("42", "a number"),
        ("null", "null"),
        ("true", "a boolean"),
    ] {
        let e = command_err(line);
        assert_eq!(e.id, None, "{line}");
        assert_eq!(
            e.message,
            format!("expected a JSON object, got {kind}"),
            "{line}"
        );
        let e = decode_event(line.as_bytes()).unwrap_err();
        assert_eq!(
            e.message,
            format!("expected a JSON object, got {kind}"),
            "{line}"
        );
    }
}

#[test]
fn malformed_json_is_rejected() {
    for line in [
        r#"{"id":"n-6","type":"prompt","message":"hi""#,
        "{",
        "",
        "not json",
        r#"{"id":"n-6","type":"prompt","message":"hi"} trailing"#,
        "{\"id\":\"n-6\",\"type\":\"prompt\",\"message\":\"raw\nnewline\"}",
    ] {
        let e = command_err(line);
        assert_eq!(e.id, None, "{line}");
        assert!(
            e.message.starts_with("malformed JSON"),
            "{line}: {}",
            e.message
        );
    }
    let e = decode_command(b"{\"type\":\"prompt\",\"message\":\"\xff\xfe\"}").unwrap_err();
    assert!(e.message.starts_with("malformed JSON"), "{}", e.message);
}

#[test]
fn type_field_problems_are_named() {
    let e = command_err(r#"{"id":"n-7","message":"hi"}"#);
    assert_eq!(e.id.as_deref(), Some("n-7"));
    assert_eq!(e.message, "missing field `type`");
    let e = command_err(r#"{"id":"n-8","type":7}"#);
    assert_eq!(e.id.as_deref(), Some("n-8"));
    assert_eq!(e.message, "field `type` must be a string");
}

#[test]
fn wrong_field_types_and_values_are_rejected() {
    for line in [
        r#"{"id":"n-9","type":"prompt","message":"m","streaming_behavior":"later"}"#,
        r#"{"id":"n-9","type":"prompt","message":42}"#,
        r#"{"id":"n-9","type":"session_op","op":"rewind"}"#,
        r#"{"id":"n-9","type":"agent.attach","agent_id":"a","role":"admin"}"#,
        r#"{"id":"n-9","type":"ui_response","request_id":"r","value":42}"#,
        r#"{"id":"n-9","type":"workspace.retire","workspace_id":"w","branch_disposition":"burn"}"#,
        r#"{"id":"n-9","type":"agent.create","cwd":"/","launch_policy":{"max_tasks":1,"max_depth":1}}"#,
    ] {
        let e = command_err(line);
        assert_eq!(e.id.as_deref(), Some("n-9"), "{line}");
        assert!(e.message.starts_with("invalid `"), "{line}: {}", e.message);
    }
    for line in [
        r#"{"type":"message_delta","message_id":"m","block_index":-1,"kind":"text"}"#,
        r#"{"type":"status","status":"sleeping"}"#,
        r#"{"type":"agent_exited","agent_id":"a","runtime_state":"exploded","reason":"r"}"#,
        r#"{"type":"tool_call","tool_call_id":"t","name":"n","args":[1]}"#,
        r#"{"type":"compaction","index":1,"tokens_before":1,"tokens_after":1,"first_kept_entry_id":"e","message_range":["a"]}"#,
        r#"{"type":"sync","status":"idle","mode":"m","live_window":{"messages":[]},"pending_requests":[{"type":"hello"}]}"#,
        r#"{"type":"permission_resolved","request_id":"r"}"#,
    ] {
        let e = decode_event(line.as_bytes()).unwrap_err();
        assert!(e.message.starts_with("invalid `"), "{line}: {}", e.message);
    }
}

#[test]
fn a_non_string_id_is_an_error_not_a_crash() {
    let e = command_err(r#"{"id":5,"type":"abort"}"#);
    assert_eq!(e.id, None);
    assert_eq!(e.type_name.as_deref(), Some("abort"));
}

#[test]
fn numeric_tags_are_rejected_everywhere() {
    // serde would read these as variant indices: `{"type":2}` as `abort`.
    let e = command_err(r#"{"id":"n-10","type":2}"#);
    assert_eq!(e.id.as_deref(), Some("n-10"));
    assert_eq!(e.message, "field `type` must be a string");
    let e = command_err(r#"{"id":"n-10","type" : 7 , "agent_id":"a"}"#);
    assert_eq!(e.message, "field `type` must be a string");
    let e = command_err(r#"{"id":"n-10","\u0074ype":2}"#);
    assert_eq!(e.message, "field `type` must be a string");
    for (line, key) in [
        (
            r#"{"type":"tool_result","tool_call_id":"t","content":{"kind":0,"text":"x"},"is_error":false}"#,
            "kind",
        ),
        (
            r#"{"type":"tool_result","tool_call_id":"t","content":{"kind":"text","text":"x"},"is_error":false,"render":{"kind":0,"text":"x"}}"#,
            "kind",
        ),
        (
            r#"{"type":"message_complete","message_id":"m","message":{"id":"m","role":"user","content":[{"type":0,"text":"x"}]}}"#,
            "type",
        ),
        (
            r#"{"type":"sync","status":"idle","mode":"m","live_window":{"messages":[]},"pending_requests":[{"type":1,"request_id":"r","kind":"confirm"}]}"#,
            "type",
        ),
        (
            r#"{"type":"tool_call","tool_call_id":"t","name":"n","args":{},"render":{"\u006bind":1,"pairs":[]}}"#,
            "kind",
        ),
    ] {
        let e = decode_event(line.as_bytes()).unwrap_err();
        let want = format!(
            "invalid `{}`: field `{key}` must be a string",
            e.type_name.clone().unwrap()
        );
        assert_eq!(e.message, want, "{line}");
    }
}

#[test]
fn numeric_type_fields_inside_free_form_data_are_fine() {
    let line = r#"{"type":"tool_call","tool_call_id":"t","name":"n","args":{"type":5,"kind":0,"x":{"type":1}},"render":{"kind":"text","text":"\u001b[1m"}}"#;
    let e = decode_event(line.as_bytes()).unwrap();
    assert_eq!(
        serde_json::to_value(&e).unwrap(),
        serde_json::from_str::<serde_json::Value>(line).unwrap()
    );
    let line = r#"{"type":"tool_result","tool_call_id":"t","content":{"kind":"json","value":{"kind":3,"type":[1]}},"is_error":false}"#;
    assert!(decode_event(line.as_bytes()).is_ok());
    // Escaped keys take the exact check too, and pass when they are free-form data.
    let line = r#"{"type":"tool_call","tool_call_id":"t","name":"n","args":{"\u0061":1,"p":"C:\\users\\u"}}"#;
    let e = decode_event(line.as_bytes()).unwrap();
    assert_eq!(serde_json::to_value(&e).unwrap()["args"]["a"], 1);
    let line = r#"{"type":"permission_request","request_id":"r","tool_name":"t","input":{"type":9},"prompt":"p","options":[]}"#;
    assert!(decode_event(line.as_bytes()).is_ok());
}

#[test]
fn duplicate_keys_are_rejected() {
    // JSON parsers disagree on which duplicate wins (JS takes the last); refusing the
    // line means a relay and the Runtime can never read one message two ways.
    for (line, field) in [
        (
            r#"{"id":"d","type":"abort","type":"prompt","message":"m"}"#,
            "type",
        ),
        (
            r#"{"id":"d","type":"prompt","message":"a","message":"b"}"#,
            "message",
        ),
        (
            r#"{"id":"d","type":"permission_response","request_id":"r","decision":"deny","decision":"allow"}"#,
            "decision",
        ),
    ] {
        let e = command_err(line);
        assert_eq!(e.id.as_deref(), Some("d"), "{line}");
        assert!(
            e.message.ends_with(&format!("duplicate field `{field}`")),
            "{line}: {}",
            e.message
        );
    }
    assert!(
        command_err(r#"{"id":"d","id":"e","type":"abort"}"#)
            .message
            .contains("duplicate field `id`")
    );
    for line in [
        r#"{"type":"status","type":"turn_start","status":"idle","turn_id":"t"}"#,
        r#"{"type":"status","status":"idle","status":"error"}"#,
    ] {
        let e = decode_event(line.as_bytes()).unwrap_err();
        assert!(
            e.message.contains("duplicate field"),
            "{line}: {}",
            e.message
        );
    }
}
