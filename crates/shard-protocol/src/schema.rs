//! JSON Schema export of every message, generated from the Rust types, so clients in
//! other languages generate their types from one source.

use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

use crate::command::ClientMessage;
use crate::event::Event;
use crate::responses;

/// One JSON Schema document covering every command, event and response payload.
pub fn protocol_schema() -> Value {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let command = generator.subschema_for::<ClientMessage>();
    let event = generator.subschema_for::<Event>();
    generator.subschema_for::<responses::AgentsData>();
    generator.subschema_for::<responses::AgentCreated>();
    generator.subschema_for::<responses::AttachData>();
    generator.subschema_for::<crate::workspace::WorkspaceLaunched>();
    generator.subschema_for::<crate::workspace::WorkspaceListData>();
    generator.subschema_for::<crate::workspace::WorkspaceStatusData>();
    generator.subschema_for::<crate::workspace::WorkspaceRetiredData>();
    generator.subschema_for::<crate::workspace::WorkspaceConflictData>();
    generator.subschema_for::<responses::TerminateData>();
    generator.subschema_for::<responses::SetModeData>();
    generator.subschema_for::<responses::ListModesData>();
    generator.subschema_for::<responses::ListModelsData>();
    generator.subschema_for::<responses::SetModelData>();
    generator.subschema_for::<responses::ReasoningLevelsData>();
    generator.subschema_for::<responses::SetReasoningLevelData>();
    generator.subschema_for::<responses::SessionListData>();
    generator.subschema_for::<responses::SessionActivated>();
    generator.subschema_for::<responses::ForkData>();
    generator.subschema_for::<responses::CompactData>();
    generator.subschema_for::<responses::SubagentCreated>();
    generator.subschema_for::<responses::SubagentWaitData>();
    generator.subschema_for::<responses::SubagentSteerData>();
    generator.subschema_for::<responses::SteerData>();
    generator.subschema_for::<responses::SubagentRelaunched>();
    generator.subschema_for::<responses::SubagentStatusData>();
    generator.subschema_for::<responses::SubagentStopData>();
    generator.subschema_for::<crate::orchestrator::RuntimeAuthData>();
    let defs = generator.take_definitions(true);
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Shard protocol",
        "description": "Every message of the Shard wire protocol: commands (client to server) and events (server to client).",
        "x-protocol-version": crate::PROTOCOL_VERSION,
        "oneOf": [command, event],
        "$defs": defs,
    })
}

/// The schema as pretty-printed JSON with a final newline, as checked in.
pub fn protocol_schema_pretty() -> String {
    let mut s = serde_json::to_string_pretty(&protocol_schema()).unwrap_or_default();
    s.push('\n');
    s
}
