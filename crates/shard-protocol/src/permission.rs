//! The two answer forms of a permission response or resolution (docs/protocol.md §9.5).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::types::PermissionDecision;

/// Either the structured opaque choice or the legacy semantic decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum PermissionAnswer {
    /// A server-defined choice id.
    Choice {
        /// The choice picked.
        choice_id: String,
    },
    /// A legacy decision.
    Decision {
        /// The decision.
        decision: PermissionDecision,
    },
}

/// Additive: a permission request's answer as the session recorded it, so a conversation
/// opened again (a `sync`, a history page) says who answered each request, as clients said
/// it live from `permission_resolved` (docs/protocol.md, "Recorded permission answers").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PermissionAnswered {
    /// The request answered.
    pub request_id: String,
    /// The tool call the request was for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The tool asked about.
    pub tool_name: String,
    /// The winning answer, in the form it was given.
    #[serde(flatten)]
    pub answer: PermissionAnswer,
    /// The chosen choice's label, when the answer was one of the request's choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Who answered, as `permission_resolved.source` said it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}
