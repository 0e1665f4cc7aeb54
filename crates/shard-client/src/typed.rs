//! Typed request/response pairs: each command names the type of its response's `data`,
//! so callers get `AgentsData` from `agent.list` instead of untyped JSON.
//!
//! Commands that share a wire payload type (`list_modes` and `list_models` both carry an
//! `AgentTarget`) get one small request struct each here, so the response type follows
//! from the request type alone.

use serde::de::DeserializeOwned;
use shard_protocol::Command;
use shard_protocol::command::{
    AgentAttach, AgentCreate, AgentKill, AgentRef, AgentStatusQuery, AgentTarget, DaemonShutdown,
    Prompt, SessionOp, SessionOpArgs, SessionOpKind, SetMode, SetModel, SetReasoningLevel, Steer,
};
use shard_protocol::responses::{
    AgentCreated, AgentsData, AttachData, CompactData, ForkData, ListModelsData, ListModesData,
    ReasoningLevelsData, SessionListData, SetModeData, SetModelData, SetReasoningLevelData,
    TerminateData,
};

/// A command whose successful response carries `data` of type [`Request::Data`].
pub trait Request {
    /// The response's `data`.
    type Data: DeserializeOwned;
    /// The wire command.
    fn into_command(self) -> Command;
}

/// The `data` of commands that answer with none (`agent.kill`, `agent.detach`, …):
/// anything the server sends is accepted and ignored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoData;

impl<'de> serde::Deserialize<'de> for NoData {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| NoData)
    }
}

macro_rules! request {
    ($(#[$doc:meta])* $ty:ty => $data:ty, |$s:ident| $build:expr) => {
        $(#[$doc])*
        impl Request for $ty {
            type Data = $data;
            fn into_command(self) -> Command {
                let $s = self;
                $build
            }
        }
    };
}

/// `agent.list`.
#[derive(Debug, Clone, Default)]
pub struct ListAgents;
request!(ListAgents => AgentsData, |_s| Command::AgentList(Default::default()));
request!(AgentCreate => AgentCreated, |s| Command::AgentCreate(Box::new(s)));
request!(AgentAttach => AttachData, |s| Command::AgentAttach(s));
request!(AgentKill => NoData, |s| Command::AgentKill(s));
request!(AgentStatusQuery => AgentsData, |s| Command::AgentStatus(s));
request!(DaemonShutdown => NoData, |s| Command::DaemonShutdown(s));
request!(Prompt => NoData, |s| Command::Prompt(s));
request!(Steer => NoData, |s| Command::Steer(s));
request!(SetMode => SetModeData, |s| Command::SetMode(s));
request!(SetModel => SetModelData, |s| Command::SetModel(s));
request!(SetReasoningLevel => SetReasoningLevelData, |s| Command::SetReasoningLevel(s));

/// `agent.detach`.
#[derive(Debug, Clone)]
pub struct Detach(pub String);
request!(Detach => NoData, |s| Command::AgentDetach(AgentRef { agent_id: s.0 }));

/// `agent.terminate`.
#[derive(Debug, Clone)]
pub struct Terminate(pub String);
request!(Terminate => TerminateData, |s| Command::AgentTerminate(AgentRef { agent_id: s.0 }));

/// `abort`.
#[derive(Debug, Clone, Default)]
pub struct Abort(pub Option<String>);
request!(Abort => NoData, |s| Command::Abort(AgentTarget { agent_id: s.0 }));

/// `list_modes`.
#[derive(Debug, Clone, Default)]
pub struct ListModes(pub Option<String>);
request!(ListModes => ListModesData, |s| Command::ListModes(AgentTarget { agent_id: s.0 }));

/// `list_models`.
#[derive(Debug, Clone, Default)]
pub struct ListModels(pub Option<String>);
request!(ListModels => ListModelsData, |s| Command::ListModels(AgentTarget { agent_id: s.0 }));

/// `list_reasoning_levels`.
#[derive(Debug, Clone, Default)]
pub struct ListReasoningLevels(pub Option<String>);
request!(ListReasoningLevels => ReasoningLevelsData,
    |s| Command::ListReasoningLevels(AgentTarget { agent_id: s.0 }));

/// `request_sync`: the `sync` itself arrives as an event.
#[derive(Debug, Clone, Default)]
pub struct RequestSync(pub Option<String>);
request!(RequestSync => NoData, |s| Command::RequestSync(AgentTarget { agent_id: s.0 }));

/// `session_op list`.
#[derive(Debug, Clone, Default)]
pub struct ListSessions(pub Option<String>);
request!(ListSessions => SessionListData, |s| Command::SessionOp(SessionOp {
    agent_id: s.0,
    op: SessionOpKind::List,
    args: None,
}));

/// `session_op fork`: the agent, and where to fork from.
#[derive(Debug, Clone, Default)]
pub struct Fork(pub Option<String>, pub Option<SessionOpArgs>);
request!(Fork => ForkData, |s| Command::SessionOp(SessionOp {
    agent_id: s.0,
    op: SessionOpKind::Fork,
    args: s.1,
}));

/// `session_op compact`: the agent, and how much to keep.
#[derive(Debug, Clone, Default)]
pub struct Compact(pub Option<String>, pub Option<SessionOpArgs>);
request!(Compact => CompactData, |s| Command::SessionOp(SessionOp {
    agent_id: s.0,
    op: SessionOpKind::Compact,
    args: s.1,
}));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_data_accepts_anything() {
        for v in [
            serde_json::json!(null),
            serde_json::json!({"x": 1}),
            serde_json::json!([1, 2]),
        ] {
            assert_eq!(serde_json::from_value::<NoData>(v).ok(), Some(NoData));
        }
    }

    #[test]
    fn requests_build_their_commands() {
        let c = ListModels(Some("agt-1".into())).into_command();
        assert_eq!(c.type_name(), "list_models");
        let c = ListSessions(None).into_command();
        assert_eq!(c.type_name(), "session_op");
    }

    /// Compiles only when request `R` reads the response type the command table
    /// (`shard_protocol::table`) names for command `K`, and `R` builds command `K`.
    fn agrees<K, R>(request: R)
    where
        K: shard_protocol::CommandSpec<Response = R::Data>,
        R: Request,
    {
        assert_eq!(request.into_command().type_name(), K::TYPE);
    }

    #[test]
    fn response_types_agree_with_the_command_table() {
        use shard_protocol::command::kind;
        agrees::<kind::AgentList, _>(ListAgents);
        agrees::<kind::AgentStatus, _>(AgentStatusQuery::default());
        agrees::<kind::AgentTerminate, _>(Terminate("agt-1".into()));
        agrees::<kind::SetMode, _>(SetMode {
            agent_id: None,
            mode: "plan".into(),
        });
        agrees::<kind::ListModes, _>(ListModes(None));
        agrees::<kind::ListModels, _>(ListModels(None));
        agrees::<kind::ListReasoningLevels, _>(ListReasoningLevels(None));
    }
}
