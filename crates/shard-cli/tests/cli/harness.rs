//! Spawns the real `shard agent` and talks the real protocol over its stdio.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use shard_protocol::decode::decode_event;
use shard_protocol::event::{PermissionRequest, Response, ToolResultEvent};
use shard_protocol::types::AgentStatus;
use shard_protocol::{CommandSpec, ErrorCode, Event};

/// Generous: machines are shared and noisy; tests wait for events, not for time.
pub const WAIT: Duration = Duration::from_secs(30);

pub fn shard_bin() -> &'static str {
    env!("CARGO_BIN_EXE_shard")
}

/// A temporary SHARD_HOME and working directory.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        Sandbox { dir }
    }
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }
    /// Writes a scripted-provider script and returns its path.
    pub fn script(&self, name: &str, script: Value) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, serde_json::to_vec_pretty(&script).unwrap()).unwrap();
        p
    }
    pub fn config(&self, text: &str) {
        std::fs::write(self.home().join("config.toml"), text).unwrap();
    }
    pub fn session_file(&self, session_id: &str) -> PathBuf {
        self.home()
            .join("sessions")
            .join(session_id)
            .join("session.jsonl")
    }
}

/// A running `shard agent`.
pub struct Agent {
    pub child: Child,
    stdin: Option<ChildStdin>,
    events: Receiver<Result<(Value, Event), String>>,
    /// Every event received so far, in order.
    pub seen: Vec<Value>,
    /// The same events as the protocol's type: every line a Runtime writes must decode
    /// strictly as an [`Event`], so tests match typed events instead of raw JSON and a line
    /// the protocol does not know fails the test that read it.
    pub seen_typed: Vec<Event>,
    next_id: u64,
}

impl Agent {
    pub fn spawn(sb: &Sandbox, script: Option<&Path>, extra: &[&str]) -> Agent {
        Agent::spawn_env(sb, script, extra, &[])
    }

    pub fn spawn_env(
        sb: &Sandbox,
        script: Option<&Path>,
        extra: &[&str],
        envs: &[(&str, &str)],
    ) -> Agent {
        Agent::spawn_wrapped(sb, &[], script, extra, envs)
    }

    /// Like [`Agent::spawn_env`], with `shard` started by `wrapper` (a program and its
    /// arguments that execs the rest), e.g. to change the kernel's limits for it alone.
    pub fn spawn_wrapped(
        sb: &Sandbox,
        wrapper: &[&str],
        script: Option<&Path>,
        extra: &[&str],
        envs: &[(&str, &str)],
    ) -> Agent {
        let mut cmd = match wrapper.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(shard_bin());
                c
            }
            None => Command::new(shard_bin()),
        };
        cmd.arg("agent").arg("--cwd").arg(sb.work());
        if let Some(s) = script {
            cmd.arg("--provider").arg("scripted").arg("--script").arg(s);
        }
        cmd.args(extra)
            .env("SHARD_HOME", sb.home())
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .envs(envs.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn().expect("spawn shard agent");
        let stdout = child.stdout.take().unwrap();
        let stdin = child.stdin.take();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            // Decoded here, beside the Runtime, so a test's waits do not pay for it.
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let both = match (serde_json::from_str(&line), decode_event(line.as_bytes())) {
                    (Ok(v), Ok(e)) => Ok((v, e)),
                    (Err(e), _) => Err(format!("stdout line is not JSON ({e}): {line}")),
                    (_, Err(e)) => Err(format!("not an event of the protocol ({e}): {line}")),
                };
                if tx.send(both).is_err() {
                    break;
                }
            }
        });
        Agent {
            child,
            stdin,
            events: rx,
            seen: Vec::new(),
            seen_typed: Vec::new(),
            next_id: 0,
        }
    }

    pub fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a command with a fresh id and returns the id.
    pub fn send(&mut self, mut cmd: Value) -> String {
        self.next_id += 1;
        let id = format!("c{}", self.next_id);
        cmd["id"] = json!(id);
        self.send_raw(&cmd.to_string());
        id
    }

    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    /// Receives the next event into `seen`, returning its index; fails the test after
    /// [`WAIT`] or when the line is not an event of the protocol.
    fn receive(&mut self) -> usize {
        match self.events.recv_timeout(WAIT) {
            Ok(received) => self.record(received),
            Err(RecvTimeoutError::Timeout) => {
                panic!("no event within {WAIT:?}; seen so far:\n{}", self.dump())
            }
            Err(RecvTimeoutError::Disconnected) => {
                panic!("the agent closed stdout; seen:\n{}", self.dump())
            }
        }
    }

    fn record(&mut self, received: Result<(Value, Event), String>) -> usize {
        match received {
            Ok((v, e)) => {
                self.seen.push(v);
                self.seen_typed.push(e);
                self.seen.len() - 1
            }
            Err(why) => panic!("{why}\nseen so far:\n{}", self.dump()),
        }
    }

    /// The next event, typed.
    pub fn next_event(&mut self) -> Event {
        let i = self.receive();
        self.seen_typed[i].clone()
    }

    /// Reads events until `pick` takes one, returning what it took: typed matching, e.g.
    /// `a.until_event(pick::turn_end)`.
    pub fn until_event<T>(&mut self, pick: impl Fn(&Event) -> Option<T>) -> T {
        let deadline = Instant::now() + WAIT;
        loop {
            assert!(
                Instant::now() < deadline,
                "condition not met; seen:\n{}",
                self.dump()
            );
            let i = self.receive();
            if let Some(t) = pick(&self.seen_typed[i]) {
                return t;
            }
        }
    }

    /// Sends a prompt and reads its turn to `turn_end`, answering every permission request
    /// with the choice id `answer(request)`; returns the tool results and the requests.
    pub fn answer_turn(
        &mut self,
        text: &str,
        answer: impl Fn(&PermissionRequest) -> &'static str,
    ) -> (Vec<ToolResultEvent>, Vec<PermissionRequest>) {
        self.send(prompt(text));
        let mut results = Vec::new();
        let mut requests = Vec::new();
        loop {
            match self.next_event() {
                Event::PermissionRequest(req) => {
                    let choice = answer(&req);
                    self.send(json!({"type": "permission_response", "request_id": req.request_id, "choice_id": choice}));
                    requests.push(*req);
                }
                Event::ToolResult(r) => results.push(*r),
                Event::TurnEnd(_) => return (results, requests),
                _ => {}
            }
        }
    }

    /// Reads events until the agent reports `status: idle`.
    pub fn until_idle(&mut self) {
        self.until_event(|e| match e {
            Event::Status(s) if s.status == AgentStatus::Idle => Some(()),
            _ => None,
        })
    }

    /// The first event received so far that `pick` takes.
    pub fn find_seen<T>(&self, pick: impl Fn(&Event) -> Option<T>) -> Option<T> {
        self.seen_typed.iter().find_map(pick)
    }

    /// Everything `pick` takes from the events received so far, in order.
    pub fn all_seen<T>(&self, pick: impl Fn(&Event) -> Option<T>) -> Vec<T> {
        self.seen_typed.iter().filter_map(pick).collect()
    }

    /// Reads events until one of type `ty`, returning it typed (match it with `pick::…`,
    /// or use [`Agent::until_event`] to wait and take in one step).
    pub fn until_type(&mut self, ty: &str) -> Event {
        self.until_event(|e| (e.type_name() == ty).then(|| e.clone()))
    }

    /// The response to command `id`, typed.
    pub fn response(&mut self, id: &str) -> Response {
        self.until_event(|e| match e {
            Event::Response(r) if r.id.as_deref() == Some(id) => Some(r.clone()),
            _ => None,
        })
    }

    /// The data of the successful response to command `id`, as command `K`'s response
    /// type (the command table); fails the test when the command failed.
    #[allow(dead_code)]
    pub fn ok<K: CommandSpec>(&mut self, id: &str) -> K::Response {
        let r = self.response(id);
        assert!(r.success, "{} failed: {r:?}\n{}", K::TYPE, self.dump());
        K::decode_response(r.data.clone())
            .unwrap_or_else(|e| panic!("{} data does not decode: {e}: {r:?}", K::TYPE))
    }

    /// The error code of the failed response to command `id`.
    #[allow(dead_code)]
    pub fn fails(&mut self, id: &str) -> ErrorCode {
        code_of(&self.response(id))
    }

    /// Reads to end of output (after stdin was closed) and waits for exit.
    pub fn finish(&mut self) -> std::process::ExitStatus {
        self.close_stdin();
        while let Ok(received) = self.events.recv_timeout(WAIT) {
            self.record(received);
        }
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "the agent did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn types_since(&self, start: usize) -> Vec<String> {
        self.seen_typed[start..]
            .iter()
            .map(|e| e.type_name().to_string())
            .collect()
    }

    pub fn dump(&self) -> String {
        self.seen
            .iter()
            .map(|v| {
                let mut s = v.to_string();
                s.truncate(300);
                s
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `shard run --provider scripted` on `turns` with the prompt `go`.
pub fn run_scripted(sb: &Sandbox, turns: Value) -> std::process::Output {
    let s = sb.script("s.json", serde_json::json!({ "turns": turns }));
    let s = s.to_str().unwrap();
    shard(sb, &["run", "--provider", "scripted", "--script", s, "go"])
}

/// Runs `shard ARGS` in the sandbox's work folder with no provider keys and no input.
pub fn shard(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    std::process::Command::new(shard_bin())
        .args(args)
        .current_dir(sb.work())
        .env("SHARD_HOME", sb.home())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

pub fn transcript(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn prompt(text: &str) -> Value {
    json!({"type": "prompt", "message": text})
}

/// A script turn that streams `text` in pieces.
pub fn text_turn(text: &str) -> Value {
    json!({"steps": [{"text": text, "chunk_chars": 3}, {"usage": {"input": 10, "output": 5}}]})
}

/// A script turn that calls one tool.
pub fn tool_turn(id: &str, name: &str, args: Value) -> Value {
    json!({"steps": [
        {"text": "Working on it.", "chunk_chars": 5},
        {"tool_call": {"id": id, "name": name, "args": args}, "chunk_chars": 7},
        {"usage": {"input": 20, "output": 8}}
    ]})
}

/// Polls (generously) until no live process has `marker` as an argument: a process
/// killed with SIGKILL is still listed for a moment after its killer returned.
pub fn gone(marker: &str) -> bool {
    let deadline = Instant::now() + WAIT;
    while process_with_arg(marker).is_some() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// A live (non-zombie) host process with `arg` as one of its arguments.
pub fn process_with_arg(arg: &str) -> Option<u32> {
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if !cmdline.split(|&b| b == 0).any(|a| a == arg.as_bytes()) {
            continue;
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        if !state.starts_with('Z') && !state.starts_with('X') {
            return Some(pid);
        }
    }
    None
}

/// The events a `shard` process wrote to stdout (`shard agent`, `shard run --json`), each
/// line decoded strictly into the protocol's [`Event`].
pub fn events_of(stdout: &[u8]) -> Vec<Event> {
    stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            decode_event(l)
                .unwrap_or_else(|e| panic!("not an event ({e}): {}", String::from_utf8_lossy(l)))
        })
        .collect()
}

/// The data of a successful response read as `T`: for a command whose response type is
/// one of several shapes (`session_op`), the shape the test asked for.
#[allow(dead_code)]
pub fn data_as<T: serde::de::DeserializeOwned>(r: &Response) -> T {
    assert!(r.success, "expected a success: {r:?}");
    serde_json::from_value(r.data.clone().unwrap_or(Value::Null)).unwrap_or_else(|e| {
        panic!(
            "data does not decode as {}: {e}: {r:?}",
            std::any::type_name::<T>()
        )
    })
}

/// The error code of a failed response; fails the test on a success.
pub fn code_of(r: &Response) -> ErrorCode {
    assert!(!r.success, "expected a failure: {r:?}");
    r.error.as_ref().expect("an error body").code.clone()
}

/// Typed pickers for [`Agent::until_event`], [`Agent::find_seen`] and
/// [`Agent::all_seen`]: `a.until_event(pick::tool_result)`.
#[path = "../../../../tests/support/pick.rs"]
pub mod pick;

/// The text of a tool result's content (its message when it is an error), for asserts.
pub fn result_text(content: &shard_protocol::types::ToolResultContent) -> String {
    use shard_protocol::types::ToolResultContent;
    match content {
        ToolResultContent::Text { text } => text.clone(),
        ToolResultContent::Error { message } => message.clone(),
        other => serde_json::to_string(other).unwrap(),
    }
}

/// The text blocks of a message, joined.
pub fn message_text(m: &shard_protocol::types::Message) -> String {
    m.content
        .iter()
        .filter_map(|b| match b {
            shard_protocol::types::ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}
