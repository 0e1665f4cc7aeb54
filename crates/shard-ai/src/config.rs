//! The `[providers.NAME]` and `[[models]]` sections of `SHARD_HOME/config.toml`, and
//! turning them (plus the environment) into providers.
//!
//! ```toml
//! [providers.ollama]
//! kind = "openai"                       # anthropic | openai | openai-responses
//! base_url = "http://localhost:11434/v1"
//! # api_key_env = "OLLAMA_KEY"          # omitted: no key is sent (local servers)
//! headers = { "x-title" = "shard" }
//! default_model = "qwen3-coder"
//!
//! [[models]]
//! id = "ollama/qwen3-coder"             # or provider = "ollama", model = "qwen3-coder"
//! context_window = 262144
//! max_output = 32768
//! prices = { input = 0.0, output = 0.0 }
//! reasoning_levels = ["low", "high"]    # or [{ id = "low", label = "Low" }]
//! supports_images = false
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::anthropic::AnthropicProvider;
use crate::catalog::{DEFAULT_CONTEXT_WINDOW, ModelInfo, Prices};
use crate::openai_chat::OpenAiChatProvider;
use crate::openai_responses::OpenAiResponsesProvider;
use crate::provider::{Provider, ProviderError};
use crate::retry::RetryPolicy;
use crate::secret::ApiKey;
use crate::settings::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_IDLE_TIMEOUT, ProviderSettings};

/// Providers that exist without configuration.
pub const BUILTIN_PROVIDERS: &[&str] = &["anthropic", "openai", "openai-responses"];
/// Default Anthropic host root (the client appends `/v1/messages`).
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// Default OpenAI base URL, version included.
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// Model picked by [`default_selection`] for Anthropic.
pub const ANTHROPIC_DEFAULT_MODEL: &str = "claude-sonnet-5";
/// Model picked by [`default_selection`] for OpenAI.
pub const OPENAI_DEFAULT_MODEL: &str = "gpt-5.4";

/// The wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum ProviderKind {
    /// Anthropic Messages.
    #[serde(rename = "anthropic")]
    Anthropic,
    /// OpenAI Chat Completions and compatible servers.
    #[serde(rename = "openai")]
    OpenAi,
    /// OpenAI Responses.
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
}

/// One `[providers.NAME]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// Protocol; defaults to the built-in provider of the same name, else `openai`.
    #[serde(default)]
    pub kind: Option<ProviderKind>,
    /// Endpoint base URL (see the module docs for what each kind appends).
    #[serde(default)]
    pub base_url: Option<String>,
    /// Environment variable holding the key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Extra HTTP headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Model used when none is chosen.
    #[serde(default)]
    pub default_model: Option<String>,
    /// Connect timeout in seconds (default 10).
    #[serde(default)]
    pub connect_timeout_secs: Option<f64>,
    /// Longest silence on a stream in seconds (default 300).
    #[serde(default)]
    pub idle_timeout_secs: Option<f64>,
    /// Retries after the first attempt (default 4).
    #[serde(default)]
    pub max_retries: Option<u32>,
    /// Base backoff delay in milliseconds (default 500).
    #[serde(default)]
    pub retry_base_ms: Option<u64>,
}

/// A reasoning level as written in the configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(
    untagged,
    deny_unknown_fields,
    expecting = "a level id, or a table with `id` and `label`"
)]
pub enum ReasoningLevelConfig {
    /// Just the id; the label is the id.
    Id(String),
    /// Id and label.
    Full {
        /// Level id sent to the provider.
        id: String,
        /// Label for pickers.
        label: String,
    },
}

/// One `[[models]]` entry.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// Provider name (or give `id = "provider/model"`).
    #[serde(default)]
    pub provider: Option<String>,
    /// Model name.
    #[serde(default)]
    pub model: Option<String>,
    /// `provider/model`, or a bare model name when `provider` is set.
    #[serde(default)]
    pub id: Option<String>,
    /// Context window in tokens.
    #[serde(default)]
    pub context_window: Option<u64>,
    /// Output limit in tokens.
    #[serde(default)]
    pub max_output: Option<u64>,
    /// Prices per million tokens.
    #[serde(default)]
    pub prices: Option<Prices>,
    /// Reasoning levels.
    #[serde(default)]
    pub reasoning_levels: Vec<ReasoningLevelConfig>,
    /// Image input support (default true).
    #[serde(default)]
    pub supports_images: Option<bool>,
}

impl ModelConfig {
    /// The catalog entry this describes, when it names a provider and a model.
    pub fn to_info(&self) -> Option<ModelInfo> {
        let (provider, model) = match (&self.provider, &self.model, &self.id) {
            (Some(p), Some(m), _) => (p.clone(), m.clone()),
            (Some(p), None, Some(id)) => {
                let m = id.strip_prefix(&format!("{p}/")).unwrap_or(id);
                (p.clone(), m.to_string())
            }
            (None, model, Some(id)) => {
                let (p, m) = id.split_once('/')?;
                (
                    p.to_string(),
                    model.clone().unwrap_or_else(|| m.to_string()),
                )
            }
            _ => return None,
        };
        Some(ModelInfo {
            id: format!("{provider}/{model}"),
            context_window: self.context_window.unwrap_or(DEFAULT_CONTEXT_WINDOW),
            max_output: self.max_output,
            prices: self.prices.unwrap_or_default(),
            reasoning_levels: self
                .reasoning_levels
                .iter()
                .map(|l| match l {
                    ReasoningLevelConfig::Id(id) => (id.clone(), id.clone()),
                    ReasoningLevelConfig::Full { id, label } => (id.clone(), label.clone()),
                })
                .collect(),
            supports_images: self.supports_images.unwrap_or(true),
            provider,
            model,
        })
    }
}

/// The AI-related sections of `config.toml`, handed over by the Runtime (which reads
/// the whole file strictly). Standing alone it is strict too: any other key is refused.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AiConfig {
    /// `[providers.NAME]` tables.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    /// `[[models]]` entries.
    #[serde(default)]
    pub models: Vec<ModelConfig>,
}

/// Resolved wiring of one provider name.
struct Resolved {
    kind: ProviderKind,
    base_url: String,
    /// `None`: no key is needed.
    key_env: Option<String>,
    config: ProviderConfig,
}

fn builtin_kind(name: &str) -> Option<ProviderKind> {
    match name {
        "anthropic" => Some(ProviderKind::Anthropic),
        "openai" => Some(ProviderKind::OpenAi),
        "openai-responses" => Some(ProviderKind::OpenAiResponses),
        _ => None,
    }
}

fn resolve(
    name: &str,
    config: &AiConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<Resolved> {
    let configured = config.providers.get(name);
    let builtin = builtin_kind(name);
    if configured.is_none() && builtin.is_none() {
        return None;
    }
    let pc = configured.cloned().unwrap_or_default();
    let kind = pc.kind.or(builtin).unwrap_or(ProviderKind::OpenAi);
    let (env_url, default_url, default_key) = match kind {
        ProviderKind::Anthropic => (
            "ANTHROPIC_BASE_URL",
            ANTHROPIC_DEFAULT_BASE_URL,
            "ANTHROPIC_API_KEY",
        ),
        _ => ("OPENAI_BASE_URL", OPENAI_DEFAULT_BASE_URL, "OPENAI_API_KEY"),
    };
    // A custom provider only inherits the SDK variables when it has no URL of its own.
    let base_url = pc
        .base_url
        .clone()
        .or_else(|| env(env_url).filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| default_url.to_string());
    let key_env = match (&pc.api_key_env, builtin, &pc.base_url) {
        (Some(v), _, _) => Some(v.clone()),
        (None, Some(_), _) | (None, None, None) => Some(default_key.to_string()),
        (None, None, Some(_)) => None,
    };
    Some(Resolved {
        kind,
        base_url,
        key_env,
        config: pc,
    })
}

/// Builds the provider called `name` from the configuration and the environment.
pub fn build_provider(
    name: &str,
    config: &AiConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Provider>, ProviderError> {
    let Some(r) = resolve(name, config, env) else {
        return Err(ProviderError::Config(format!(
            "unknown provider {name:?}: use anthropic, openai or openai-responses, or define [providers.{name}] in SHARD_HOME/config.toml"
        )));
    };
    let key = match &r.key_env {
        Some(var) => match env(var).filter(|k| !k.trim().is_empty()) {
            Some(k) => ApiKey::new(k.trim()),
            None => {
                return Err(ProviderError::Config(format!(
                    "no API key for provider {name}: set {var} (or configure [providers.{name}] api_key_env in SHARD_HOME/config.toml)"
                )));
            }
        },
        None => ApiKey::new(""),
    };
    let pc = &r.config;
    let mut settings = ProviderSettings::new(
        name,
        &r.base_url,
        key,
        r.key_env.as_deref().unwrap_or("the provider configuration"),
    );
    settings.headers = pc
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let secs = |v: Option<f64>, d: Duration| {
        v.filter(|s| s.is_finite() && *s > 0.0)
            .map(Duration::from_secs_f64)
            .unwrap_or(d)
    };
    settings.connect_timeout = secs(pc.connect_timeout_secs, DEFAULT_CONNECT_TIMEOUT);
    settings.idle_timeout = secs(pc.idle_timeout_secs, DEFAULT_IDLE_TIMEOUT);
    let mut retry = RetryPolicy::default();
    if let Some(n) = pc.max_retries {
        retry.max_retries = n;
    }
    if let Some(ms) = pc.retry_base_ms {
        retry.base_delay = Duration::from_millis(ms);
    }
    settings.retry = retry;
    Ok(match r.kind {
        ProviderKind::Anthropic => Arc::new(AnthropicProvider::new(settings)?),
        ProviderKind::OpenAi => Arc::new(OpenAiChatProvider::new(settings)?),
        ProviderKind::OpenAiResponses => Arc::new(OpenAiResponsesProvider::new(settings)?),
    })
}

/// Every environment variable that may hold a provider key, built-in and configured, so
/// tool processes can be started without them.
pub fn secret_env_vars(config: &AiConfig) -> Vec<String> {
    let mut vars = vec![
        "ANTHROPIC_API_KEY".to_string(),
        "OPENAI_API_KEY".to_string(),
    ];
    for pc in config.providers.values() {
        if let Some(v) = &pc.api_key_env
            && !vars.contains(v)
        {
            vars.push(v.clone());
        }
    }
    vars
}

/// Whether provider `name` can be used now: it is known and its key (if it needs one) is
/// set. Model pickers offer only these.
pub fn has_credentials(
    name: &str,
    config: &AiConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> bool {
    match resolve(name, config, env) {
        Some(r) => match &r.key_env {
            Some(var) => env(var).is_some_and(|k| !k.trim().is_empty()),
            None => true,
        },
        None => false,
    }
}

/// The model provider `name` uses when none is named: its configured `default_model`,
/// else its first `[[models]]` entry, else the built-in default of its protocol (the
/// Anthropic or OpenAI default). `None` for an unknown provider.
pub fn default_model_for(name: &str, config: &AiConfig) -> Option<String> {
    let configured = config.providers.get(name);
    let kind = configured
        .and_then(|c| c.kind)
        .or(builtin_kind(name))
        .or(configured.map(|_| ProviderKind::OpenAi))?;
    if let Some(m) = configured.and_then(|c| c.default_model.clone()) {
        return Some(m);
    }
    if let Some(m) = config
        .models
        .iter()
        .filter_map(ModelConfig::to_info)
        .find(|m| m.provider == name)
    {
        return Some(m.model);
    }
    // A custom provider (a local server) has no built-in model to fall back to.
    builtin_kind(name)?;
    Some(match kind {
        ProviderKind::Anthropic => ANTHROPIC_DEFAULT_MODEL.to_string(),
        _ => OPENAI_DEFAULT_MODEL.to_string(),
    })
}

/// The provider and model to use when the user chose none (docs/providers.md, "Which
/// model runs"): first a configured provider that names a `default_model` and is usable
/// (configured ones by name) — what the user wrote in `config.toml` wins over keys that
/// merely happen to be in the environment —, then Anthropic, then OpenAI when their key
/// is set, then any other usable configured provider.
pub fn default_selection(
    config: &AiConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<(String, String)> {
    let mut names: Vec<&str> = config
        .providers
        .iter()
        .filter(|(_, pc)| pc.default_model.is_some())
        .map(|(n, _)| n.as_str())
        .collect();
    for n in ["anthropic", "openai"] {
        if !names.contains(&n) {
            names.push(n);
        }
    }
    for n in config.providers.keys() {
        if !names.contains(&n.as_str()) {
            names.push(n);
        }
    }
    names
        .into_iter()
        .filter(|n| has_credentials(n, config, env))
        .find_map(|n| default_model_for(n, config).map(|m| (n.to_string(), m)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn missing_key_is_one_clear_line() {
        let err = build_provider("anthropic", &AiConfig::default(), &env_of(&[]))
            .err()
            .unwrap();
        let text = err.to_string();
        assert!(text.contains("ANTHROPIC_API_KEY"), "{text}");
        assert!(!text.contains('\n'));
        assert!(build_provider("nope", &AiConfig::default(), &env_of(&[])).is_err());
    }

    #[test]
    fn builds_builtin_providers_with_keys() {
        let env = env_of(&[("ANTHROPIC_API_KEY", "k1"), ("OPENAI_API_KEY", "k2")]);
        for name in BUILTIN_PROVIDERS {
            let p = build_provider(name, &AiConfig::default(), &env).unwrap();
            assert_eq!(p.name(), *name);
        }
    }

    #[test]
    fn default_selection_order() {
        let cfg = AiConfig::default();
        assert_eq!(default_selection(&cfg, &env_of(&[])), None);
        assert_eq!(
            default_selection(&cfg, &env_of(&[("OPENAI_API_KEY", "x")])),
            Some(("openai".into(), OPENAI_DEFAULT_MODEL.into()))
        );
        assert_eq!(
            default_selection(
                &cfg,
                &env_of(&[("OPENAI_API_KEY", "x"), ("ANTHROPIC_API_KEY", "y")])
            ),
            Some(("anthropic".into(), ANTHROPIC_DEFAULT_MODEL.into()))
        );
    }

    #[test]
    fn parses_config_and_collects_secret_vars() {
        let text = r#"
            [providers.ollama]
            kind = "openai"
            base_url = "http://localhost:11434/v1"
            default_model = "qwen3"

            [providers.router]
            base_url = "https://openrouter.ai/api/v1"
            api_key_env = "OPENROUTER_API_KEY"
            headers = { "x-title" = "shard" }

            [[models]]
            id = "ollama/qwen3"
            context_window = 32768
            reasoning_levels = ["low", { id = "high", label = "High" }]
            prices = { input = 0.5, output = 1.0 }
        "#;
        let cfg: AiConfig = toml::from_str(text).unwrap();
        assert_eq!(
            secret_env_vars(&cfg),
            vec!["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY"]
        );
        // Ollama needs no key, so it is usable with an empty environment.
        assert_eq!(
            default_selection(&cfg, &env_of(&[])),
            Some(("ollama".into(), "qwen3".into()))
        );
        assert!(build_provider("ollama", &cfg, &env_of(&[])).is_ok());
        let err = build_provider("router", &cfg, &env_of(&[])).err().unwrap();
        assert!(err.to_string().contains("OPENROUTER_API_KEY"));
        let cat = crate::Catalog::with_config(&cfg);
        let m = cat.resolve("ollama", "qwen3");
        assert_eq!(m.context_window, 32768);
        assert_eq!(
            m.reasoning_levels,
            vec![("low".into(), "low".into()), ("high".into(), "High".into())]
        );
        assert_eq!(m.prices.input, Some(0.5));
        assert!(cat.is_known_provider("router"));
    }

    #[test]
    fn configured_default_model_wins_over_environment_keys() {
        let cfg: AiConfig = toml::from_str(
            r#"
            [providers.ollama]
            base_url = "http://localhost:11434/v1"
            default_model = "qwen3"
            [providers.router]
            base_url = "https://openrouter.ai/api/v1"
            api_key_env = "OPENROUTER_API_KEY"
            "#,
        )
        .unwrap();
        let env = env_of(&[("OPENAI_API_KEY", "x"), ("ANTHROPIC_API_KEY", "y")]);
        assert_eq!(
            default_selection(&cfg, &env),
            Some(("ollama".into(), "qwen3".into()))
        );
        assert_eq!(default_model_for("ollama", &cfg).as_deref(), Some("qwen3"));
        assert_eq!(default_model_for("router", &cfg), None);
        assert_eq!(
            default_model_for("openai", &cfg).as_deref(),
            Some(OPENAI_DEFAULT_MODEL)
        );
        assert!(has_credentials("ollama", &cfg, &env));
        assert!(!has_credentials("router", &cfg, &env));
        assert!(!has_credentials("nope", &cfg, &env));
    }
}
