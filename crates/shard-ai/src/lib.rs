//! Model providers behind one streaming trait ([`Provider`]), the model catalog, and
//! usage/cost normalization. Knows nothing about tools' behaviour or sessions.

pub mod provider;
pub mod scripted;

pub use provider::{
    EventStream, ModelRequest, Provider, ProviderError, StopReason, StreamEvent, ToolSpec,
};
pub use scripted::ScriptedProvider;
