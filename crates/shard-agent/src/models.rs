//! The model controller: the catalog, the active selection, the reasoning level, and the
//! provider behind it. A selection takes effect at the next provider call: the turn
//! loop reads [`ModelController::active`] once per call, never mid-stream.

use std::path::PathBuf;
use std::sync::Arc;

use shard_ai::Provider;
use shard_ai::catalog::{Catalog, ModelInfo};
use shard_ai::config::AiConfig;
use shard_protocol::responses::ReasoningLevel;
use shard_protocol::types::{ModelDescriptor, Usage};

/// Looks up an environment variable; providers read their keys through it, so tests
/// and embedders can supply keys without touching the process environment.
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Provider name of the offline replay provider.
pub const SCRIPTED: &str = "scripted";

/// The active model and its provider.
#[derive(Clone)]
pub struct ActiveModel {
    /// Catalog information.
    pub info: ModelInfo,
    /// The client.
    pub provider: Arc<dyn Provider>,
}

/// Owns the selection; the Runtime actor is its only user.
pub struct ModelController {
    catalog: Catalog,
    ai_config: AiConfig,
    env: EnvLookup,
    script: Option<PathBuf>,
    active: Option<ActiveModel>,
    reasoning: Option<String>,
    unavailable: Option<String>,
}

/// Why a selection failed.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct SelectError(pub String);

impl ModelController {
    /// A controller; `provider`/`model` come from flags, the session, or the default.
    pub fn new(ai_config: AiConfig, env: EnvLookup, script: Option<PathBuf>) -> Self {
        let catalog = Catalog::with_config(&ai_config);
        ModelController {
            catalog,
            ai_config,
            env,
            script,
            active: None,
            reasoning: None,
            unavailable: None,
        }
    }

    /// Selects the initial model: the explicit choice, else the configured default.
    /// Failing that, the Runtime still starts and the first prompt reports why.
    pub fn init(&mut self, provider: Option<&str>, model: Option<&str>) {
        let choice = match (provider, model) {
            (Some(p), Some(m)) => Some((p.to_string(), m.to_string())),
            (Some(p), None) if p == SCRIPTED => Some((p.to_string(), "script".to_string())),
            (Some(p), None) => {
                let env = self.env.clone();
                let configured = shard_ai::default_selection(&self.ai_config, &|k| env(k))
                    .filter(|(dp, _)| dp == p)
                    .map(|(_, m)| m);
                let model = configured.or_else(|| {
                    self.catalog
                        .list()
                        .iter()
                        .find(|i| i.provider == p)
                        .map(|i| i.model.clone())
                });
                Some((p.to_string(), model.unwrap_or_default()))
            }
            (None, Some(m)) => self.provider_of(m),
            (None, None) => {
                if self.script.is_some() {
                    Some((SCRIPTED.to_string(), "script".to_string()))
                } else {
                    let env = self.env.clone();
                    shard_ai::default_selection(&self.ai_config, &|k| env(k))
                }
            }
        };
        match choice {
            Some((p, m)) => {
                let (p, m): (String, String) = (p, m);
                if let Err(e) = self.select(&p, &m) {
                    self.unavailable = Some(e.0);
                }
            }
            None => {
                self.unavailable = Some(
                    "no model provider is configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY, \
                     or add a provider to SHARD_HOME/config.toml"
                        .to_string(),
                )
            }
        }
    }

    fn provider_of(&self, model: &str) -> Option<(String, String)> {
        if let Some((p, m)) = model.split_once('/') {
            return Some((p.to_string(), m.to_string()));
        }
        self.catalog
            .list()
            .iter()
            .find(|i| i.model == model)
            .map(|i| (i.provider.clone(), i.model.clone()))
    }

    /// Builds the provider and makes it active.
    pub fn select(&mut self, provider: &str, model: &str) -> Result<(), SelectError> {
        let active = self.build(provider, model)?;
        // Keep the level across a model switch when the new model has it; else the
        // provider's usual default (`medium`), else the model's first level.
        let levels = &active.info.reasoning_levels;
        let has = |l: &str| levels.iter().any(|(id, _)| id == l);
        self.reasoning = match self.reasoning.take() {
            Some(r) if has(&r) => Some(r),
            _ if has("medium") && active.info.provider != "anthropic" => Some("medium".into()),
            _ => levels.first().map(|(id, _)| id.clone()),
        };
        self.active = Some(active);
        self.unavailable = None;
        Ok(())
    }

    fn build(&self, provider: &str, model: &str) -> Result<ActiveModel, SelectError> {
        if provider == SCRIPTED {
            let Some(path) = &self.script else {
                return Err(SelectError(
                    "the scripted provider needs --script FILE".to_string(),
                ));
            };
            let p = shard_ai::ScriptedProvider::from_file(path)
                .map_err(|e| SelectError(e.to_string()))?;
            let mut info = self.catalog.resolve(SCRIPTED, model);
            info.id = format!("{SCRIPTED}/{model}");
            return Ok(ActiveModel {
                info,
                provider: Arc::new(p),
            });
        }
        if model.is_empty() {
            return Err(SelectError(format!(
                "no default model for provider `{provider}`: pass --model"
            )));
        }
        let env = self.env.clone();
        let p = shard_ai::build_provider(provider, &self.ai_config, &|k| env(k))
            .map_err(|e| SelectError(e.to_string()))?;
        Ok(ActiveModel {
            info: self.catalog.resolve(provider, model),
            provider: p,
        })
    }

    /// The active model, or why there is none.
    pub fn active(&self) -> Result<&ActiveModel, String> {
        self.active.as_ref().ok_or_else(|| {
            self.unavailable
                .clone()
                .unwrap_or_else(|| "no model selected".to_string())
        })
    }

    /// The active descriptor (a placeholder when none is usable).
    pub fn descriptor(&self) -> ModelDescriptor {
        match &self.active {
            Some(a) => a.info.to_descriptor(),
            None => ModelDescriptor {
                id: "none".into(),
                provider: "none".into(),
                model: "none".into(),
                context_window: None,
            },
        }
    }

    /// The catalog, secret-free; the active model is always included.
    pub fn catalog(&self) -> Vec<ModelDescriptor> {
        let mut list: Vec<ModelDescriptor> = self
            .catalog
            .list()
            .iter()
            .map(ModelInfo::to_descriptor)
            .collect();
        if let Some(a) = &self.active {
            let d = a.info.to_descriptor();
            if !list.iter().any(|x| x.id == d.id) {
                list.insert(0, d);
            }
        }
        list
    }

    /// Selects by catalog id (`provider/model`).
    pub fn select_id(&mut self, id: &str) -> Result<(), SelectError> {
        let Some((p, m)) = id.split_once('/') else {
            return Err(SelectError(format!(
                "unknown model `{id}`: use a catalog id such as `anthropic/claude-sonnet-4-5`"
            )));
        };
        let known_provider = p == SCRIPTED
            || self.catalog.list().iter().any(|i| i.provider == p)
            || self.ai_config.providers.contains_key(p);
        if !known_provider {
            return Err(SelectError(format!("unknown provider `{p}`")));
        }
        self.select(p, m)
    }

    /// Reasoning levels of the active model (empty when it has none).
    pub fn reasoning_levels(&self) -> Vec<ReasoningLevel> {
        self.active
            .as_ref()
            .map(|a| {
                a.info
                    .reasoning_levels
                    .iter()
                    .map(|(id, label)| ReasoningLevel {
                        id: id.clone(),
                        label: label.clone(),
                        description: None,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The active reasoning level.
    pub fn reasoning(&self) -> Option<&str> {
        self.reasoning.as_deref()
    }

    /// Sets the reasoning level; `Err` when unknown.
    pub fn set_reasoning(&mut self, level: &str) -> Result<Option<String>, SelectError> {
        if !self.reasoning_levels().iter().any(|l| l.id == level) {
            return Err(SelectError(format!("unknown reasoning level `{level}`")));
        }
        Ok(self.reasoning.replace(level.to_string()))
    }

    /// Capability strings for the active model.
    pub fn capabilities(&self) -> Vec<String> {
        let mut caps: Vec<String> = [
            "streaming-deltas",
            "mode-catalog",
            "mode-switch",
            "model-catalog",
            "model-switch",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if !self.reasoning_levels().is_empty() {
            caps.push("reasoning-catalog".into());
            caps.push("reasoning-switch".into());
        }
        if self.active.as_ref().is_some_and(|a| a.info.supports_images) {
            caps.push("images".into());
        }
        caps
    }

    /// Cost of a usage on the active model.
    pub fn cost(&self, usage: &Usage) -> Option<f64> {
        self.active
            .as_ref()
            .and_then(|a| shard_ai::catalog::cost(&a.info, usage))
    }
}
