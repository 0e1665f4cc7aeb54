//! The configuration of a Runtime on another host: the host's own `config.toml`
//! combined with the tables its daemon forwarded in `runtime.settings`. The host may
//! override provider settings, but policy is the daemon's: the host can add deny rules
//! and make the sandbox stricter, never widen what a tool may do (docs/hosts.md).

use std::path::Path;

use shard_sandbox::SandboxMode;

use crate::config::{Config, ConfigError};

/// Sections the daemon forwards; anything else in the message is refused.
pub const FORWARDED_SECTIONS: &[&str] =
    &["providers", "models", "permissions", "headless", "sandbox"];

/// Parses the forwarded tables as the daemon's configuration file would be parsed.
pub fn daemon_config(
    tables: &serde_json::Map<String, serde_json::Value>,
) -> Result<Config, ConfigError> {
    let origin = Path::new("the daemon's config.toml");
    let invalid = |message: String| ConfigError::Invalid {
        path: origin.to_path_buf(),
        line: None,
        message,
    };
    if let Some(k) = tables
        .keys()
        .find(|k| !FORWARDED_SECTIONS.contains(&k.as_str()))
    {
        return Err(invalid(format!("section `{k}` is not forwarded to hosts")));
    }
    let table: toml::Table = serde_json::from_value(serde_json::Value::Object(tables.clone()))
        .map_err(|e| invalid(e.to_string()))?;
    let text = toml::to_string(&table).map_err(|e| invalid(e.to_string()))?;
    Config::parse(origin, &text)
}

/// Combines the host's configuration with the daemon's forwarded one.
pub fn combine(host: Config, daemon: Config) -> Config {
    let mut out = host;
    // Providers and models: the daemon's, each overridden by the host's of the same name.
    let mut providers = daemon.providers;
    providers.extend(std::mem::take(&mut out.providers));
    out.providers = providers;
    let mut models = daemon.models;
    models.append(&mut out.models);
    out.models = models;
    // Permissions: the daemon's rules, plus the host's deny rules; a host's own widening
    // keys are ignored (and said so in its log).
    let host_perm = std::mem::take(&mut out.permissions);
    if !host_perm.additional_directories.is_empty() || !host_perm.allow_secret.is_empty() {
        tracing::warn!(
            "the host's [permissions] additional_directories and allow_secret are ignored: \
             a daemon's agent runs with the daemon's permissions"
        );
    }
    out.permissions = daemon.permissions;
    out.permissions.deny.extend(host_perm.deny);
    if !out.headless.allow.is_empty() {
        tracing::warn!("the host's [headless] allow rules are ignored: the daemon's apply");
    }
    out.headless = daemon.headless;
    // Sandbox: the stricter mode, network only when both allow it, the daemon's writable
    // directories.
    let strict = |m: SandboxMode| match m {
        SandboxMode::Required => 2,
        SandboxMode::Auto => 1,
        SandboxMode::Off => 0,
    };
    let host_sb = std::mem::take(&mut out.sandbox);
    let mut sb = daemon.sandbox;
    if strict(host_sb.mode) > strict(sb.mode) {
        sb.mode = host_sb.mode;
    }
    sb.network = sb.network && host_sb.network;
    out.sandbox = sb;
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn parse(text: &str) -> Config {
        Config::parse(Path::new("config.toml"), text).unwrap()
    }

    fn tables(text: &str) -> serde_json::Map<String, serde_json::Value> {
        let t: toml::Table = toml::from_str(text).unwrap();
        serde_json::to_value(t)
            .unwrap()
            .as_object()
            .unwrap()
            .clone()
    }

    #[test]
    fn host_overrides_providers_but_never_widens_policy() {
        let daemon = daemon_config(&tables(
            "[providers.local]\nbase_url = \"http://daemon\"\n\n[providers.other]\nbase_url = \"http://o\"\n\n[[permissions.deny]]\ntool = \"bash\"\ncommand = \"git push*\"\n\n[sandbox]\nmode = \"auto\"\nnetwork = false\n",
        ))
        .unwrap();
        let host = parse(
            "[providers.local]\nbase_url = \"http://host\"\n\n[permissions]\nadditional_directories = [\"/\"]\n\n[[permissions.deny]]\ntool = \"bash\"\ncommand = \"rm *\"\n\n[[headless.allow]]\ntool = \"bash\"\ncommand = \"*\"\n\n[sandbox]\nmode = \"off\"\nnetwork = true\n",
        );
        let c = combine(host, daemon);
        assert_eq!(
            c.providers["local"].base_url.as_deref(),
            Some("http://host")
        );
        assert_eq!(c.providers["other"].base_url.as_deref(), Some("http://o"));
        assert!(c.permissions.additional_directories.is_empty());
        assert_eq!(c.permissions.deny.len(), 2);
        assert!(c.headless.allow.is_empty());
        assert_eq!(c.sandbox.mode, SandboxMode::Auto);
        assert!(!c.sandbox.network);
    }

    #[test]
    fn a_stricter_host_sandbox_stands() {
        let daemon = daemon_config(&tables("[sandbox]\nmode = \"off\"\n")).unwrap();
        let c = combine(parse("[sandbox]\nmode = \"required\"\n"), daemon);
        assert_eq!(c.sandbox.mode, SandboxMode::Required);
    }

    #[test]
    fn refuses_sections_that_are_not_forwarded() {
        let e = daemon_config(&tables("[hosts.x]\nssh = \"x\"\n")).unwrap_err();
        assert!(e.to_string().contains("not forwarded"), "{e}");
    }
}
