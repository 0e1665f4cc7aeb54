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
    /// An injected provider that serves every selection ([`crate::Seams::provider`]).
    provider_override: Option<Arc<dyn Provider>>,
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
            provider_override: None,
        }
    }

    /// Makes `provider` serve the active selection and every later one; selections are
    /// still resolved against the catalog, so model changes behave as in production.
    pub fn set_provider_override(&mut self, provider: Arc<dyn Provider>) {
        if let Some(active) = &mut self.active {
            active.provider = provider.clone();
        }
        self.provider_override = Some(provider);
    }

    /// Selects the initial model (see [`ModelController::resolve`]). Failing that, the
    /// Runtime still starts and the first prompt reports why.
    pub fn init(&mut self, provider: Option<&str>, model: Option<&str>) {
        let chosen = self
            .resolve(provider, model)
            .and_then(|(p, m)| self.select(&p, &m));
        if let Err(e) = chosen {
            self.active = None;
            self.unavailable = Some(e.0);
        }
    }

    /// The one model resolution rule (docs/providers.md, "Which model runs"):
    ///
    /// 1. `provider` and `model`: that pair (`model` may repeat the provider as
    ///    `provider/model`);
    /// 2. `provider` alone: its default model ([`shard_ai::default_model_for`]);
    /// 3. `model` alone: `provider/model`, or a bare catalog name — of the active provider
    ///    first, else of the one provider (with credentials first) that lists it;
    /// 4. neither: the scripted provider when a script is given, else
    ///    [`shard_ai::default_selection`].
    ///
    /// An explicit provider may be asked for any model name, so a model released after
    /// this build works at once ([`ModelController::notice`] says what is assumed about
    /// it); only a bare name must be in the catalog. Every error says what would work.
    pub fn resolve(
        &self,
        provider: Option<&str>,
        model: Option<&str>,
    ) -> Result<(String, String), SelectError> {
        let provider = provider.map(str::trim).filter(|p| !p.is_empty());
        let model = model.map(str::trim).filter(|m| !m.is_empty());
        let (provider, model) = match (provider, model) {
            (Some(p), Some(m)) => {
                let m = m.strip_prefix(&format!("{p}/")).unwrap_or(m);
                (p.to_string(), m.to_string())
            }
            (Some(p), None) => {
                self.check_provider(p)?;
                let m = if p == SCRIPTED {
                    Some("script".to_string())
                } else {
                    shard_ai::default_model_for(p, &self.ai_config)
                };
                let m = m.ok_or_else(|| {
                    SelectError(format!(
                        "provider `{p}` has no default model: pass --model, or set \
                         default_model in [providers.{p}] of SHARD_HOME/config.toml"
                    ))
                })?;
                (p.to_string(), m)
            }
            (None, Some(m)) => self.bare_or_qualified(m)?,
            (None, None) => {
                if self.script.is_some() {
                    (SCRIPTED.to_string(), "script".to_string())
                } else {
                    let env = self.env.clone();
                    shard_ai::default_selection(&self.ai_config, &|k| env(k)).ok_or_else(|| {
                        SelectError(
                            "no model provider is configured: set ANTHROPIC_API_KEY or \
                                 OPENAI_API_KEY, or add a provider to SHARD_HOME/config.toml"
                                .to_string(),
                        )
                    })?
                }
            }
        };
        self.check_provider(&provider)?;
        Ok((provider, model))
    }

    /// `provider/model` with a known provider, else a bare catalog name.
    fn bare_or_qualified(&self, m: &str) -> Result<(String, String), SelectError> {
        if let Some((p, rest)) = m.split_once('/')
            && (p == SCRIPTED || self.catalog.is_known_provider(p))
        {
            return Ok((p.to_string(), rest.to_string()));
        }
        if let Some(a) = &self.active
            && self.catalog.knows(&a.info.provider, m)
        {
            return Ok((a.info.provider.clone(), m.to_string()));
        }
        let env = self.env.clone();
        let mut listing: Vec<&str> = self
            .catalog
            .list()
            .iter()
            .filter(|i| self.catalog.knows(&i.provider, m))
            .map(|i| i.provider.as_str())
            .collect();
        listing.dedup();
        let usable = listing
            .iter()
            .find(|p| shard_ai::has_credentials(p, &self.ai_config, &|k| env(k)));
        match usable.or(listing.first()) {
            Some(p) => Ok((p.to_string(), m.to_string())),
            None => {
                let near = self.similar(m);
                let hint = if near.is_empty() {
                    format!("use a catalog name such as {}.", self.example_models())
                } else {
                    format!("did you mean {}?", near.join(" or "))
                };
                Err(SelectError(format!(
                    "unknown model `{m}`: {hint} A model the catalog lacks needs its \
                     provider: provider/model (providers: {})",
                    self.provider_names()
                )))
            }
        }
    }

    /// Up to three catalog names close to `m` (by edit distance, or containing it), as
    /// suggestions for a mistyped bare name.
    fn similar(&self, m: &str) -> Vec<String> {
        let want = m.to_lowercase();
        let mut scored: Vec<(usize, &str)> = Vec::new();
        for i in self.catalog.list() {
            let d = if i.model.contains(&want) {
                0
            } else {
                edit_distance(&want, &i.model)
            };
            if d <= (want.chars().count() / 3).max(2) && !scored.iter().any(|(_, n)| *n == i.model)
            {
                scored.push((d, &i.model));
            }
        }
        scored.sort();
        scored
            .into_iter()
            .take(3)
            .map(|(_, n)| format!("`{n}`"))
            .collect()
    }

    fn check_provider(&self, p: &str) -> Result<(), SelectError> {
        if p == SCRIPTED || self.catalog.is_known_provider(p) {
            return Ok(());
        }
        Err(SelectError(format!(
            "unknown provider `{p}`: use one of {}, or define [providers.{p}] in \
             SHARD_HOME/config.toml",
            self.provider_names()
        )))
    }

    /// One line for a model the catalog lacks that a built-in provider will be asked
    /// for by name (`None` for a catalog model, the scripted provider, or a configured
    /// provider, whose names are the user's own): its price, hence its cost, is unknown,
    /// and its context window is assumed.
    pub fn uncataloged_notice(&self, p: &str, m: &str) -> Option<String> {
        let builtin = shard_ai::config::BUILTIN_PROVIDERS.contains(&p);
        if !builtin || self.catalog.knows(p, m) {
            return None;
        }
        Some(format!(
            "note: `{p}/{m}` is not in Shard's model catalog: its price is unknown, so no \
             cost is shown, and its context window is assumed to be {} tokens (a [[models]] \
             entry in SHARD_HOME/config.toml sets both)",
            shard_ai::catalog::DEFAULT_CONTEXT_WINDOW
        ))
    }

    /// The notice for the active model (see [`ModelController::uncataloged_notice`]).
    pub fn notice(&self) -> Option<String> {
        let a = self.active.as_ref()?;
        self.uncataloged_notice(&a.info.provider, &a.info.model)
    }

    fn provider_names(&self) -> String {
        let mut names: Vec<&str> = self
            .catalog
            .providers()
            .iter()
            .map(String::as_str)
            .collect();
        if self.script.is_some() {
            names.push(SCRIPTED);
        }
        names.join(", ")
    }

    fn example_models(&self) -> String {
        let examples: Vec<String> = self
            .catalog
            .list()
            .iter()
            .filter(|i| i.provider == "anthropic")
            .take(2)
            .map(|i| format!("`{}`", i.model))
            .collect();
        examples.join(" or ")
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
        if let Some(injected) = &self.provider_override
            && !model.is_empty()
        {
            let mut info = self.catalog.resolve(provider, model);
            if provider == SCRIPTED {
                info.id = format!("{SCRIPTED}/{model}");
            }
            return Ok(ActiveModel {
                info,
                provider: injected.clone(),
            });
        }
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

    /// The catalog offered to pickers, secret-free: models of providers usable now (with
    /// credentials, or keyless), each usable configured provider's default model, and
    /// always the active model.
    pub fn catalog(&self) -> Vec<ModelDescriptor> {
        let env = self.env.clone();
        let usable = |p: &str| shard_ai::has_credentials(p, &self.ai_config, &|k| env(k));
        let mut list: Vec<ModelDescriptor> = self
            .catalog
            .list()
            .iter()
            .filter(|i| usable(&i.provider))
            .map(ModelInfo::to_descriptor)
            .collect();
        for name in self.ai_config.providers.keys() {
            if let Some(m) = shard_ai::default_model_for(name, &self.ai_config)
                && usable(name)
            {
                let d = self.catalog.resolve(name, &m).to_descriptor();
                if !list.iter().any(|x| x.id == d.id) {
                    list.push(d);
                }
            }
        }
        if let Some(a) = &self.active {
            let d = a.info.to_descriptor();
            if !list.iter().any(|x| x.id == d.id) {
                list.insert(0, d);
            }
        }
        list
    }

    /// Selects what `set_model` names: a catalog id (`provider/model`) or a bare catalog
    /// name (the active provider's first). The selection is unchanged on error.
    pub fn select_id(&mut self, id: &str) -> Result<(), SelectError> {
        let (p, m) = self.resolve(None, Some(id))?;
        self.select(&p, &m)
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

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn controller(config: &str, keys: &'static [(&'static str, &'static str)]) -> ModelController {
        let cfg: AiConfig = toml::from_str(config).unwrap();
        let env: EnvLookup = Arc::new(move |k: &str| {
            keys.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        });
        ModelController::new(cfg, env, None)
    }

    fn pair(p: &str, m: &str) -> (String, String) {
        (p.to_string(), m.to_string())
    }

    #[test]
    fn one_rule_for_every_choice() {
        let both = &[("ANTHROPIC_API_KEY", "a"), ("OPENAI_API_KEY", "o")];
        let local =
            "[providers.local]\nbase_url = \"http://127.0.0.1:9/v1\"\ndefault_model = \"qwen3\"\n";
        let c = controller(local, both);
        // Neither: the configured default wins over keys in the environment.
        assert_eq!(c.resolve(None, None).unwrap(), pair("local", "qwen3"));
        // Provider alone: its default; model alone: qualified or a bare catalog name.
        assert_eq!(
            c.resolve(Some("openai"), None).unwrap(),
            pair("openai", "gpt-5.4")
        );
        assert_eq!(
            c.resolve(None, Some("claude-haiku-4-5")).unwrap(),
            pair("anthropic", "claude-haiku-4-5")
        );
        assert_eq!(
            c.resolve(Some("openai"), Some("openai/gpt-5-mini"))
                .unwrap(),
            pair("openai", "gpt-5-mini")
        );
        // A configured provider serves any model name; a built-in one only its catalog.
        assert_eq!(
            c.resolve(Some("local"), Some("anything")).unwrap(),
            pair("local", "anything")
        );
        // An explicit provider may name a model the catalog lacks, with a notice; a
        // bare unknown name is refused with suggestions.
        assert_eq!(
            c.resolve(None, Some("anthropic/claude-nope")).unwrap(),
            pair("anthropic", "claude-nope")
        );
        assert_eq!(
            c.resolve(Some("openai"), Some("gpt-9")).unwrap(),
            pair("openai", "gpt-9")
        );
        let n = c.uncataloged_notice("anthropic", "claude-nope").unwrap();
        assert!(n.contains("128000") && n.contains("price"), "{n}");
        assert_eq!(c.uncataloged_notice("anthropic", "claude-haiku-4-5"), None);
        assert_eq!(c.uncataloged_notice("local", "anything"), None);
        let e = c.resolve(None, Some("claude-sonet-4-5")).unwrap_err().0;
        assert!(e.contains("did you mean `claude-sonnet-4-5`"), "{e}");
        let e = c.resolve(Some("nosuch"), None).unwrap_err().0;
        assert!(e.contains("anthropic, openai"), "{e}");
        let e = c.resolve(None, Some("no-such-model")).unwrap_err().0;
        assert!(e.contains("provider/model"), "{e}");
    }

    #[test]
    fn a_bare_name_prefers_the_active_provider_and_listing_needs_credentials() {
        let mut c = controller("", &[("OPENAI_API_KEY", "o")]);
        c.init(Some("openai-responses"), Some("gpt-5"));
        assert_eq!(c.descriptor().id, "openai-responses/gpt-5");
        c.select_id("gpt-5-mini").unwrap();
        assert_eq!(c.descriptor().id, "openai-responses/gpt-5-mini");
        assert!(c.select_id("no-such").is_err());
        assert_eq!(c.descriptor().id, "openai-responses/gpt-5-mini");
        assert_eq!(c.notice(), None);
        c.select_id("openai/gpt-next").unwrap();
        assert_eq!(c.descriptor().id, "openai/gpt-next");
        assert!(c.notice().unwrap().contains("openai/gpt-next"));
        assert!(c.catalog().iter().all(|m| m.provider != "anthropic"));
        assert!(c.catalog().iter().any(|m| m.provider == "openai"));
    }
}
