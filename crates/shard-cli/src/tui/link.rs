//! The client's connection to one agent, daemon or direct, behind one interface: send a
//! command (get back a token), receive events and the replies to those tokens in one
//! channel. Commands carry their own ids (`t1`, `t2`, …) on both transports, so a reply
//! is matched the same way whether it came from a daemon socket or an in-process Runtime.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use shard_agent::{Input, Runtime};
use shard_client::Client;
use shard_protocol::command::{AgentCreate, AttachRole};
use shard_protocol::{ClientMessage, Command, Event, IncomingEvent};
use tokio::sync::mpsc;

/// What arrives from the agent's side.
#[derive(Debug)]
pub enum Incoming {
    /// An event of the agent.
    Event(Box<Event>),
    /// The reply to a command sent with [`Link::send`].
    Reply {
        /// The token `send` returned.
        token: u64,
        /// Data, or the error message.
        result: Result<Option<Value>, String>,
    },
    /// The connection or the Runtime ended.
    Closed(String),
}

/// Where the agent lives.
pub enum Kind {
    /// An in-process Runtime that ends with the client.
    Direct {
        /// Commands in order to the Runtime.
        commands: mpsc::UnboundedSender<ClientMessage>,
        /// The Runtime's task, awaited on close so its session is flushed.
        actor: tokio::task::JoinHandle<()>,
    },
    /// A daemon agent that outlives the client.
    Daemon {
        /// The daemon connection.
        client: Arc<Client>,
        /// The agent.
        agent_id: String,
    },
}

/// One connection to one agent.
pub struct Link {
    /// Where the agent lives.
    pub kind: Kind,
    pending: PendingMap,
    next: u64,
    generation: u64,
}

impl Link {
    /// The agent id (daemon agents), for commands that name it.
    pub fn agent_id(&self) -> Option<String> {
        match &self.kind {
            Kind::Daemon { agent_id, .. } => Some(agent_id.clone()),
            Kind::Direct { .. } => None,
        }
    }

    /// Sends a command; its reply arrives as [`Incoming::Reply`] with the returned token.
    pub fn send(&mut self, command: Command) -> u64 {
        self.next += 1;
        let token = self.next;
        let id = format!("t{}.{token}", self.generation);
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id.clone(), (self.generation, token));
        }
        let msg = ClientMessage::new(id, command);
        match &self.kind {
            Kind::Direct { commands, .. } => {
                let _ = commands.send(msg);
            }
            Kind::Daemon { client, .. } => {
                let _ = client.send(&msg);
            }
        }
        token
    }

    /// Leaves: a daemon agent is detached (and keeps running); a direct Runtime's input
    /// closes, which ends it.
    pub async fn close(self) {
        let wait = std::time::Duration::from_secs(3);
        match self.kind {
            Kind::Daemon { client, agent_id } => {
                let _ = tokio::time::timeout(wait, client.detach(&agent_id)).await;
            }
            Kind::Direct { commands, actor } => {
                drop(commands);
                let _ = tokio::time::timeout(wait, actor).await;
            }
        }
    }
}

/// Tagged incoming messages: (generation, message).
pub type Inbox = mpsc::UnboundedSender<(u64, Incoming)>;

/// Command ids waiting for their reply: id → (generation, token).
type PendingMap = Arc<Mutex<HashMap<String, (u64, u64)>>>;

fn reply_of(
    event: &Event,
    pending: &Mutex<HashMap<String, (u64, u64)>>,
) -> Option<(u64, Incoming)> {
    let Event::Response(r) = event else {
        return None;
    };
    let (generation, token) = pending.lock().ok()?.remove(r.id.as_deref()?)?;
    let result = if r.success {
        Ok(r.data.clone())
    } else {
        Err(r
            .error
            .as_ref()
            .map(|e| e.message.clone())
            .unwrap_or_else(|| "the command failed".into()))
    };
    Some((generation, Incoming::Reply { token, result }))
}

/// Starts an in-process Runtime and links to it.
pub fn direct(
    prepared: shard_agent::Prepared,
    inbox: Inbox,
    generation: u64,
) -> anyhow::Result<Link> {
    let (event_tx, mut event_rx) = mpsc::channel::<Event>(4096);
    let (input_tx, input_rx) = mpsc::channel::<Input>(256);
    let runtime =
        Runtime::open(prepared, event_tx, input_rx).map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Err(err) = shard_sandbox::hardening::scrub_initial_environment(runtime.secret_env_vars())
    {
        tracing::warn!(%err, "cannot overwrite keys in the initial environment");
    }
    let actor = tokio::spawn(runtime.run());
    let (cmd_tx, mut cmd_rx) = mpsc::unbounded_channel::<ClientMessage>();
    tokio::spawn(async move {
        while let Some(m) = cmd_rx.recv().await {
            if input_tx.send(Input::Command(m)).await.is_err() {
                return;
            }
        }
        let _ = input_tx.send(Input::Eof).await;
    });
    let pending: PendingMap = Arc::default();
    let p = pending.clone();
    tokio::spawn(async move {
        while let Some(ev) = event_rx.recv().await {
            let msg = reply_of(&ev, &p).unwrap_or((generation, Incoming::Event(Box::new(ev))));
            if inbox.send(msg).is_err() {
                return;
            }
        }
        let _ = inbox.send((generation, Incoming::Closed("the Runtime ended".into())));
    });
    Ok(Link {
        kind: Kind::Direct {
            commands: cmd_tx,
            actor,
        },
        pending,
        next: 0,
        generation,
    })
}

/// One daemon connection shared by the links made on it (one per agent attached in
/// turn): replies and orchestrator events arrive outside any agent subscription, so one
/// task reads them for all links.
#[derive(Clone)]
pub struct Daemon {
    /// The connection.
    pub client: Arc<Client>,
    pending: PendingMap,
    current: Arc<Mutex<(u64, String)>>,
}

/// Connects the shared reader of a daemon connection.
pub fn daemon(client: Arc<Client>, inbox: Inbox) -> Daemon {
    let d = Daemon {
        client,
        pending: Arc::default(),
        current: Arc::default(),
    };
    let (p, c, cur) = (d.pending.clone(), d.client.clone(), d.current.clone());
    tokio::spawn(async move {
        loop {
            let (generation, agent) = cur.lock().map(|g| g.clone()).unwrap_or_default();
            let next = c.next_event().await;
            let gone = next.is_none();
            let msg = match next {
                None => (
                    generation,
                    Incoming::Closed("the daemon closed the connection".into()),
                ),
                Some(IncomingEvent::Known(Event::AgentExited(e))) if e.agent_id == agent => (
                    generation,
                    Incoming::Closed(format!("the agent's Runtime exited: {}", e.reason)),
                ),
                Some(IncomingEvent::Known(ev)) => match reply_of(&ev, &p) {
                    Some(r) => r,
                    None => continue,
                },
                Some(_) => continue,
            };
            if inbox.send(msg).is_err() || gone {
                return;
            }
        }
    });
    d
}

/// Attaches to a daemon agent.
pub async fn attach(
    d: &Daemon,
    agent_id: String,
    observer: bool,
    inbox: Inbox,
    generation: u64,
) -> anyhow::Result<Link> {
    let role = if observer {
        AttachRole::Observer
    } else {
        AttachRole::Interactive
    };
    let (_data, mut events) = d
        .client
        .attach(&agent_id, role)
        .await
        .map_err(|e| anyhow::anyhow!("cannot attach to {agent_id}: {e}"))?;
    if let Ok(mut cur) = d.current.lock() {
        *cur = (generation, agent_id.clone());
    }
    let p = d.pending.clone();
    tokio::spawn(async move {
        while let Some(ev) = events.recv().await {
            let msg = reply_of(&ev, &p).unwrap_or((generation, Incoming::Event(Box::new(ev))));
            if inbox.send(msg).is_err() {
                return;
            }
        }
    });
    Ok(Link {
        kind: Kind::Daemon {
            client: d.client.clone(),
            agent_id,
        },
        pending: d.pending.clone(),
        next: 0,
        generation,
    })
}

/// Creates a daemon agent and returns its id.
pub async fn create(client: &Client, create: AgentCreate) -> anyhow::Result<String> {
    client
        .create(create)
        .await
        .map_err(|e| anyhow::anyhow!("cannot create an agent: {e}"))
}
