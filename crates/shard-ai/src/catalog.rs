//! The model catalog: context windows, output limits, list prices and reasoning levels
//! of the built-in Anthropic and OpenAI models, extended by `[[models]]` from the
//! configuration. Any model name is accepted for a known provider; an unknown one gets
//! [`DEFAULT_CONTEXT_WINDOW`] and no price.
//!
//! Figures were checked on 2026-12-02 (see docs/providers.md); prices are US dollars per
//! million tokens.

use serde::{Deserialize, Serialize};
use shard_protocol::types::{ModelDescriptor, Usage};

use crate::config::AiConfig;

/// Context window assumed for a model the catalog does not know.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// List prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// Uncached input.
    #[serde(default)]
    pub input: Option<f64>,
    /// Output (reasoning included).
    #[serde(default)]
    pub output: Option<f64>,
    /// Input read from the prompt cache.
    #[serde(default)]
    pub cache_read: Option<f64>,
    /// Input written to the prompt cache.
    #[serde(default)]
    pub cache_write: Option<f64>,
}

/// One catalog entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// `provider/model`.
    pub id: String,
    /// Provider name.
    pub provider: String,
    /// The name the provider's API knows.
    pub model: String,
    /// Context window in tokens.
    pub context_window: u64,
    /// Largest output the model may produce, when known.
    pub max_output: Option<u64>,
    /// Prices; all `None` when unknown.
    pub prices: Prices,
    /// Reasoning effort levels as `(id, label)`; empty when the model has no switch.
    pub reasoning_levels: Vec<(String, String)>,
    /// Whether the model accepts images.
    pub supports_images: bool,
}

impl ModelInfo {
    /// The wire description for clients.
    pub fn to_descriptor(&self) -> ModelDescriptor {
        ModelDescriptor {
            id: self.id.clone(),
            provider: self.provider.clone(),
            model: self.model.clone(),
            context_window: Some(self.context_window),
        }
    }

    /// The entry for a model the catalog does not know.
    pub fn unknown(provider: &str, model: &str) -> Self {
        ModelInfo {
            id: format!("{provider}/{model}"),
            provider: provider.to_string(),
            model: model.to_string(),
            context_window: DEFAULT_CONTEXT_WINDOW,
            max_output: None,
            prices: Prices::default(),
            reasoning_levels: Vec::new(),
            supports_images: true,
        }
    }
}

/// Cost in US dollars of `usage` at the model's prices: Σ tokens × price / 1e6. `None`
/// when the input or output price is unknown. Cache tokens without their own price are
/// charged at the input price.
pub fn cost(model: &ModelInfo, usage: &Usage) -> Option<f64> {
    let p = &model.prices;
    let input = p.input?;
    let output = p.output?;
    let read = p.cache_read.unwrap_or(input);
    let write = p.cache_write.unwrap_or(input);
    let total = usage.input as f64 * input
        + usage.output as f64 * output
        + usage.cache_read.unwrap_or(0) as f64 * read
        + usage.cache_write.unwrap_or(0) as f64 * write;
    Some(total / 1e6)
}

/// The built-in and configured models.
#[derive(Debug, Clone)]
pub struct Catalog {
    models: Vec<ModelInfo>,
    providers: Vec<String>,
}

type Row = (&'static str, u64, u64, [f64; 4], Levels, bool);

#[derive(Clone, Copy)]
enum Levels {
    None,
    /// Anthropic extended thinking budgets.
    Thinking,
    /// gpt-5 / gpt-5-mini / gpt-5-nano.
    Gpt5,
    /// gpt-5.1 and later.
    Gpt5Later,
    /// o-series.
    OSeries,
}

fn levels(l: Levels) -> Vec<(String, String)> {
    let ids: &[&str] = match l {
        Levels::None => &[],
        Levels::Thinking => &["off", "low", "medium", "high"],
        Levels::Gpt5 => &["minimal", "low", "medium", "high"],
        Levels::Gpt5Later => &["none", "low", "medium", "high", "xhigh"],
        Levels::OSeries => &["low", "medium", "high"],
    };
    ids.iter()
        .map(|id| {
            let label = match *id {
                "xhigh" => "Extra high".to_string(),
                other => {
                    let mut c = other.chars();
                    c.next()
                        .map(|f| f.to_uppercase().chain(c).collect())
                        .unwrap_or_default()
                }
            };
            (id.to_string(), label)
        })
        .collect()
}

/// Anthropic models: (model, context, max output, [input, output, cache read, cache write]).
const ANTHROPIC: &[Row] = &[
    (
        "claude-fable-5",
        1_000_000,
        128_000,
        [10.0, 50.0, 1.0, 12.5],
        Levels::Thinking,
        true,
    ),
    (
        "claude-opus-5",
        1_000_000,
        128_000,
        [5.0, 25.0, 0.5, 6.25],
        Levels::Thinking,
        true,
    ),
    (
        "claude-sonnet-5",
        1_000_000,
        128_000,
        [2.0, 10.0, 0.2, 2.5],
        Levels::Thinking,
        true,
    ),
    (
        "claude-opus-4-6",
        1_000_000,
        128_000,
        [5.0, 25.0, 0.5, 6.25],
        Levels::Thinking,
        true,
    ),
    (
        "claude-sonnet-4-6",
        1_000_000,
        64_000,
        [3.0, 15.0, 0.3, 3.75],
        Levels::Thinking,
        true,
    ),
    (
        "claude-opus-4-5",
        200_000,
        64_000,
        [5.0, 25.0, 0.5, 6.25],
        Levels::Thinking,
        true,
    ),
    (
        "claude-sonnet-4-5",
        200_000,
        64_000,
        [3.0, 15.0, 0.3, 3.75],
        Levels::Thinking,
        true,
    ),
    (
        "claude-haiku-4-5",
        200_000,
        64_000,
        [1.0, 5.0, 0.1, 1.25],
        Levels::Thinking,
        true,
    ),
    (
        "claude-opus-4-1",
        200_000,
        32_000,
        [15.0, 75.0, 1.5, 18.75],
        Levels::Thinking,
        true,
    ),
    (
        "claude-sonnet-4-0",
        200_000,
        64_000,
        [3.0, 15.0, 0.3, 3.75],
        Levels::Thinking,
        true,
    ),
];

/// OpenAI models (cache write is free: NaN marks "no price").
const OPENAI: &[Row] = &[
    (
        "gpt-5.4",
        1_050_000,
        128_000,
        [2.5, 15.0, 0.25, f64::NAN],
        Levels::Gpt5Later,
        true,
    ),
    (
        "gpt-5.4-mini",
        400_000,
        128_000,
        [0.75, 4.5, 0.075, f64::NAN],
        Levels::Gpt5Later,
        true,
    ),
    (
        "gpt-5.3-codex",
        400_000,
        128_000,
        [1.75, 14.0, 0.175, f64::NAN],
        Levels::Gpt5Later,
        true,
    ),
    (
        "gpt-5.2",
        400_000,
        128_000,
        [1.75, 14.0, 0.175, f64::NAN],
        Levels::Gpt5Later,
        true,
    ),
    (
        "gpt-5.1",
        400_000,
        128_000,
        [1.25, 10.0, 0.125, f64::NAN],
        Levels::Gpt5Later,
        true,
    ),
    (
        "gpt-5",
        400_000,
        128_000,
        [1.25, 10.0, 0.125, f64::NAN],
        Levels::Gpt5,
        true,
    ),
    (
        "gpt-5-mini",
        400_000,
        128_000,
        [0.25, 2.0, 0.025, f64::NAN],
        Levels::Gpt5,
        true,
    ),
    (
        "gpt-5-nano",
        400_000,
        128_000,
        [0.05, 0.4, 0.005, f64::NAN],
        Levels::Gpt5,
        true,
    ),
    (
        "gpt-4.1",
        1_047_576,
        32_768,
        [2.0, 8.0, 0.5, f64::NAN],
        Levels::None,
        true,
    ),
    (
        "gpt-4.1-mini",
        1_047_576,
        32_768,
        [0.4, 1.6, 0.1, f64::NAN],
        Levels::None,
        true,
    ),
    (
        "gpt-4.1-nano",
        1_047_576,
        32_768,
        [0.1, 0.4, 0.025, f64::NAN],
        Levels::None,
        true,
    ),
    (
        "gpt-4o",
        128_000,
        16_384,
        [2.5, 10.0, 1.25, f64::NAN],
        Levels::None,
        true,
    ),
    (
        "o3",
        200_000,
        100_000,
        [2.0, 8.0, 0.5, f64::NAN],
        Levels::OSeries,
        true,
    ),
    (
        "o4-mini",
        200_000,
        100_000,
        [1.1, 4.4, 0.275, f64::NAN],
        Levels::OSeries,
        true,
    ),
];

fn price(p: f64) -> Option<f64> {
    (!p.is_nan()).then_some(p)
}

fn rows(provider: &str, rows: &[Row]) -> impl Iterator<Item = ModelInfo> {
    rows.iter()
        .map(move |(model, ctx, out, p, l, images)| ModelInfo {
            id: format!("{provider}/{model}"),
            provider: provider.to_string(),
            model: model.to_string(),
            context_window: *ctx,
            max_output: Some(*out),
            prices: Prices {
                input: price(p[0]),
                output: price(p[1]),
                cache_read: price(p[2]),
                cache_write: price(p[3]),
            },
            reasoning_levels: levels(*l),
            supports_images: *images,
        })
}

/// `name` without a trailing snapshot date (`-20250929` or `-2025-08-07`).
fn strip_date(name: &str) -> &str {
    let b = name.as_bytes();
    let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    if b.len() > 9 && b[b.len() - 9] == b'-' && digits(&b[b.len() - 8..]) {
        return &name[..name.len() - 9];
    }
    if b.len() > 11
        && b[b.len() - 11] == b'-'
        && digits(&b[b.len() - 10..b.len() - 6])
        && b[b.len() - 6] == b'-'
        && digits(&b[b.len() - 5..b.len() - 3])
        && b[b.len() - 3] == b'-'
        && digits(&b[b.len() - 2..])
    {
        return &name[..name.len() - 11];
    }
    name
}

impl Catalog {
    /// The built-in catalog only.
    pub fn builtin() -> Self {
        Catalog::with_config(&AiConfig::default())
    }

    /// Built-in models plus the configured providers and `[[models]]`; a configured
    /// model replaces a built-in one with the same id.
    pub fn with_config(config: &AiConfig) -> Self {
        let mut models: Vec<ModelInfo> = rows("anthropic", ANTHROPIC)
            .chain(rows("openai", OPENAI))
            .chain(rows("openai-responses", OPENAI))
            .collect();
        let mut providers: Vec<String> = crate::config::BUILTIN_PROVIDERS
            .iter()
            .map(|s| s.to_string())
            .collect();
        for name in config.providers.keys() {
            if !providers.contains(name) {
                providers.push(name.clone());
            }
        }
        for m in &config.models {
            let Some(info) = m.to_info() else {
                tracing::warn!("ignoring a [[models]] entry without provider or model");
                continue;
            };
            if !providers.contains(&info.provider) {
                providers.push(info.provider.clone());
            }
            models.retain(|x| x.id != info.id);
            models.push(info);
        }
        Catalog { models, providers }
    }

    /// Whether `provider` is built in or configured.
    pub fn is_known_provider(&self, provider: &str) -> bool {
        self.providers.iter().any(|p| p == provider)
    }

    /// The entry for `provider/model`. Dated snapshots resolve to their base entry (with
    /// the requested name kept); anything else gets the default context window and no
    /// price.
    pub fn resolve(&self, provider: &str, model: &str) -> ModelInfo {
        let find = |name: &str| {
            self.models
                .iter()
                .find(|m| m.provider == provider && m.model == name)
        };
        if let Some(m) = find(model) {
            return m.clone();
        }
        if let Some(m) = find(strip_date(model)) {
            let mut m = m.clone();
            m.model = model.to_string();
            m.id = format!("{provider}/{model}");
            return m;
        }
        ModelInfo::unknown(provider, model)
    }

    /// Every known model, built-in first.
    pub fn list(&self) -> &[ModelInfo] {
        &self.models
    }

    /// Whether `provider/model` is in the catalog (a dated snapshot of a listed model
    /// counts). Selection refuses other models of built-in providers; a configured
    /// provider (a local or proxy server) may serve any name.
    pub fn knows(&self, provider: &str, model: &str) -> bool {
        self.models
            .iter()
            .any(|m| m.provider == provider && (m.model == model || m.model == strip_date(model)))
    }

    /// Provider names, built-in first.
    pub fn providers(&self) -> &[String] {
        &self.providers
    }
}

/// What a model accepts as an image input: the MIME types and the largest decoded size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageLimits {
    /// Accepted MIME types.
    pub mime_types: &'static [&'static str],
    /// Largest decoded image in bytes.
    pub max_bytes: usize,
}

/// The image limits of `model` (`None`: it takes no images). Both APIs accept PNG, JPEG,
/// GIF and WebP; Anthropic refuses images over 5 MB, OpenAI over 20 MB (their documented
/// per-image limits); other providers speak one of the two protocols and get the stricter.
pub fn image_limits(model: &ModelInfo) -> Option<ImageLimits> {
    if !model.supports_images {
        return None;
    }
    const TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];
    let max_bytes = match model.provider.as_str() {
        "openai" | "openai-responses" => 20 * 1024 * 1024,
        _ => 5 * 1024 * 1024,
    };
    Some(ImageLimits {
        mime_types: TYPES,
        max_bytes,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn resolve_known_dated_and_unknown() {
        let c = Catalog::builtin();
        let m = c.resolve("anthropic", "claude-haiku-4-5");
        assert_eq!(m.context_window, 200_000);
        assert_eq!(m.prices.input, Some(1.0));
        let d = c.resolve("anthropic", "claude-haiku-4-5-20251001");
        assert_eq!(d.model, "claude-haiku-4-5-20251001");
        assert_eq!(d.prices.output, Some(5.0));
        let g = c.resolve("openai", "gpt-5-nano-2025-08-07");
        assert_eq!(g.prices.input, Some(0.05));
        let u = c.resolve("openai", "my-local-model");
        assert_eq!(u.context_window, DEFAULT_CONTEXT_WINDOW);
        assert_eq!(u.prices, Prices::default());
        assert_eq!(cost(&u, &Usage::default()), None);
    }

    #[test]
    fn cost_sums_all_token_kinds() {
        let c = Catalog::builtin();
        let m = c.resolve("anthropic", "claude-sonnet-4-5");
        let usage = Usage {
            input: 1_000_000,
            output: 100_000,
            cache_read: Some(2_000_000),
            cache_write: Some(400_000),
            ..Usage::default()
        };
        // 3 + 1.5 + 0.6 + 1.5
        let got = cost(&m, &usage).unwrap();
        assert!((got - 6.6).abs() < 1e-9, "{got}");
        // OpenAI has no cache-write price: such tokens fall back to the input price.
        let o = c.resolve("openai", "gpt-4.1");
        let got = cost(
            &o,
            &Usage {
                input: 0,
                output: 0,
                cache_write: Some(1_000_000),
                ..Usage::default()
            },
        )
        .unwrap();
        assert!((got - 2.0).abs() < 1e-9);
    }

    #[test]
    fn descriptor_and_levels() {
        let c = Catalog::builtin();
        let m = c.resolve("openai-responses", "gpt-5.4");
        let d = m.to_descriptor();
        assert_eq!(d.id, "openai-responses/gpt-5.4");
        assert_eq!(d.context_window, Some(1_050_000));
        assert!(
            m.reasoning_levels
                .iter()
                .any(|(id, label)| id == "xhigh" && label == "Extra high")
        );
        assert!(c.resolve("openai", "gpt-4.1").reasoning_levels.is_empty());
    }

    #[test]
    fn strip_dates() {
        assert_eq!(
            strip_date("claude-sonnet-4-5-20250929"),
            "claude-sonnet-4-5"
        );
        assert_eq!(strip_date("gpt-4o-2024-08-06"), "gpt-4o");
        assert_eq!(strip_date("gpt-5"), "gpt-5");
    }
}
