//! The provider and model choice: the model controller (catalog, active model, reasoning
//! level, costs), the mode controller, and the hook that runs before every model call.
//! What a model call goes to and under which rules, apart from the conversation it sends.

use std::sync::Arc;

use shard_ai::ModelInfo;

use crate::hooks::ModelCallHook;
use crate::models::ModelController;
use crate::modes::ModeController;

/// The provider and model choice, with the active mode.
pub(crate) struct Choice {
    pub(super) models: ModelController,
    pub(super) modes: ModeController,
    pub(super) hook: Option<Arc<dyn ModelCallHook>>,
}

impl Choice {
    /// The active model's catalog entry, when a model is usable.
    pub(super) fn active_info(&self) -> Option<ModelInfo> {
        self.models.active().ok().map(|a| a.info.clone())
    }

    /// The active model's context window in tokens; `None` when unknown or no model.
    pub(super) fn context_window(&self) -> Option<u64> {
        self.models
            .active()
            .ok()
            .map(|a| a.info.context_window)
            .filter(|w| *w > 0)
    }

    /// Tokens kept free for the answer in a window of `window`: the model's output limit,
    /// at most a quarter of the window.
    pub(super) fn output_reserve(&self, window: u64) -> u64 {
        self.models
            .active()
            .ok()
            .and_then(|a| a.info.max_output)
            .unwrap_or(0)
            .min(window / 4)
    }

    /// Whether tool results may carry images to the active model, and the most bytes one
    /// may have.
    pub(super) fn images(&self) -> (bool, usize) {
        let active = self.models.active().ok();
        let accepts = active.is_some_and(|a| a.info.supports_images);
        let max_bytes = active
            .and_then(|a| shard_ai::image_limits(&a.info))
            .map_or(0, |l| l.max_bytes);
        (accepts, max_bytes)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::models::EnvLookup;

    fn choice(provider: &str, model: &str) -> Choice {
        let env: EnvLookup = Arc::new(|k: &str| {
            (k == "ANTHROPIC_API_KEY" || k == "OPENAI_API_KEY").then(|| "test".to_string())
        });
        let mut models = ModelController::new(toml::from_str("").unwrap(), env, None);
        models.init(Some(provider), Some(model));
        Choice {
            models,
            modes: ModeController::new(&[]),
            hook: None,
        }
    }

    #[test]
    fn the_active_model_bounds_the_window_the_reserve_and_images() {
        let c = choice("anthropic", "claude-sonnet-4-5");
        let info = c.active_info().unwrap();
        let window = c.context_window().unwrap();
        assert_eq!(window, info.context_window);
        let reserve = c.output_reserve(window);
        assert!(reserve > 0 && reserve <= window / 4);
        // A small window caps the reserve at a quarter of it.
        assert_eq!(c.output_reserve(400), 100.min(info.max_output.unwrap_or(0)));
        let (accepts, max_bytes) = c.images();
        assert_eq!(accepts, info.supports_images);
        assert!(!accepts || max_bytes > 0);
    }

    #[test]
    fn without_a_usable_model_nothing_is_assumed() {
        let c = choice("nope", "nothing");
        assert!(c.active_info().is_none());
        assert!(c.context_window().is_none());
        assert_eq!(c.output_reserve(1000), 0);
        assert_eq!(c.images(), (false, 0));
    }
}
