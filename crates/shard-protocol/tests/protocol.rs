#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The protocol crate's contract tests: every JSON example of docs/protocol.md plus one example
//! of every message type decodes to the right variant and re-encodes to the same JSON;
//! negative vectors; the JSONL codec; property tests; the checked-in JSON Schema.

mod common;

use std::collections::BTreeSet;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use shard_protocol::decode::{COMMAND_TYPES, EVENT_TYPES};
use shard_protocol::{
    IncomingEvent, decode_command, decode_event, decode_event_lenient, responses,
};

use common::coverage::{self, Seen};

/// Per-agent commands of docs/protocol.md §9 (plus `request_sync`, §16 item 5): the only commands
/// whose `agent_id` is a routing id.
const PER_AGENT_COMMANDS: &[&str] = &[
    "prompt",
    "steer",
    "abort",
    "set_mode",
    "list_modes",
    "list_models",
    "set_model",
    "list_reasoning_levels",
    "set_reasoning_level",
    "session_op",
    "permission_response",
    "ui_response",
    "request_sync",
    "client_files",
    "file_response",
];

/// Per-agent events of docs/protocol.md §9–§10.2 whose `agent_id` is a routing id.
const PER_AGENT_EVENTS: &[&str] = &[
    "sync",
    "status",
    "turn_start",
    "message_delta",
    "message_complete",
    "tool_call",
    "tool_result",
    "turn_end",
    "usage",
    "compaction",
    "error",
    "permission_request",
    "permission_resolved",
    "ui_request",
    "ui_resolved",
    "model_changed",
    "mode_changed",
    "reasoning_level_changed",
    "tools_changed",
    "user_message",
    "file_request",
];

fn as_set(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn type_lists_have_no_duplicates_and_do_not_overlap() {
    assert_eq!(as_set(COMMAND_TYPES).len(), COMMAND_TYPES.len());
    assert_eq!(as_set(EVENT_TYPES).len(), EVENT_TYPES.len());
    let overlap: Vec<_> = as_set(COMMAND_TYPES)
        .intersection(&as_set(EVENT_TYPES))
        .cloned()
        .collect();
    assert!(overlap.is_empty(), "{overlap:?}");
}

#[test]
fn every_command_vector_decodes_and_reencodes_to_the_same_json() {
    let mut seen = Seen::default();
    let mut types = BTreeSet::new();
    for v in common::commands() {
        let label = v.label();
        let msg = decode_command(&v.line()).unwrap_or_else(|e| panic!("{label}: {e:?}"));
        assert_eq!(
            msg.command.type_name(),
            v.type_field(),
            "{label}: wrong variant"
        );
        assert_eq!(
            msg.id.as_deref(),
            v.json.get("id").and_then(Value::as_str),
            "{label}: id"
        );

        let per_agent = PER_AGENT_COMMANDS.contains(&v.type_field());
        assert_eq!(
            msg.command.is_per_agent(),
            per_agent,
            "{label}: is_per_agent"
        );
        let routing = if per_agent {
            v.json.get("agent_id").and_then(Value::as_str)
        } else {
            None
        };
        assert_eq!(
            msg.command.routing_agent_id(),
            routing,
            "{label}: routing agent_id"
        );

        let back = serde_json::to_value(&msg).unwrap();
        assert_eq!(back, v.json, "{label}: re-encoding differs");
        // The line form used on the wire decodes to the same message.
        let line = shard_protocol::to_line(&msg);
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(
            line.iter().filter(|&&b| b == b'\n').count(),
            1,
            "{label}: one line"
        );
        assert_eq!(
            decode_command(&line[..line.len() - 1]).unwrap(),
            msg,
            "{label}"
        );

        seen.command(&msg.command);
        types.insert(v.type_field().to_string());
    }
    assert_eq!(
        types,
        as_set(COMMAND_TYPES),
        "command vectors vs COMMAND_TYPES"
    );
    coverage::assert_all(
        "permission_response forms",
        &seen.response_forms,
        coverage::ANSWERS,
    );
    coverage::assert_all("ui_response values", &seen.ui_values, coverage::UI_VALUES);
}

#[test]
fn every_event_vector_decodes_and_reencodes_to_the_same_json() {
    let mut seen = Seen::default();
    let mut types = BTreeSet::new();
    for v in common::events() {
        let label = v.label();
        let event = decode_event(&v.line()).unwrap_or_else(|e| panic!("{label}: {e:?}"));
        assert_eq!(event.type_name(), v.type_field(), "{label}: wrong variant");

        let per_agent = PER_AGENT_EVENTS.contains(&v.type_field());
        assert_eq!(event.is_per_agent(), per_agent, "{label}: is_per_agent");
        let routing = if per_agent {
            v.json.get("agent_id").and_then(Value::as_str)
        } else {
            None
        };
        assert_eq!(
            event.routing_agent_id(),
            routing,
            "{label}: routing agent_id"
        );

        let back = serde_json::to_value(&event).unwrap();
        assert_eq!(back, v.json, "{label}: re-encoding differs");
        let line = shard_protocol::to_line(&event);
        assert_eq!(
            line.iter().filter(|&&b| b == b'\n').count(),
            1,
            "{label}: one line"
        );
        assert_eq!(decode_event(&line).unwrap(), event, "{label}");
        match decode_event_lenient(&v.line()).unwrap() {
            IncomingEvent::Known(e) => assert_eq!(e, event, "{label}"),
            other => panic!("{label}: lenient decode gave {other:?}"),
        }

        seen.event(&event);
        types.insert(v.type_field().to_string());
    }
    assert_eq!(types, as_set(EVENT_TYPES), "event vectors vs EVENT_TYPES");
    coverage::assert_all("content blocks", &seen.blocks, coverage::CONTENT_BLOCKS);
    coverage::assert_all(
        "tool result contents",
        &seen.results,
        coverage::TOOL_RESULT_CONTENT,
    );
    coverage::assert_all("render descriptors", &seen.renders, coverage::RENDERS);
    coverage::assert_all("sync pending requests", &seen.pending, coverage::PENDING);
    coverage::assert_all(
        "permission_resolved forms",
        &seen.resolved_forms,
        coverage::ANSWERS,
    );
}

#[test]
fn variant_names_agree_with_their_serialized_tags() {
    // The `coverage` helpers name variants by hand; check them against serde so a
    // rename in the types cannot leave the coverage check counting the wrong thing.
    for v in common::events() {
        let event = decode_event(&v.line()).unwrap();
        let mut blocks = Vec::new();
        match &event {
            Event::Sync(s) => blocks.extend(s.live_window.messages.iter().flat_map(|m| &m.content)),
            Event::MessageComplete(m) => blocks.extend(&m.message.content),
            _ => {}
        }
        for b in blocks {
            assert_eq!(
                serde_json::to_value(b).unwrap()["type"],
                coverage::block_name(b)
            );
        }
        let renders = match &event {
            Event::ToolCall(t) => t.render.iter().collect::<Vec<_>>(),
            Event::ToolResult(t) => {
                let c = serde_json::to_value(&t.content).unwrap();
                assert_eq!(
                    c["kind"],
                    coverage::result_name(&t.content),
                    "{}",
                    v.label()
                );
                t.render.iter().collect()
            }
            _ => Vec::new(),
        };
        for r in renders {
            assert_eq!(
                serde_json::to_value(r).unwrap()["kind"],
                coverage::render_name(r)
            );
        }
    }
}

use shard_protocol::event::Event;

/// Decodes `data` as `T` and re-encodes it; the result must equal the input.
fn typed_round_trip<T: DeserializeOwned + Serialize>(data: &Value, label: &str) {
    let typed: T = serde_json::from_value(data.clone()).unwrap_or_else(|e| {
        panic!(
            "{label}: data does not decode as {}: {e}",
            std::any::type_name::<T>()
        )
    });
    assert_eq!(
        &serde_json::to_value(&typed).unwrap(),
        data,
        "{label}: typed data re-encodes differently"
    );
}

#[test]
fn response_data_decodes_into_its_typed_struct() {
    let mut typed = BTreeSet::new();
    for v in common::load("responses.json") {
        let label = v.label();
        let Some(kind) = v.data_type.as_deref() else {
            continue;
        };
        let data = v
            .json
            .get("data")
            .unwrap_or_else(|| panic!("{label}: no data"));
        match kind {
            "AgentsData" => typed_round_trip::<responses::AgentsData>(data, &label),
            "AgentCreated" => typed_round_trip::<responses::AgentCreated>(data, &label),
            "AttachData" => typed_round_trip::<responses::AttachData>(data, &label),
            "TerminateData" => typed_round_trip::<responses::TerminateData>(data, &label),
            "SetModeData" => typed_round_trip::<responses::SetModeData>(data, &label),
            "ListModesData" => typed_round_trip::<responses::ListModesData>(data, &label),
            "ListModelsData" => typed_round_trip::<responses::ListModelsData>(data, &label),
            "SetModelData" => typed_round_trip::<responses::SetModelData>(data, &label),
            "ReasoningLevelsData" => {
                typed_round_trip::<responses::ReasoningLevelsData>(data, &label)
            }
            "SetReasoningLevelData" => {
                typed_round_trip::<responses::SetReasoningLevelData>(data, &label)
            }
            "SessionListData" => typed_round_trip::<responses::SessionListData>(data, &label),
            "ForkData" => typed_round_trip::<responses::ForkData>(data, &label),
            "CompactData" => typed_round_trip::<responses::CompactData>(data, &label),
            "SubagentCreated" => typed_round_trip::<responses::SubagentCreated>(data, &label),
            "SubagentWaitData" => typed_round_trip::<responses::SubagentWaitData>(data, &label),
            "SubagentSteerData" => typed_round_trip::<responses::SubagentSteerData>(data, &label),
            "SubagentRelaunched" => typed_round_trip::<responses::SubagentRelaunched>(data, &label),
            "SubagentStatusData" => typed_round_trip::<responses::SubagentStatusData>(data, &label),
            "SubagentStopData" => typed_round_trip::<responses::SubagentStopData>(data, &label),
            "RuntimeAuthData" => {
                typed_round_trip::<shard_protocol::orchestrator::RuntimeAuthData>(data, &label)
            }
            other => panic!("{label}: unknown data_type {other}"),
        }
        typed.insert(kind.to_string());
    }
    // Every typed response payload the schema exports has a vector.
    assert_eq!(typed.len(), 20, "typed payloads with a vector: {typed:?}");
}

#[test]
fn compact_data_picks_the_right_form() {
    let done: responses::CompactData = serde_json::from_value(serde_json::json!({
        "compacted": true, "index": 1, "tokens_before": 10, "tokens_after": 2,
        "first_kept_entry_id": "ent-1", "message_range": ["ent-0", "ent-1"]
    }))
    .unwrap();
    assert!(matches!(done, responses::CompactData::Compacted { .. }));
    let noop: responses::CompactData =
        serde_json::from_value(serde_json::json!({ "compacted": false, "reason": "no_safe_cut" }))
            .unwrap();
    assert!(matches!(noop, responses::CompactData::NoOp { .. }));
}

#[test]
fn unknown_fields_are_tolerated_and_dropped() {
    let cmd =
        decode_command(br#"{"id":"u1","type":"prompt","message":"hi","future":{"x":1}}"#).unwrap();
    assert_eq!(
        serde_json::to_value(&cmd).unwrap(),
        serde_json::json!({ "id": "u1", "type": "prompt", "message": "hi" })
    );
    let ev = decode_event(br#"{"type":"status","status":"idle","new_thing":[1,2]}"#).unwrap();
    assert_eq!(
        serde_json::to_value(&ev).unwrap(),
        serde_json::json!({ "type": "status", "status": "idle" })
    );
    // Inside nested shared types too.
    let ev = decode_event(
        br#"{"type":"tool_result","tool_call_id":"t","content":{"kind":"text","text":"x","lang":"en"},"is_error":false}"#,
    )
    .unwrap();
    assert!(matches!(ev, Event::ToolResult(_)));
}

#[test]
fn unknown_event_types_are_kept_raw_by_the_lenient_decoder() {
    let line = br#"{"type":"agent_teleported","agent_id":"a-1","to":"mars"}"#;
    let err = decode_event(line).unwrap_err();
    assert_eq!(err.message, "unknown event type `agent_teleported`");
    match decode_event_lenient(line).unwrap() {
        IncomingEvent::Unknown { type_name, raw } => {
            assert_eq!(type_name, "agent_teleported");
            assert_eq!(raw["to"], "mars");
        }
        other => panic!("{other:?}"),
    }
    // A known type with a bad payload stays an error: it is not "unknown".
    assert!(decode_event_lenient(br#"{"type":"status"}"#).is_err());
}

#[test]
fn integer_timeout_decodes_and_reencodes_as_the_same_number() {
    // `subagent.wait.timeout` is a float (seconds); `0` (poll) re-encodes as `0.0`,
    // which is the same JSON number for every client.
    let cmd = decode_command(
        br#"{"id":"w","type":"subagent.wait","parent_agent_id":"p","handles":["h"],"timeout":0}"#,
    )
    .unwrap();
    let back = serde_json::to_value(&cmd).unwrap();
    assert_eq!(back["timeout"].as_f64(), Some(0.0));
}
