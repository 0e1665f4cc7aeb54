//! Shard as an Agent Client Protocol agent (`shard acp`): ACP v1 (JSON-RPC 2.0, one
//! message per line) on the editor's side, the Shard protocol on the other. When a
//! daemon runs for `SHARD_HOME`, every ACP session is a daemon agent, shared with the
//! other clients; otherwise each session runs its own `shard agent` child. Only the
//! protocol crates are used here: the Runtime and the daemon stay behind their wire.
//! The mapping is documented in `docs/acp.md`.

// Standard output is the ACP stream: a library reports through return values and
// `tracing`, never by printing.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod link;
mod mcp;
pub mod rpc;
mod server;
mod session;
pub mod translate;

use std::path::PathBuf;
use std::sync::Arc;

use futures::StreamExt;
use shard_protocol::JsonlCodec;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::FramedRead;

pub use link::AgentSpec;

/// Answers "why can no model be used" (`None`: a provider is usable), for
/// `initialize.authMethods`. Blocking; run once, off the executor.
pub type AuthCheck = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// What `shard acp` was started with.
#[derive(Clone)]
pub struct AcpConfig {
    /// `SHARD_HOME`.
    pub home: PathBuf,
    /// Use the daemon when one runs (false: `--no-daemon`).
    pub use_daemon: bool,
    /// How sessions' agents start.
    pub agent: AgentSpec,
    /// The version `agentInfo` reports.
    pub version: String,
    /// The provider check.
    pub auth_check: AuthCheck,
}

/// Serves ACP on `reader`/`writer` until the editor closes its end, then leaves every
/// session (direct Runtimes persist and exit; daemon agents stay with the daemon).
pub async fn serve<R, W>(reader: R, writer: W, config: AcpConfig)
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + 'static,
{
    let (peer, writer_task) = rpc::Peer::new(writer);
    let server = server::Server::new(peer.clone(), config);
    server.warm_up();
    let mut lines = FramedRead::new(reader, JsonlCodec::default());
    while let Some(item) = lines.next().await {
        let line = match item {
            Ok(Ok(l)) => l,
            Ok(Err(e)) => {
                let err = rpc::RpcError::new(rpc::code::INVALID_REQUEST, e.to_string());
                peer.respond(serde_json::Value::Null, Err(err));
                continue;
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading the editor's input failed");
                break;
            }
        };
        match peer.classify(&line) {
            rpc::Incoming::Request { id, method, params } => {
                tokio::spawn(Arc::clone(&server).request(id, method, params));
            }
            rpc::Incoming::Notification { method, params } => {
                server.notification(&method, params);
            }
            rpc::Incoming::Done => {}
        }
    }
    server.close().await;
    drop(server);
    drop(peer);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), writer_task).await;
}
