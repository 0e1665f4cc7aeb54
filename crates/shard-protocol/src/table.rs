//! The one command table. [`command_table!`] is invoked once, in `command.rs`, with one
//! row per command — variant, request type, wire name, response type — and generates
//! from it the [`Command`](crate::Command) enum (with its serde tags), the wire names
//! ([`Command::type_name`](crate::Command::type_name), [`Command::TYPES`](crate::Command::TYPES))
//! and, per command, a marker type in `command::kind` whose [`CommandSpec`] names its
//! request and response types. A server encodes a success through
//! [`CommandSpec::encode_response`], so the compiler checks that a handler answers each
//! command with that command's response type, and an encode failure is an error the
//! handler returns, never a success without its data. Adding a command is one row.
//!
//! The request structs stay where they are defined (`command.rs`, `orchestrator.rs`);
//! only the enum, the names and the response mapping are generated.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// What the command table knows about one command, implemented by its marker type in
/// `command::kind` (e.g. `kind::AgentList`).
pub trait CommandSpec {
    /// The wire `type`, as echoed in `response.command`.
    const TYPE: &'static str;
    /// The request: the payload of the `Command` variant.
    type Request;
    /// The `data` of a successful response; `()` for commands whose success carries none
    /// (and `Option<T>` for a command whose success carries data only sometimes).
    type Response: Serialize + DeserializeOwned;

    /// A success's `data`: `None` when the response encodes to `null` (no data), else
    /// the encoded value. An encode failure is returned, so the caller answers with an
    /// error instead of a success that lost its data.
    fn encode_response(data: &Self::Response) -> Result<Option<Value>, serde_json::Error> {
        match serde_json::to_value(data)? {
            Value::Null => Ok(None),
            v => Ok(Some(v)),
        }
    }

    /// Reads a success's `data` (absent `data` reads as `null`).
    fn decode_response(data: Option<Value>) -> Result<Self::Response, serde_json::Error> {
        serde_json::from_value(data.unwrap_or(Value::Null))
    }
}

/// Generates the command enum, its wire names and the per-command specs from one table:
///
/// ```text
/// command_table! {
///     /// doc of the enum
///     pub enum Command {
///         /// doc of the command
///         Prompt(Prompt) = "prompt" => (),
///         AgentList(Empty) = "agent.list" => AgentsData,
///     }
/// }
/// ```
macro_rules! command_table {
    (
        $(#[$enum_meta:meta])*
        pub enum $enum:ident {
            $(
                $(#[$meta:meta])*
                $variant:ident($request:ty) = $wire:literal => $response:ty,
            )*
        }
    ) => {
        $(#[$enum_meta])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(tag = "type")]
        pub enum $enum {
            $(
                $(#[$meta])*
                #[serde(rename = $wire)]
                $variant($request),
            )*
        }

        impl $enum {
            /// Every wire `type`, in table order.
            pub const TYPES: &'static [&'static str] = &[$($wire),*];

            /// The wire `type` of this command, as echoed in `response.command`.
            pub fn type_name(&self) -> &'static str {
                match self {
                    $($enum::$variant(_) => $wire,)*
                }
            }
        }

        /// One marker type per command, naming its request and response types through
        /// [`CommandSpec`](crate::table::CommandSpec).
        pub mod kind {
            $(
                #[doc = concat!("The `", $wire, "` command.")]
                #[derive(Debug, Clone, Copy, PartialEq, Eq)]
                pub struct $variant;
            )*
        }

        $(
            impl $crate::table::CommandSpec for kind::$variant {
                const TYPE: &'static str = $wire;
                type Request = $request;
                type Response = $response;
            }
        )*
    };
}

pub(crate) use command_table;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use std::collections::BTreeMap;

    use super::*;
    use crate::command::{AgentListQuery, AgentTarget, Command, kind};
    use crate::responses::AgentsData;

    #[test]
    fn the_table_names_each_command_once_and_as_its_serde_tag() {
        let mut seen = std::collections::HashSet::new();
        assert!(
            Command::TYPES.iter().all(|t| seen.insert(*t)),
            "a wire name twice"
        );
        assert_eq!(kind::AgentList::TYPE, "agent.list");
        let c = Command::AgentList(AgentListQuery::default());
        assert_eq!(c.type_name(), kind::AgentList::TYPE);
        let wire = serde_json::to_value(&c).unwrap();
        assert_eq!(wire["type"], kind::AgentList::TYPE);
        let abort = Command::Abort(AgentTarget::default());
        assert_eq!(abort.type_name(), kind::Abort::TYPE);
        // Every schema variant's `type` is a table row, and every row is in the schema.
        let schema = crate::schema::protocol_schema();
        let text = schema.to_string();
        for t in Command::TYPES {
            assert!(
                text.contains(&format!("\"const\":\"{t}\"")),
                "{t} not in the schema"
            );
        }
    }

    #[test]
    fn no_data_is_none_and_data_round_trips() {
        assert_eq!(kind::Abort::encode_response(&()).unwrap(), None);
        assert_eq!(kind::Steer::encode_response(&None).unwrap(), None);
        let data = AgentsData {
            agents: vec![],
            next_after: None,
        };
        let encoded = kind::AgentList::encode_response(&data).unwrap();
        assert_eq!(encoded, Some(serde_json::json!({ "agents": [] })));
        assert_eq!(kind::AgentList::decode_response(encoded).unwrap(), data);
        kind::Abort::decode_response(None).unwrap();
    }

    /// A response that cannot be encoded (a map with non-string keys).
    struct Unencodable;
    impl CommandSpec for Unencodable {
        const TYPE: &'static str = "test.unencodable";
        type Request = ();
        type Response = BTreeMap<(u8, u8), u8>;
    }

    #[test]
    fn an_encode_failure_is_an_error_not_a_success_without_data() {
        let data = BTreeMap::from([((1, 2), 3)]);
        assert!(Unencodable::encode_response(&data).is_err());
    }
}
