//! MCP servers a client supplies for its session (an editor's `mcpServers` over ACP):
//! `agent.create.mcp_servers`, a daemon agent's manifest, and what a Runtime receives in
//! [`CLIENT_MCP_ENV`]. They join the configured servers as untrusted ones (always in the
//! tool sandbox, every call through the gate). Their `env` and `headers` values are
//! secrets: `Debug` never shows them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The variable a Runtime reads its client-supplied servers from (a JSON array of
/// [`ClientMcpServer`]): the environment, not the command line, because other users can
/// read a command line. The Runtime removes it from every child's environment.
pub const CLIENT_MCP_ENV: &str = "SHARD_CLIENT_MCP_SERVERS";

/// How a client-supplied server is reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClientMcpTransport {
    /// A child process speaking JSON-RPC on its standard input and output.
    #[default]
    Stdio,
    /// Streamable HTTP.
    Http,
}

/// One MCP server a client supplies: `command` (+`args`, `env`) for stdio, `url`
/// (+`headers`) for HTTP.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientMcpServer {
    /// The `SERVER` of `mcp__SERVER__TOOL`: 1 to 32 letters, digits, `-` or `_`.
    pub name: String,
    /// Transport (default stdio).
    #[serde(default)]
    pub transport: ClientMcpTransport,
    /// Program of a stdio server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables added to the server's (scrubbed) environment. Secret.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Endpoint of an HTTP server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headers on every request to an HTTP server. Secret.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

impl std::fmt::Debug for ClientMcpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientMcpServer")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .field("command", &self.command)
            .field("args", &self.args.len())
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("url", &self.url.as_ref().map(|_| "…"))
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Checks a server name: it becomes part of tool names, which providers restrict.
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && !name.contains("__")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl ClientMcpServer {
    /// Checks one server. `Err` is `(field, why)`, the field relative to the server
    /// (`name`, `command`, `url`, …), the text quoting no value but the name.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if !valid_server_name(&self.name) {
            return Err((
                "name",
                format!(
                    "`{}` is not a server name: 1 to 32 letters, digits, `-` or `_`, without `__`",
                    self.name.escape_debug()
                ),
            ));
        }
        match self.transport {
            ClientMcpTransport::Stdio => {
                if self.command.as_deref().is_none_or(str::is_empty) {
                    return Err(("command", "a stdio server needs a command".into()));
                }
                if self.url.is_some() || !self.headers.is_empty() {
                    return Err(("url", "a stdio server has no url or headers".into()));
                }
            }
            ClientMcpTransport::Http => {
                let url = self.url.as_deref().unwrap_or_default();
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err((
                        "url",
                        "an HTTP server needs an http:// or https:// url".into(),
                    ));
                }
                if self.command.is_some() || !self.args.is_empty() || !self.env.is_empty() {
                    return Err((
                        "command",
                        "an HTTP server has no command, args or env".into(),
                    ));
                }
            }
        }
        if let Some(k) = self.env.keys().find(|k| !valid_var_name(k)) {
            return Err((
                "env",
                format!("`{}` is not a variable name", k.escape_debug()),
            ));
        }
        if let Some(k) = self.headers.keys().find(|k| !valid_header_name(k)) {
            return Err((
                "headers",
                format!("`{}` is not a header name", k.escape_debug()),
            ));
        }
        Ok(())
    }

    /// Every secret value (env and header values), to remove from any text that might
    /// quote one.
    pub fn secret_values(&self) -> impl Iterator<Item = &String> {
        self.env.values().chain(self.headers.values())
    }
}

/// Checks a list: `Err` is `(field path, why)`, e.g. `("[1].command", …)`, including a
/// name used twice.
pub fn validate_all(servers: &[ClientMcpServer]) -> Result<(), (String, String)> {
    for (i, s) in servers.iter().enumerate() {
        s.validate()
            .map_err(|(field, why)| (format!("[{i}].{field}"), why))?;
        if servers[..i].iter().any(|o| o.name == s.name) {
            return Err((
                format!("[{i}].name"),
                format!("server `{}` is named twice", s.name),
            ));
        }
    }
    Ok(())
}

fn valid_var_name(k: &str) -> bool {
    !k.is_empty()
        && !k.starts_with(|c: char| c.is_ascii_digit())
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn valid_header_name(k: &str) -> bool {
    !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn stdio(name: &str) -> ClientMcpServer {
        ClientMcpServer {
            name: name.into(),
            command: Some("srv".into()),
            env: BTreeMap::from([("API_TOKEN".into(), "s3cr3t-value".into())]),
            ..ClientMcpServer::default()
        }
    }

    #[test]
    fn debug_hides_secret_values() {
        let mut s = stdio("a");
        s.headers
            .insert("Authorization".into(), "Bearer hunter2".into());
        let text = format!("{s:?}");
        assert!(
            !text.contains("s3cr3t-value") && !text.contains("hunter2"),
            "{text}"
        );
        assert!(text.contains("API_TOKEN"), "{text}");
    }

    #[test]
    fn validation_names_the_field() {
        assert_eq!(validate_all(&[stdio("a"), stdio("b")]), Ok(()));
        let e = validate_all(&[stdio("a"), stdio("a__b")]).unwrap_err();
        assert_eq!(e.0, "[1].name");
        let e = validate_all(&[stdio("a"), stdio("a")]).unwrap_err();
        assert_eq!(e.0, "[1].name");
        let mut s = stdio("a");
        s.command = None;
        assert_eq!(validate_all(&[s]).unwrap_err().0, "[0].command");
        let http = ClientMcpServer {
            name: "h".into(),
            transport: ClientMcpTransport::Http,
            url: Some("file:///etc/passwd".into()),
            ..ClientMcpServer::default()
        };
        assert_eq!(validate_all(&[http]).unwrap_err().0, "[0].url");
        let mut s = stdio("a");
        s.env.insert("BAD=NAME".into(), "x".into());
        assert_eq!(validate_all(&[s]).unwrap_err().0, "[0].env");
    }
}
