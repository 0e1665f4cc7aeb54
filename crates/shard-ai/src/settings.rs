//! Resolved settings of one configured provider instance.

use std::time::Duration;

use crate::retry::RetryPolicy;
use crate::secret::ApiKey;

/// Default connect timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default idle-stream timeout: the longest silence tolerated between bytes (Anthropic
/// pings every few seconds; OpenAI reasoning models can think quietly for minutes).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// Everything a provider needs to make calls; built by [`crate::build_provider`] from the
/// configuration and environment, or directly by tests and embedders.
#[derive(Clone)]
pub struct ProviderSettings {
    /// Provider name as configured, e.g. `anthropic` or `ollama`.
    pub name: String,
    /// Base URL: host root for Anthropic, including `/v1` for OpenAI.
    pub base_url: String,
    /// The credential.
    pub api_key: ApiKey,
    /// Where the key came from (an environment variable name), for error messages.
    pub key_source: String,
    /// Extra HTTP headers sent with every call.
    pub headers: Vec<(String, String)>,
    /// TCP/TLS connect timeout.
    pub connect_timeout: Duration,
    /// Longest silence tolerated while waiting for the response or between chunks.
    pub idle_timeout: Duration,
    /// Retry policy.
    pub retry: RetryPolicy,
}

impl std::fmt::Debug for ProviderSettings {
    // Header values are left out: a configured header may carry a token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("ProviderSettings")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("key_source", &self.key_source)
            .field("headers", &header_names)
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("retry", &self.retry)
            .finish()
    }
}

impl ProviderSettings {
    /// Settings with default timeouts and retries.
    pub fn new(name: &str, base_url: &str, api_key: ApiKey, key_source: &str) -> Self {
        ProviderSettings {
            name: name.to_string(),
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key,
            key_source: key_source.to_string(),
            headers: Vec::new(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            retry: RetryPolicy::default(),
        }
    }

    /// Builds the header map: authentication (marked sensitive so it is never printed)
    /// and the configured extras.
    pub(crate) fn header_map(
        &self,
        auth: &[(&str, String)],
    ) -> Result<reqwest::header::HeaderMap, crate::ProviderError> {
        use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
        let mut map = HeaderMap::new();
        map.insert(
            reqwest::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        map.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        let bad = |what: &str| {
            crate::ProviderError::Config(format!(
                "provider {}: invalid HTTP header {what}",
                self.name
            ))
        };
        for (k, v) in &self.headers {
            let name = HeaderName::from_bytes(k.as_bytes()).map_err(|_| bad(k))?;
            let value = HeaderValue::from_str(v).map_err(|_| bad(k))?;
            map.insert(name, value);
        }
        // A provider configured without a key (a local server) sends no credentials.
        let auth = if self.api_key.expose().is_empty() {
            &[][..]
        } else {
            auth
        };
        for (k, v) in auth {
            let name = HeaderName::from_bytes(k.as_bytes()).map_err(|_| bad(k))?;
            // The value is deliberately not named in the error: it may hold the key.
            let mut value = HeaderValue::from_str(v).map_err(|_| bad(k))?;
            value.set_sensitive(true);
            map.insert(name, value);
        }
        Ok(map)
    }
}
