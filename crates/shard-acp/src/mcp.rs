//! The editor's `mcpServers` (`session/new`, `session/load`) as Shard's client-supplied
//! servers: checked here so a bad entry is one -32602 naming its field, then started by
//! the session's Runtime as untrusted servers (tool sandbox, gate).

use agent_client_protocol_schema::v1 as acp;
use shard_protocol::mcp::{ClientMcpServer, ClientMcpTransport, validate_all};

use crate::rpc::RpcError;

/// Converts and checks the editor's servers.
pub fn servers(list: &[acp::McpServer]) -> Result<Vec<ClientMcpServer>, RpcError> {
    let mut out = Vec::with_capacity(list.len());
    for (i, s) in list.iter().enumerate() {
        let server = match s {
            acp::McpServer::Stdio(s) => ClientMcpServer {
                name: s.name.clone(),
                transport: ClientMcpTransport::Stdio,
                command: Some(s.command.to_string_lossy().into_owned()),
                args: s.args.clone(),
                env: s
                    .env
                    .iter()
                    .map(|v| (v.name.clone(), v.value.clone()))
                    .collect(),
                ..ClientMcpServer::default()
            },
            acp::McpServer::Http(h) => ClientMcpServer {
                name: h.name.clone(),
                transport: ClientMcpTransport::Http,
                url: Some(h.url.clone()),
                headers: h
                    .headers
                    .iter()
                    .map(|v| (v.name.clone(), v.value.clone()))
                    .collect(),
                ..ClientMcpServer::default()
            },
            _ => {
                let field = format!("mcpServers[{i}].type");
                return Err(RpcError::invalid_params(
                    &field,
                    format!(
                        "invalid `{field}`: only stdio and http MCP servers are supported \
                         (agentCapabilities.mcpCapabilities: http true, sse false)"
                    ),
                ));
            }
        };
        out.push(server);
    }
    validate_all(&out).map_err(|(path, why)| {
        let field = format!("mcpServers{path}");
        RpcError::invalid_params(&field, format!("invalid `{field}`: {why}"))
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn servers_convert_and_bad_ones_name_their_field() {
        let list: Vec<acp::McpServer> = serde_json::from_value(serde_json::json!([
            {"name": "fs", "command": "/bin/srv", "args": ["-v"],
             "env": [{"name": "TOKEN", "value": "t0k"}]},
            {"type": "http", "name": "web", "url": "https://mcp.example/x",
             "headers": [{"name": "Authorization", "value": "Bearer b"}]}
        ]))
        .unwrap();
        let got = servers(&list).unwrap();
        assert_eq!(got[0].command.as_deref(), Some("/bin/srv"));
        assert_eq!(got[0].env["TOKEN"], "t0k");
        assert_eq!(got[1].transport, ClientMcpTransport::Http);
        assert_eq!(got[1].headers["Authorization"], "Bearer b");

        let bad: Vec<acp::McpServer> = serde_json::from_value(serde_json::json!([
            {"name": "ok", "command": "/bin/srv", "args": [], "env": []},
            {"name": "not ok", "command": "/bin/srv", "args": [], "env": []}
        ]))
        .unwrap();
        let e = servers(&bad).unwrap_err();
        assert!(e.message.contains("mcpServers[1].name"), "{}", e.message);

        let sse: Vec<acp::McpServer> = serde_json::from_value(serde_json::json!([
            {"type": "sse", "name": "s", "url": "https://x", "headers": []}
        ]))
        .unwrap();
        let e = servers(&sse).unwrap_err();
        assert!(e.message.contains("mcpServers[0].type"), "{}", e.message);
    }
}
