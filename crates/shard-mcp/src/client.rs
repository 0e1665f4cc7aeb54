//! Servers a client supplies (an editor's `mcpServers`, `agent.create.mcp_servers`).
//! They are untrusted like a project's `.mcp.json`: always in the tool sandbox, never
//! read-only on their own say, every call through the gate. Their values are taken
//! literally: no `${VAR}` expansion, so a list the Runtime did not write cannot pull one
//! of its variables (a provider key) into a server it names.

use shard_protocol::mcp::{ClientMcpServer, ClientMcpTransport};

use crate::config::{DEFAULT_TIMEOUT, Origin, ServerSpec, Transport};
use crate::{Resolved, Skipped};

/// Adds the client's servers to `resolved`; one that is invalid, or named like a
/// configured server (which wins), is reported as skipped, never fatal.
pub fn add_client_servers(resolved: &mut Resolved, servers: &[ClientMcpServer]) {
    for s in servers {
        if let Err((field, why)) = s.validate() {
            resolved.skipped.push(Skipped {
                name: s.name.clone(),
                reason: format!("the client's server is invalid ({field}): {why}"),
            });
            continue;
        }
        let taken = resolved.start.iter().any(|x| x.name == s.name)
            || resolved.skipped.iter().any(|x| x.name == s.name);
        if taken {
            resolved.skipped.push(Skipped {
                name: s.name.clone(),
                reason: format!(
                    "the client's server `{}` is named like a configured one, which wins",
                    s.name
                ),
            });
            continue;
        }
        resolved.start.push(spec(s));
    }
}

fn spec(s: &ClientMcpServer) -> ServerSpec {
    let transport = match s.transport {
        ClientMcpTransport::Stdio => Transport::Stdio {
            command: s.command.clone().unwrap_or_default(),
            args: s.args.clone(),
            env: s.env.clone(),
            cwd: None,
        },
        ClientMcpTransport::Http => Transport::Http {
            url: s.url.clone().unwrap_or_default(),
            headers: s.headers.clone(),
        },
    };
    ServerSpec {
        name: s.name.clone(),
        origin: Origin::Client,
        transport,
        read_only: false,
        read_only_tools: Vec::new(),
        timeout: DEFAULT_TIMEOUT,
        secret_vars: Vec::new(),
        secret_values: s
            .secret_values()
            .filter(|v| !v.is_empty())
            .cloned()
            .collect(),
        sandboxed: true,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::collections::BTreeMap;

    use super::*;

    fn server(name: &str, command: &str) -> ClientMcpServer {
        ClientMcpServer {
            name: name.into(),
            command: Some(command.into()),
            args: vec!["${HOME}".into()],
            env: BTreeMap::from([("TOKEN".into(), "${ANTHROPIC_API_KEY}".into())]),
            ..ClientMcpServer::default()
        }
    }

    #[test]
    fn client_servers_are_sandboxed_literal_and_lose_to_configured_names() {
        let mut r = Resolved::default();
        add_client_servers(&mut r, &[server("ed", "srv")]);
        let s = &r.start[0];
        assert_eq!(s.origin, Origin::Client);
        assert!(s.sandboxed && !s.read_only);
        // Nothing is expanded from the Runtime's environment.
        let Transport::Stdio { args, env, .. } = &s.transport else {
            panic!("stdio expected")
        };
        assert_eq!(args, &vec!["${HOME}".to_string()]);
        assert_eq!(env["TOKEN"], "${ANTHROPIC_API_KEY}");
        assert_eq!(s.secret_values, vec!["${ANTHROPIC_API_KEY}".to_string()]);

        add_client_servers(&mut r, &[server("ed", "other"), server("a__b", "x")]);
        assert_eq!(r.start.len(), 1);
        assert_eq!(r.skipped.len(), 2);
        assert!(
            r.skipped[0].reason.contains("configured"),
            "{:?}",
            r.skipped
        );
        assert!(r.skipped[1].reason.contains("(name)"), "{:?}", r.skipped);
    }
}
