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
