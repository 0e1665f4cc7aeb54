//! Which MCP servers a Runtime may start: the user's `[mcp.servers.NAME]` tables in
//! `SHARD_HOME/config.toml` and the project's `.mcp.json` (the format Claude Code and
//! others read), with `${VAR}` / `${VAR:-default}` expanded from the environment.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// The default per-call timeout of a server.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// `[mcp]` in `config.toml`. Strict like the rest of the file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// `[mcp.servers.NAME]`: the user's own servers, started in every project.
    pub servers: BTreeMap<String, ServerConfig>,
    /// `startup_timeout`: seconds a Runtime waits for its servers to connect before its
    /// first model request (default 10); a server still starting then is reported and
    /// joins later.
    pub startup_timeout: Option<u64>,
}

/// How long a Runtime waits for its servers before the first model request by default.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);

impl McpConfig {
    /// The bound on the wait for the servers before the first model request.
    pub fn startup_timeout(&self) -> Duration {
        self.startup_timeout
            .map_or(DEFAULT_STARTUP_TIMEOUT, Duration::from_secs)
    }
}

/// One server, as written in either file. `command` (stdio) or `url` (streamable HTTP).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// `"stdio"` (the default when `command` is set) or `"http"` (`"streamable-http"`).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Program of a stdio server.
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// The only variables a stdio server gets beyond the Runtime's scrubbed environment.
    pub env: BTreeMap<String, String>,
    /// Working directory of a stdio server (default: the Runtime's cwd).
    pub cwd: Option<String>,
    /// URL of an HTTP server.
    pub url: Option<String>,
    /// Headers sent to an HTTP server (often a token).
    pub headers: BTreeMap<String, String>,
    /// Every tool of this server only reads: calls run without asking (user's say only).
    #[serde(alias = "readOnly")]
    pub read_only: bool,
    /// These tools (their names on the server) only read.
    #[serde(alias = "readOnlyTools")]
    pub read_only_tools: Vec<String>,
    /// Per-call timeout in seconds (default 60).
    #[serde(alias = "timeoutSecs", alias = "timeout")]
    pub timeout_secs: Option<u64>,
    /// Set to `true` to keep the server configured but not started.
    pub disabled: bool,
    /// `false` runs a stdio server outside the tool sandbox (docs/mcp.md). Only the
    /// user's `config.toml` may say so; in a project's `.mcp.json` it is an error.
    pub sandbox: Option<bool>,
}

/// Where a server's configuration came from: it decides whether approval is needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `SHARD_HOME/config.toml`: the user wrote it; it starts everywhere.
    User,
    /// The project's `.mcp.json`: it starts once the user approved that file's content.
    Project,
    /// The client's (an editor's `mcpServers`): untrusted like a project's, always in
    /// the tool sandbox; the user chose to run it by configuring the editor.
    Client,
}

impl Origin {
    /// The name `shard mcp list` and docs use: `user`, `project`, `client`.
    pub fn name(self) -> &'static str {
        match self {
            Origin::User => "user",
            Origin::Project => "project",
            Origin::Client => "client",
        }
    }
}

/// How to reach a server. Its `Debug` shows no env or header value (they are secrets).
#[derive(Clone, PartialEq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on its standard input and output.
    Stdio {
        /// Program.
        command: String,
        /// Arguments.
        args: Vec<String>,
        /// Variables added to the scrubbed environment.
        env: BTreeMap<String, String>,
        /// Working directory, if not the Runtime's.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        /// Endpoint.
        url: String,
        /// Headers on every request.
        headers: BTreeMap<String, String>,
    },
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Transport::Stdio {
                command, args, env, ..
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .finish(),
            Transport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// The variable names `${…}` references in `text`.
pub fn referenced_vars(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { break };
        let inner = &after[..end];
        out.push(inner.split(":-").next().unwrap_or("").to_string());
        rest = &after[end + 1..];
    }
    out
}

/// A server ready to start: validated, variables expanded.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    /// Its name, the `SERVER` of `mcp__SERVER__TOOL`.
    pub name: String,
    /// Which file named it.
    pub origin: Origin,
    /// How to reach it.
    pub transport: Transport,
    /// All its tools only read.
    pub read_only: bool,
    /// These tools only read.
    pub read_only_tools: Vec<String>,
    /// Per-call timeout.
    pub timeout: Duration,
    /// The environment variables its secrets were expanded from: every variable of its
    /// `env` and `headers`, and the secret-looking ones (`*_TOKEN`, `*_KEY`, …) of its
    /// `command`, `args` and `url`. Other tools and servers never see them.
    pub secret_vars: Vec<String>,
    /// The values of those secrets, removed from any message that might quote them.
    pub secret_values: Vec<String>,
    /// A stdio server runs in the tool sandbox (always, unless the user's config says
    /// `sandbox = false`).
    pub sandboxed: bool,
}

impl ServerSpec {
    /// Whether a stdio server inherits the Runtime's environment (less the secrets):
    /// only the user's own servers do; a project's or a client's gets [`SHARED_VARS`] and
    /// its own `env`, nothing else.
    pub fn inherits_environment(&self) -> bool {
        self.origin == Origin::User
    }

    /// True when the user's configuration says this tool only reads.
    pub fn tool_is_read_only(&self, tool: &str) -> bool {
        self.read_only || self.read_only_tools.iter().any(|t| t == tool)
    }
}

/// A configuration the servers cannot be started from; one line naming the file.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
#[error("{file}: {message}")]
pub struct McpConfigError {
    /// The file.
    pub file: String,
    /// What is wrong, naming the server and field.
    pub message: String,
}

/// Checks a server's name: it becomes part of tool names, which providers restrict.
pub fn valid_name(name: &str) -> bool {
    shard_protocol::mcp::valid_server_name(name)
}

/// Variables a server's `env` may pass on that are nobody's secret: taking them from every
/// other tool (as a server's secrets are) would break those tools. They are also the whole
/// environment a project's or a client's server inherits from the Runtime (allow-listed:
/// the rest of the person's environment, their other tokens included, stays behind).
pub const SHARED_VARS: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LC_ALL",
    "TERM",
    "TMPDIR",
    "PWD",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_RUNTIME_DIR",
    "LC_CTYPE",
    "LC_MESSAGES",
    "LANGUAGE",
    "TZ",
];

/// The first variable a project's server references that it may never receive: a
/// provider key (`withheld`, the Runtime's key variables) or one of Shard's own
/// (`SHARD_*`). Every string of the server counts, defaults included: a project's file
/// comes with the repository, so whoever wrote the repository would get the key.
pub fn withheld_reference(cfg: &ServerConfig, withheld: &[String]) -> Option<String> {
    cfg.command
        .iter()
        .chain(cfg.url.iter())
        .chain(cfg.cwd.iter())
        .chain(cfg.args.iter())
        .chain(cfg.env.values())
        .chain(cfg.headers.values())
        .flat_map(|v| referenced_vars(v))
        .find(|v| {
            let upper = v.to_ascii_uppercase();
            upper.starts_with("SHARD_") || withheld.iter().any(|w| w.eq_ignore_ascii_case(v))
        })
}

/// Validates one server and expands its variables with `env`.
pub fn spec(
    name: &str,
    cfg: &ServerConfig,
    origin: Origin,
    file: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerSpec, McpConfigError> {
    let err = |message: String| McpConfigError {
        file: file.display().to_string(),
        message: format!("server `{name}`: {message}"),
    };
    if !valid_name(name) {
        return Err(err(
            "a server name is 1 to 32 letters, digits, `-` or `_`, without `__`".into(),
        ));
    }
    if origin == Origin::Project && cfg.sandbox == Some(false) {
        return Err(err(
            "`sandbox: false` is not accepted from a project's file; only the user's \
             config.toml can run a server outside the tool sandbox"
                .into(),
        ));
    }
    let x = |s: &str| expand(s, env).map_err(&err);
    let kind = cfg.kind.as_deref().map(str::to_ascii_lowercase);
    let transport = match (kind.as_deref(), &cfg.command, &cfg.url) {
        (None | Some("stdio"), Some(command), None) => Transport::Stdio {
            command: x(command)?,
            args: cfg.args.iter().map(|a| x(a)).collect::<Result<_, _>>()?,
            env: cfg
                .env
                .iter()
                .map(|(k, v)| Ok((k.clone(), x(v)?)))
                .collect::<Result<_, McpConfigError>>()?,
            cwd: cfg.cwd.as_deref().map(x).transpose()?.map(PathBuf::from),
        },
        (
            None | Some("http") | Some("streamable-http") | Some("streamable_http"),
            None,
            Some(url),
        ) => {
            let url = x(url)?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(err(format!(
                    "`url` must start with http:// or https://, not `{url}`"
                )));
            }
            Transport::Http {
                url,
                headers: cfg
                    .headers
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), x(v)?)))
                    .collect::<Result<_, McpConfigError>>()?,
            }
        }
        (Some("sse"), _, _) => {
            return Err(err(
                "the legacy `sse` transport is not supported; use `\"type\": \"http\"` \
                 (streamable HTTP)"
                    .into(),
            ));
        }
        (_, Some(_), Some(_)) => return Err(err("set `command` or `url`, not both".into())),
        (_, None, None) => {
            return Err(err(
                "set `command` (a stdio server) or `url` (an HTTP server)".into(),
            ));
        }
        (Some(other), _, _) => {
            return Err(err(format!(
                "unknown `type` `{other}` for these fields: use \"stdio\" with `command`, \
                 \"http\" with `url`"
            )));
        }
    };
    let inline = cfg
        .command
        .iter()
        .chain(cfg.url.iter())
        .chain(cfg.args.iter())
        .flat_map(|v| referenced_vars(v))
        .filter(|v| shard_sandbox::hardening::looks_secret(v));
    let secret_vars: Vec<String> = cfg
        .env
        .values()
        .chain(cfg.headers.values())
        .flat_map(|v| referenced_vars(v))
        .filter(|v| !SHARED_VARS.contains(&v.as_str()))
        .chain(inline)
        .collect();
    let secret_values = match &transport {
        Transport::Stdio { env, .. } => env.values().cloned().collect::<Vec<_>>(),
        Transport::Http { headers, .. } => headers.values().cloned().collect(),
    }
    .into_iter()
    .chain(secret_vars.iter().filter_map(|v| env(v)))
    .collect();
    Ok(ServerSpec {
        name: name.to_string(),
        origin,
        transport,
        // Only the user's own configuration may waive the question: a project's file
        // comes with the repository, and approving it shows its commands, not these flags.
        read_only: origin == Origin::User && cfg.read_only,
        read_only_tools: if origin == Origin::User {
            cfg.read_only_tools.clone()
        } else {
            Vec::new()
        },
        timeout: cfg
            .timeout_secs
            .filter(|s| *s > 0)
            .map(Duration::from_secs)
            .unwrap_or(DEFAULT_TIMEOUT),
        secret_vars,
        secret_values,
        sandboxed: cfg.sandbox != Some(false),
    })
}

/// Expands `${VAR}` and `${VAR:-default}`; an unset variable without a default is an
/// error naming it (a server started with an empty token fails in a confusing way).
pub fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("unclosed `${{` in `{text}`"));
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((v, d)) => (v, Some(d)),
            None => (inner, None),
        };
        if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("`${{{inner}}}` is not a variable name"));
        }
        match (env(var).filter(|v| !v.is_empty()), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => {
                return Err(format!(
                    "the environment variable `{var}` is not set (write `${{{var}:-default}}` \
                     for a default)"
                ));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `.mcp.json`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProjectFile {
    #[serde(default)]
    mcp_servers: BTreeMap<String, ServerConfig>,
}

/// The project's `.mcp.json`: where it is, its bytes' hash (for approval), its servers.
#[derive(Debug, Clone)]
pub struct ProjectServers {
    /// The file.
    pub path: PathBuf,
    /// What its approval records ([`approval_hash`]): SHA-256 of its content and of the
    /// project files its servers run, hex.
    pub sha256: String,
    /// Its servers, unexpanded.
    pub servers: BTreeMap<String, ServerConfig>,
}

/// The directory whose `.mcp.json` applies at `cwd`: the repository root (the nearest
/// ancestor holding `.git`), else `cwd` itself.
pub fn project_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// Reads the project's `.mcp.json`, if there is one.
pub fn read_project(cwd: &Path) -> Result<Option<ProjectServers>, McpConfigError> {
    let path = project_root(cwd).join(".mcp.json");
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(McpConfigError {
                file: path.display().to_string(),
                message: e.to_string(),
            });
        }
    };
    let parsed: ProjectFile = serde_json::from_slice(&bytes).map_err(|e| McpConfigError {
        file: path.display().to_string(),
        message: format!("line {}: {e}", e.line()),
    })?;
    let root = project_root(cwd);
    Ok(Some(ProjectServers {
        sha256: approval_hash(&bytes, &pinned_files(&parsed.mcp_servers, cwd, &root)),
        path,
        servers: parsed.mcp_servers,
    }))
}

pub use crate::pinning::{approval_hash, pinned_files};

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
