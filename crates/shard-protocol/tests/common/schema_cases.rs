//! The checked-in JSON Schema (`schema/protocol.schema.json`) equals the one generated
//! from the Rust types, names every message type, and accepts the test vectors.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::Value;
use shard_protocol::decode::{COMMAND_TYPES, EVENT_TYPES};
use shard_protocol::schema::{protocol_schema, protocol_schema_pretty};

fn schema_path() -> PathBuf {
    super::crate_dir().join("../../schema/protocol.schema.json")
}

#[test]
fn checked_in_schema_matches_the_generated_one() {
    let generated = protocol_schema_pretty();
    let path = schema_path();
    if std::env::var_os("SHARD_UPDATE_SCHEMA").is_some_and(|v| v == "1") {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "{} is out of date with the Rust types in shard-protocol. Regenerate it with\n  \
         SHARD_UPDATE_SCHEMA=1 cargo test -p shard-protocol --test protocol checked_in_schema\n\
         and commit the result.",
        path.display()
    );
}

/// Values of every `type` property that is a `const` or an `enum`, following nothing.
fn type_values(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            if let Some(t) = map.get("properties").and_then(|p| p.get("type")) {
                if let Some(c) = t.get("const").and_then(Value::as_str) {
                    out.insert(c.to_string());
                }
                for e in t
                    .get("enum")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(s) = e.as_str() {
                        out.insert(s.to_string());
                    }
                }
            }
            map.values().for_each(|x| type_values(x, out));
        }
        Value::Array(items) => items.iter().for_each(|x| type_values(x, out)),
        _ => {}
    }
}

/// The `type` values reachable from `root`, resolving local `$ref`s.
fn reachable_types(schema: &Value, root: &Value) -> BTreeSet<String> {
    let mut seen_refs = BTreeSet::new();
    let mut stack = vec![root.clone()];
    let mut out = BTreeSet::new();
    while let Some(node) = stack.pop() {
        type_values_shallow(&node, &mut out, &mut |r| {
            if seen_refs.insert(r.to_string()) {
                let pointer = r.trim_start_matches('#');
                if let Some(target) = schema.pointer(pointer) {
                    stack.push(target.clone());
                }
            }
        });
    }
    out
}

fn type_values_shallow(v: &Value, out: &mut BTreeSet<String>, follow: &mut dyn FnMut(&str)) {
    match v {
        Value::Object(map) => {
            if let Some(r) = map.get("$ref").and_then(Value::as_str) {
                follow(r);
            }
            let mut one = BTreeSet::new();
            type_values(
                &Value::Object(
                    map.clone()
                        .into_iter()
                        .filter(|(k, _)| k == "properties")
                        .collect(),
                ),
                &mut one,
            );
            out.extend(one);
            for (k, x) in map {
                if k != "properties" {
                    type_values_shallow(x, out, follow);
                }
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|x| type_values_shallow(x, out, follow)),
        _ => {}
    }
}

#[test]
fn schema_names_every_message_type() {
    let schema = protocol_schema();
    let mut all = BTreeSet::new();
    type_values(&schema, &mut all);
    for t in COMMAND_TYPES.iter().chain(EVENT_TYPES) {
        assert!(all.contains(*t), "the schema does not name `{t}`");
    }
    // Commands hang off the first branch of the top-level oneOf, events off the second;
    // each names exactly its own message types at the top of each variant.
    let branches = schema["oneOf"].as_array().unwrap();
    assert_eq!(branches.len(), 2);
    let commands = reachable_types(&schema, &branches[0]);
    let events = reachable_types(&schema, &branches[1]);
    for t in COMMAND_TYPES {
        assert!(
            commands.contains(*t),
            "`{t}` missing from the command branch"
        );
        assert!(!events.contains(*t), "`{t}` appears in the event branch");
    }
    for t in EVENT_TYPES {
        assert!(events.contains(*t), "`{t}` missing from the event branch");
    }
}

#[test]
fn schema_carries_the_protocol_version() {
    assert_eq!(
        protocol_schema()["x-protocol-version"],
        shard_protocol::PROTOCOL_VERSION
    );
}

fn validator() -> jsonschema::Validator {
    jsonschema::validator_for(&protocol_schema()).unwrap()
}

fn errors(v: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    v.iter_errors(instance)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

#[test]
fn every_vector_is_valid_against_the_schema() {
    // Clients in other languages generate their types from the schema, so what the
    // Rust types accept and what the schema accepts must agree on every vector.
    let v = validator();
    for vector in super::commands().iter().chain(super::events().iter()) {
        let errs = errors(&v, &vector.json);
        assert!(errs.is_empty(), "{}: {errs:#?}", vector.label());
    }
}

#[test]
fn the_schema_rejects_what_the_decoder_rejects() {
    let v = validator();
    for bad in [
        // both permission answer forms
        serde_json::json!({"type":"permission_response","request_id":"r","choice_id":"c","decision":"allow"}),
        // neither form
        serde_json::json!({"type":"permission_response","request_id":"r"}),
        // empty choice id
        serde_json::json!({"type":"permission_response","request_id":"r","choice_id":""}),
        // missing required field
        serde_json::json!({"type":"prompt"}),
        // unknown type
        serde_json::json!({"type":"x"}),
        // numeric tag
        serde_json::json!({"type":2}),
        // bad enum value
        serde_json::json!({"type":"status","status":"sleeping"}),
        // nested numeric tag
        serde_json::json!({"type":"tool_result","tool_call_id":"t","content":{"kind":0,"text":"x"},"is_error":false}),
        // not an object
        serde_json::json!([1, 2]),
    ] {
        assert!(!v.is_valid(&bad), "the schema accepts {bad}");
        let line = serde_json::to_vec(&bad).unwrap();
        assert!(
            shard_protocol::decode_command(&line).is_err()
                && shard_protocol::decode_event(&line).is_err(),
            "the decoder accepts {bad}"
        );
    }
}
