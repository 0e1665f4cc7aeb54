//! Seams an embedder plugs into a Runtime: the hook that runs before every model call
//! (compaction plugs in here), and [`Seams`], the narrow way to build a Runtime
//! in-process with an injected provider (the in-process test suite, an embedding host).

use std::sync::Arc;

use futures::future::BoxFuture;
use shard_ai::Provider;
use shard_ai::catalog::ModelInfo;
use shard_protocol::types::{Message, Usage};

/// The model's context as shared data: each message is reference-counted, so handing
/// the context to a hook or a provider copies pointers, never message bodies or images.
pub type SharedContext = Vec<Arc<Message>>;

/// What a hook sees before a model call.
#[derive(Clone)]
pub struct ModelCallView {
    /// The context about to be sent, oldest first.
    pub messages: SharedContext,
    /// The model the call goes to (context window, output limit).
    pub model: ModelInfo,
    /// Usage reported by the previous call of this Runtime, if any (its
    /// `context_tokens` is the size of the context that call sent).
    pub last_usage: Option<Usage>,
}

/// What a hook decided.
pub enum HookOutcome {
    /// Send the context unchanged.
    Keep,
    /// Send this context instead; it also replaces the Runtime's live context, so later
    /// calls extend it. A hook that replaces the context (compaction) persists what a
    /// restarted Runtime needs to rebuild the same context from the session.
    Replace(SharedContext),
}

/// Runs before every model call of a turn. The Runtime keeps serving commands while the
/// returned future runs (an abort drops it), so a hook may call a model or the disk.
pub trait ModelCallHook: Send + Sync {
    /// Inspects the context; `Err` (one line) is reported as an error event and ends the
    /// turn, since a call the hook could not prepare should not be sent.
    fn before_model_call(
        &self,
        view: ModelCallView,
    ) -> BoxFuture<'static, Result<HookOutcome, String>>;
}

/// What an embedder injects into a Runtime built in-process
/// ([`crate::Runtime::open_with`]). Empty by default: `shard agent` uses none of them.
#[derive(Clone, Default)]
pub struct Seams {
    /// Serves every model selection instead of the provider the configuration would
    /// build (the selection and its catalog entry are resolved as usual).
    pub provider: Option<Arc<dyn Provider>>,
    /// Runs before every model call.
    pub model_call_hook: Option<Arc<dyn ModelCallHook>>,
}
