//! A session's connection to its Shard agent: a `shard agent` child this process runs
//! (no daemon), or a daemon agent it created or adopted and attached to interactively.
//! Both speak the same Shard protocol through `shard-client`; only routing differs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use shard_client::{Client, ClientError};
use shard_protocol::command::{AgentCreate, AttachRole};
use shard_protocol::event::{Response, Sync};
use shard_protocol::{ClientMessage, Command, Event, IncomingEvent};
use tokio::sync::mpsc;

/// How long a Runtime may take to say `hello` and `sync`.
const READY: Duration = Duration::from_secs(30);

/// What starts a session's agent.
#[derive(Debug, Clone, Default)]
pub struct AgentSpec {
    /// `shard` itself, for `shard agent` children.
    pub exe: PathBuf,
    /// Provider name.
    pub provider: Option<String>,
    /// Model.
    pub model: Option<String>,
    /// Mode for new sessions.
    pub mode: Option<String>,
    /// Script of the scripted provider.
    pub script: Option<PathBuf>,
    /// The editor's MCP servers for this session (secrets inside: passed in the
    /// environment or `agent.create`, never on a command line).
    pub mcp_servers: Vec<shard_protocol::mcp::ClientMcpServer>,
}

/// Errors opening a link.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The SDK failed (spawn, connect, a command).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The agent never sent its `sync`.
    #[error("the agent did not become ready: {0}")]
    NotReady(String),
}

/// One agent, direct or through the daemon.
pub struct Link {
    client: Arc<Client>,
    agent_id: Option<String>,
}

/// Events of the link's agent; closed when a direct Runtime ends.
pub type Events = mpsc::UnboundedReceiver<Event>;

impl Link {
    /// Starts `shard agent` for `session_id` in `cwd` (resuming it when it exists).
    /// Returns the link, its events, and the agent's first `sync`.
    pub async fn direct(
        spec: &AgentSpec,
        cwd: &Path,
        session_id: &str,
        resume: bool,
    ) -> Result<(Link, Events, Sync), LinkError> {
        let mut args: Vec<String> = vec![
            "agent".into(),
            "--cwd".into(),
            cwd.display().to_string(),
            "--session".into(),
            session_id.to_string(),
        ];
        let mut flag = |name: &str, v: &Option<String>| {
            if let Some(v) = v {
                args.push(name.into());
                args.push(v.clone());
            }
        };
        flag("--provider", &spec.provider);
        flag("--model", &spec.model);
        if !resume {
            flag("--mode", &spec.mode);
        }
        if let Some(s) = &spec.script {
            args.push("--script".into());
            args.push(s.display().to_string());
        }
        let mut env = Vec::new();
        if !spec.mcp_servers.is_empty() {
            let servers = serde_json::to_string(&spec.mcp_servers)
                .map_err(|e| LinkError::NotReady(format!("encoding the MCP servers: {e}")))?;
            env.push((shard_protocol::mcp::CLIENT_MCP_ENV.to_string(), servers));
        }
        let client = Arc::new(Client::spawn_agent(&spec.exe, &args, &env).await?);
        let (tx, mut rx) = mpsc::unbounded_channel();
        let reader = Arc::clone(&client);
        tokio::spawn(async move {
            while let Some(ev) = reader.next_event().await {
                if let IncomingEvent::Known(ev) = ev
                    && tx.send(ev).is_err()
                {
                    return;
                }
            }
        });
        let sync = first_sync(&mut rx).await?;
        Ok((
            Link {
                client,
                agent_id: None,
            },
            rx,
            sync,
        ))
    }

    /// Creates a daemon agent (or adopts `session_id`), attaches interactively, and
    /// returns the link, its events (the `sync` taken out) and that `sync`.
    pub async fn daemon_create(
        client: Arc<Client>,
        spec: &AgentSpec,
        cwd: &Path,
        session_id: Option<String>,
    ) -> Result<(Link, Events, Sync), LinkError> {
        let (provider, model) = match &spec.script {
            Some(s) => (Some("scripted".to_string()), Some(s.display().to_string())),
            None => (spec.provider.clone(), spec.model.clone()),
        };
        let create = AgentCreate {
            cwd: cwd.display().to_string(),
            mode: if session_id.is_none() {
                spec.mode.clone()
            } else {
                None
            },
            session_id,
            provider,
            model,
            name: Some("acp".into()),
            mcp_servers: (!spec.mcp_servers.is_empty()).then(|| spec.mcp_servers.clone()),
            ..AgentCreate::default()
        };
        let agent_id = client.create(create).await?;
        Self::daemon_attach(client, agent_id).await
    }

    /// Attaches to an existing daemon agent.
    pub async fn daemon_attach(
        client: Arc<Client>,
        agent_id: String,
    ) -> Result<(Link, Events, Sync), LinkError> {
        let (_, mut rx) = client.attach(&agent_id, AttachRole::Interactive).await?;
        let sync = first_sync(&mut rx).await?;
        Ok((
            Link {
                client,
                agent_id: Some(agent_id),
            },
            rx,
            sync,
        ))
    }

    /// The daemon agent's id (`None` for a direct Runtime).
    pub fn agent_id(&self) -> Option<&str> {
        self.agent_id.as_deref()
    }

    fn route(&self, mut command: Command) -> Command {
        command.set_routing_agent_id(self.agent_id.clone());
        command
    }

    /// Sends a command and waits for its response.
    pub async fn request(&self, command: Command) -> Result<Response, ClientError> {
        self.client.request(self.route(command)).await
    }

    /// Sends a command and turns a failure into an error.
    pub async fn call(&self, command: Command) -> Result<Option<serde_json::Value>, ClientError> {
        self.client.call(self.route(command)).await
    }

    /// Sends a command without waiting for its response.
    pub fn send(&self, command: Command) -> Result<(), ClientError> {
        self.client.send(&ClientMessage {
            id: None,
            command: self.route(command),
        })
    }

    /// Leaves: a daemon agent is detached and keeps running; a direct Runtime's input is
    /// closed so it persists and exits.
    pub async fn close(self) {
        match self.agent_id {
            Some(id) => {
                let _ = tokio::time::timeout(READY, self.client.detach(&id)).await;
            }
            None => {
                self.client.close_input();
                let _ = tokio::time::timeout(READY, self.client.wait_exit()).await;
            }
        }
    }
}

async fn first_sync(rx: &mut Events) -> Result<Sync, LinkError> {
    let wait = async {
        while let Some(ev) = rx.recv().await {
            match ev {
                Event::Sync(s) => return Ok(*s),
                Event::Error(e) if e.fatal == Some(true) => return Err(e.message),
                _ => {}
            }
        }
        Err("the agent ended before it was ready".to_string())
    };
    match tokio::time::timeout(READY, wait).await {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(why)) => Err(LinkError::NotReady(why)),
        Err(_) => Err(LinkError::NotReady(format!("no sync within {READY:?}"))),
    }
}
