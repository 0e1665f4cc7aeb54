//! A harness around one in-process Runtime: commands in through its channel, events out
//! as the protocol's typed [`Event`]s, with a recording provider injected.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use shard_agent::models::EnvLookup;
use shard_agent::{Input, ModelCallHook, Runtime, RuntimeOptions, Seams, ToolsHandle};
use shard_protocol::event::Response;
use shard_protocol::{CommandSpec, Event};
use tokio::sync::mpsc;

use super::recorder::{InvariantCheck, Recorder};

/// Generous bound for any one wait: a hung Runtime fails the test instead of hanging it.
const WAIT: Duration = Duration::from_secs(60);

/// The directories of one test: `SHARD_HOME` and the agent's working directory.
pub struct Dirs {
    _root: tempfile::TempDir,
    /// `SHARD_HOME`.
    pub home: PathBuf,
    /// The working directory.
    pub cwd: PathBuf,
}

impl Dirs {
    /// Fresh, empty directories.
    pub fn new() -> Dirs {
        let root = tempfile::tempdir().expect("tempdir");
        let home = root.path().join("home");
        let cwd = root.path().join("work");
        std::fs::create_dir_all(&home).expect("home");
        std::fs::create_dir_all(&cwd).expect("cwd");
        Dirs {
            _root: root,
            home,
            cwd,
        }
    }
}

/// How to start a Runtime in a test.
pub struct Start<'a> {
    /// The directories.
    pub dirs: &'a Dirs,
    /// The injected provider.
    pub recorder: Arc<Recorder>,
    /// A session to resume.
    pub session_id: Option<String>,
    /// A hook before every model call.
    pub hook: Option<Arc<dyn ModelCallHook>>,
    /// A managed child's tool allow-list (`--tools`).
    pub tools: Option<Vec<String>>,
    /// `SHARD_LIVE_WINDOW_BYTES` in the Runtime's environment.
    pub live_window: Option<String>,
    /// `RuntimeOptions::one_shot` (`shard run`).
    pub one_shot: bool,
}

impl<'a> Start<'a> {
    /// A new session with no hook.
    pub fn new(dirs: &'a Dirs, recorder: &Arc<Recorder>) -> Start<'a> {
        Start {
            dirs,
            recorder: recorder.clone(),
            session_id: None,
            hook: None,
            tools: None,
            live_window: None,
            one_shot: false,
        }
    }
}

/// One running Runtime.
pub struct Agent {
    inputs: mpsc::Sender<Input>,
    events: mpsc::Receiver<shard_protocol::Event>,
    task: tokio::task::JoinHandle<()>,
    /// Adds and removes tools while it runs.
    pub tools: ToolsHandle,
    /// Its session.
    pub session_id: String,
    /// Every event received so far, as JSON.
    pub seen: Vec<Event>,
    next_id: u64,
    /// Fails the test, when the agent is closed or dropped, if any model request broke
    /// an invariant: no test has to remember to ask.
    _check: InvariantCheck,
}

fn env(live_window: Option<String>) -> EnvLookup {
    Arc::new(move |k: &str| match k {
        "ANTHROPIC_API_KEY" => Some("sk-test-not-a-key".to_string()),
        "SHARD_LIVE_WINDOW_BYTES" => live_window.clone(),
        _ => None,
    })
}

/// The options [`Agent::start`] uses, for tests that call `prepare` themselves.
pub fn options(dirs: &Dirs) -> RuntimeOptions {
    RuntimeOptions {
        shard_home: dirs.home.clone(),
        cwd: dirs.cwd.clone(),
        provider: Some("anthropic".into()),
        model: Some("claude-sonnet-4-5".into()),
        ..RuntimeOptions::default()
    }
}

/// `prepare` with `SHARD_LIVE_WINDOW_BYTES` set to `value`: its error, if any.
pub fn prepare_error(dirs: &Dirs, value: &str) -> Option<String> {
    shard_agent::prepare(options(dirs), env(Some(value.to_string())))
        .err()
        .map(|e| e.to_string())
}

impl Agent {
    /// Starts a Runtime on `claude-sonnet-4-5` served by the recorder, and waits for its
    /// `sync`.
    pub async fn start(s: Start<'_>) -> Agent {
        let opts = RuntimeOptions {
            session_id: s.session_id,
            tools: s.tools,
            one_shot: s.one_shot,
            ..options(s.dirs)
        };
        let prepared = shard_agent::prepare(opts, env(s.live_window)).expect("prepare");
        let (ev_tx, events) = mpsc::channel(1024);
        let (inputs, in_rx) = mpsc::channel(64);
        let check = InvariantCheck::new(&s.recorder);
        let seams = Seams {
            provider: Some(s.recorder),
            model_call_hook: s.hook,
        };
        let rt = Runtime::open_with(prepared, ev_tx, in_rx, seams).expect("open");
        let session_id = rt.session_id().to_string();
        let tools = rt.tools_handle();
        let task = tokio::spawn(rt.run());
        let mut agent = Agent {
            inputs,
            events,
            task,
            tools,
            session_id,
            seen: Vec::new(),
            next_id: 0,
            _check: check,
        };
        agent.until_type("sync").await;
        agent
    }

    /// Sends a command (a JSON object with `type`) with a fresh id; returns the id.
    pub async fn send(&mut self, mut command: Value) -> String {
        self.next_id += 1;
        let id = format!("c{}", self.next_id);
        command["id"] = json!(id);
        let msg = shard_protocol::decode_command(command.to_string().as_bytes())
            .expect("a valid command");
        self.inputs
            .send(Input::Command(msg))
            .await
            .expect("the Runtime is running");
        id
    }

    /// Sends a command and returns its response.
    pub async fn respond(&mut self, command: Value) -> Response {
        let id = self.send(command).await;
        self.response(&id).await
    }

    /// The response to command `id`.
    pub async fn response(&mut self, id: &str) -> Response {
        self.until_event(|e| match e {
            Event::Response(r) if r.id.as_deref() == Some(id) => Some(r.clone()),
            _ => None,
        })
        .await
    }

    /// The id of the next turn that starts.
    pub async fn turn_started(&mut self) -> String {
        self.until_event(|e| match e {
            Event::TurnStart(t) => Some(t.turn_id.clone()),
            _ => None,
        })
        .await
    }

    /// Sends a command that must succeed; returns its data read as `T` (the command
    /// table's response type of the command, or one shape of it: `session_op`).
    pub async fn call_as<T: serde::de::DeserializeOwned>(&mut self, command: Value) -> T {
        let resp = self.respond(command).await;
        assert!(resp.success, "{resp:?}");
        serde_json::from_value(resp.data.clone().unwrap_or(Value::Null))
            .unwrap_or_else(|e| panic!("the data does not decode: {e}: {resp:?}"))
    }

    /// Sends command `K`, which must succeed; returns its data as `K`'s response type.
    pub async fn ok<K: CommandSpec>(&mut self, command: Value) -> K::Response {
        let resp = self.respond(command).await;
        assert!(resp.success, "{} failed: {resp:?}", K::TYPE);
        K::decode_response(resp.data.clone())
            .unwrap_or_else(|e| panic!("{} data does not decode: {e}: {resp:?}", K::TYPE))
    }

    /// Sends a command that must fail; returns its error code.
    pub async fn fails(&mut self, command: Value) -> shard_protocol::ErrorCode {
        let resp = self.respond(command).await;
        assert!(!resp.success, "expected a failure: {resp:?}");
        resp.error.expect("an error body").code
    }

    /// Sends a command that must succeed (its data, if any, is not read).
    pub async fn call(&mut self, command: Value) {
        let resp = self.respond(command).await;
        assert!(resp.success, "{resp:?}");
    }

    /// The next event `pick` takes (earlier ones are kept in `seen`).
    pub async fn until_event<T>(&mut self, pick: impl Fn(&Event) -> Option<T>) -> T {
        let wait = async {
            loop {
                let ev = self.events.recv().await.expect("the Runtime stopped");
                let taken = pick(&ev);
                self.seen.push(ev);
                if let Some(t) = taken {
                    return t;
                }
            }
        };
        tokio::time::timeout(WAIT, wait)
            .await
            .expect("the awaited event never came")
    }

    /// The next event matching `pred`.
    pub async fn until(&mut self, pred: impl Fn(&Event) -> bool) -> Event {
        self.until_event(|e| pred(e).then(|| e.clone())).await
    }

    /// The next event of type `t`.
    pub async fn until_type(&mut self, t: &str) -> Event {
        self.until(|e| e.type_name() == t).await
    }

    /// Sends a prompt and waits for its turn to end.
    pub async fn prompt(&mut self, text: &str) -> Event {
        self.send(json!({"type": "prompt", "message": text})).await;
        self.until_type("turn_end").await
    }

    /// Events of type `t` seen so far.
    pub fn seen_of(&self, t: &str) -> Vec<&Event> {
        self.seen.iter().filter(|e| e.type_name() == t).collect()
    }

    /// Ends input and waits for the Runtime to finish persisting; then the request
    /// invariants are checked (the check runs when its guard drops, here).
    pub async fn close(self) {
        let Agent {
            inputs,
            events,
            task,
            _check,
            ..
        } = self;
        let _ = inputs.send(Input::Eof).await;
        drop(inputs);
        let mut events = events;
        let drain = async move { while events.recv().await.is_some() {} };
        let _ = tokio::time::timeout(WAIT, drain).await;
        tokio::time::timeout(WAIT, task)
            .await
            .expect("the Runtime did not stop")
            .expect("the Runtime task panicked");
    }
}

/// Writes `text` to `name` in `dir`.
pub fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write");
}
