//! Model providers behind one streaming trait ([`Provider`]), the model catalog, and
//! usage/cost normalization. Knows nothing about tools' behaviour or sessions.
//!
//! Real providers: [`AnthropicProvider`] (`anthropic`), [`OpenAiChatProvider`]
//! (`openai`, also for compatible servers) and [`OpenAiResponsesProvider`]
//! (`openai-responses`), built from configuration by [`build_provider`].

// Standard output is the protocol (`shard agent`) and standard error belongs to the
// binary: a library reports through return values and `tracing`, never by printing.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod anthropic;
mod anthropic_stream;
pub mod catalog;
pub mod config;
mod convert;
pub mod decode;
pub mod errors;
mod http;
mod http_client;
pub mod openai_chat;
pub mod openai_responses;
pub mod provider;
pub mod retry;
pub mod scripted;
pub mod secret;
pub mod settings;
pub mod sse;

pub use anthropic::AnthropicProvider;
pub use catalog::{Catalog, ImageLimits, ModelInfo, Prices, cost, image_limits};
pub use config::{
    AiConfig, ModelConfig, ProviderConfig, ProviderKind, build_provider, default_model_for,
    default_selection, has_credentials, secret_env_vars,
};
pub use openai_chat::OpenAiChatProvider;
pub use openai_responses::OpenAiResponsesProvider;
pub use provider::{
    ApiError, ErrorKind, EventStream, ModelRequest, Provider, ProviderError, StopReason,
    StreamEvent, ToolSpec,
};
pub use scripted::ScriptedProvider;
pub use secret::ApiKey;
pub use settings::ProviderSettings;
