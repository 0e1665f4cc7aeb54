//! `subagent`: the model delegates background work (docs/subagents.md). The tool forwards
//! to the daemon's `subagent.*` commands (docs/protocol.md §10.3) over `SHARD_DAEMON_SOCK`,
//! proving the Runtime's identity with `runtime.auth` and its `SHARD_AGENT_TOKEN`. It
//! is offered only when the Runtime runs under a daemon.

use std::path::PathBuf;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use shard_protocol::command::{
    SubagentCreate, SubagentRelaunch, SubagentStatus, SubagentSteer, SubagentStop, SubagentTask,
    SubagentWait, WaitMode,
};
use shard_protocol::definitions::DefinitionSummary;
use shard_protocol::jobs::JobStrategy;
use shard_protocol::orchestrator::RuntimeAuth;
use shard_protocol::{ClientMessage, Command};
use shard_tools::{Tool, ToolContext, ToolOutput, Typed, TypedTool};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Which command the call is. The tool's description says what each does, so the
/// schema lists only the names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[schemars(description = "")]
#[serde(rename_all = "snake_case")]
pub enum SubagentAction {
    /// Launch a job (`name` + `task`, or `tasks` + `strategy`).
    Create,
    /// Wait for `handles` to end (`mode` any/all, `timeout` seconds; 0 polls).
    Wait,
    /// Add `message` to the running turn of `target`.
    Steer,
    /// Give the finished child `target` a new `task`, keeping its history.
    Relaunch,
    /// Snapshots of `targets`, or of the latest jobs.
    Status,
    /// Stop `handle` (a job, run or alias).
    Stop,
}

/// One task of a batch.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct SubagentTaskArg {
    /// A definition's name, or any label (a `general` child).
    #[schemars(description = "")]
    pub name: String,
    /// What the child should do; include everything it needs to know.
    #[schemars(description = "")]
    pub task: String,
}

/// Arguments of `subagent` (pinned in docs/subagents.md). Which action uses which field is said
/// once, in the tool's description; the schema describes only what that leaves open.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct SubagentArgs {
    /// The command.
    #[schemars(description = "")]
    pub action: SubagentAction,
    /// create: agent definition name (default `general`).
    #[schemars(description = "")]
    #[serde(default)]
    pub name: Option<String>,
    /// create: the task of a single child.
    #[schemars(description = "")]
    #[serde(default)]
    pub task: Option<String>,
    /// create: several tasks (with `strategy`).
    #[schemars(description = "")]
    #[serde(default)]
    pub tasks: Option<Vec<SubagentTaskArg>>,
    /// create: `single`, `parallel` or `chain` (each step gets the previous result).
    #[schemars(description = "")]
    #[serde(default)]
    pub strategy: Option<String>,
    /// create: model for the children.
    #[schemars(description = "")]
    #[serde(default)]
    pub model: Option<String>,
    /// create: the children's mode; wait: `any` or `all`.
    #[schemars(description = "")]
    #[serde(default)]
    pub mode: Option<String>,
    /// wait: job ids, run ids, agent ids or aliases.
    #[schemars(description = "")]
    #[serde(default)]
    pub handles: Option<Vec<String>>,
    /// wait: seconds (omitted waits until done, 0 polls).
    #[schemars(description = "")]
    #[serde(default)]
    pub timeout: Option<f64>,
    /// steer / relaunch: run id, agent id or alias.
    #[schemars(description = "")]
    #[serde(default)]
    pub target: Option<String>,
    /// steer: the message.
    #[schemars(description = "")]
    #[serde(default)]
    pub message: Option<String>,
    /// status: handles to report on.
    #[schemars(description = "")]
    #[serde(default)]
    pub targets: Option<Vec<String>>,
    /// stop: job id, run id or alias.
    #[schemars(description = "")]
    #[serde(default)]
    pub handle: Option<String>,
}

/// The `subagent` tool of a daemon-managed Runtime.
pub struct SubagentTool {
    sock: PathBuf,
    agent_id: String,
    token: String,
}

impl SubagentTool {
    /// The tool when this Runtime runs under a daemon (`SHARD_DAEMON_SOCK`,
    /// `SHARD_AGENT_ID` and `SHARD_AGENT_TOKEN` set), else `None`.
    pub fn from_env() -> Option<Self> {
        let get = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Some(SubagentTool::new(
            PathBuf::from(get("SHARD_DAEMON_SOCK")?),
            get("SHARD_AGENT_ID")?,
            get("SHARD_AGENT_TOKEN")?,
        ))
    }

    /// The tool of agent `agent_id`, reaching the daemon at `sock` with `token`.
    pub fn new(sock: PathBuf, agent_id: String, token: String) -> Self {
        SubagentTool {
            sock,
            agent_id,
            token,
        }
    }
}

fn needs(action: &str, field: &str) -> String {
    format!("`{action}` needs `{field}`")
}

/// The daemon command for `args`, typed as the protocol crate defines it; a missing or
/// malformed field is one error naming it, before anything is sent.
pub fn command_for(parent: &str, args: SubagentArgs) -> Result<Command, String> {
    let parent_agent_id = parent.to_string();
    Ok(match args.action {
        SubagentAction::Create => {
            let strategy = match args.strategy.as_deref() {
                None => None,
                Some("single") => Some(JobStrategy::Single),
                Some("parallel") => Some(JobStrategy::Parallel),
                Some("chain") => Some(JobStrategy::Chain),
                Some(other) => {
                    return Err(format!(
                        "`strategy` is single, parallel or chain, not {other:?}"
                    ));
                }
            };
            Command::SubagentCreate(SubagentCreate {
                parent_agent_id,
                name: args.name,
                task: args.task,
                tasks: args.tasks.map(|t| {
                    t.into_iter()
                        .map(|t| SubagentTask {
                            name: t.name,
                            task: t.task,
                        })
                        .collect()
                }),
                strategy,
                model: args.model,
                provider: None,
                mode: args.mode,
            })
        }
        SubagentAction::Wait => {
            let mode = match args.mode.as_deref() {
                None => None,
                Some("any") => Some(WaitMode::Any),
                Some("all") => Some(WaitMode::All),
                Some(other) => return Err(format!("`mode` of wait is any or all, not {other:?}")),
            };
            Command::SubagentWait(SubagentWait {
                parent_agent_id,
                handles: args.handles.ok_or_else(|| needs("wait", "handles"))?,
                mode,
                timeout: args.timeout,
            })
        }
        SubagentAction::Steer => Command::SubagentSteer(SubagentSteer {
            parent_agent_id,
            target: args.target.ok_or_else(|| needs("steer", "target"))?,
            message: args.message.ok_or_else(|| needs("steer", "message"))?,
        }),
        SubagentAction::Relaunch => Command::SubagentRelaunch(SubagentRelaunch {
            parent_agent_id,
            target: args.target.ok_or_else(|| needs("relaunch", "target"))?,
            task: args.task.ok_or_else(|| needs("relaunch", "task"))?,
        }),
        SubagentAction::Status => Command::SubagentStatus(SubagentStatus {
            parent_agent_id,
            targets: args.targets,
        }),
        SubagentAction::Stop => Command::SubagentStop(SubagentStop {
            parent_agent_id,
            handle: args.handle.ok_or_else(|| needs("stop", "handle"))?,
        }),
    })
}

impl SubagentTool {
    /// One connection per call: hello, `runtime.auth`, the command, its response.
    async fn call(&self, command: Command) -> Result<Value, String> {
        let stream = tokio::net::UnixStream::connect(&self.sock)
            .await
            .map_err(|e| format!("cannot reach the daemon: {e}"))?;
        let (r, mut w) = stream.into_split();
        let mut lines = BufReader::new(r).lines();
        let auth = serde_json::to_value(RuntimeAuth {
            id: Some("auth".into()),
            agent_id: self.agent_id.clone(),
            token: self.token.clone(),
        })
        .map_err(|e| format!("cannot encode runtime.auth: {e}"))?;
        let command = serde_json::to_value(ClientMessage::new("call", command))
            .map_err(|e| format!("cannot encode the command: {e}"))?;
        for (id, msg) in [("auth", auth), ("call", command)] {
            w.write_all(format!("{msg}\n").as_bytes())
                .await
                .map_err(|e| format!("daemon connection: {e}"))?;
            let resp = loop {
                let line = lines
                    .next_line()
                    .await
                    .map_err(|e| format!("daemon connection: {e}"))?
                    .ok_or("the daemon closed the connection")?;
                let v: Value = serde_json::from_str(&line).map_err(|e| e.to_string())?;
                if v["type"] == "response" && v["id"] == id {
                    break v;
                }
            };
            if resp["success"] != true {
                return Err(format!(
                    "{}: {}",
                    resp["error"]["code"].as_str().unwrap_or("ERROR"),
                    resp["error"]["message"].as_str().unwrap_or("failed")
                ));
            }
            if id == "call" {
                return Ok(resp["data"].clone());
            }
        }
        Err("no answer".into())
    }
}

impl TypedTool for SubagentTool {
    type Args = SubagentArgs;
    const NAME: &'static str = "subagent";
    const DESCRIPTION: &'static str = "Run subagents in the background, in parallel with you. \
        `action`: `create` a child for `task` (`name`: a definition below, default `general`; any other name makes a `general` child called so), or \
        for `tasks` [{name, task}] with `strategy` `parallel` or `chain` (each gets the previous \
        result); `wait` for `handles` (`mode` `any` or `all`, `timeout` s, 0 polls); `steer` `target` with `message`; \
        `relaunch` a finished `target` with a new `task`; `status` of `targets`; `stop` a \
        `handle`. A finished run reports to you as a message; no need to wait. Tasks must be \
        self-contained.";
    // Delegating changes nothing by itself: every child gates its own tools (and a
    // planning parent only gets planning children), so no permission is asked here.
    const READ_ONLY: bool = true;

    fn run<'a>(&'a self, args: SubagentArgs, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let command = match command_for(&self.agent_id, args) {
                Ok(c) => c,
                Err(e) => return ToolOutput::error(e),
            };
            let result = tokio::select! {
                r = self.call(command) => r,
                _ = ctx.cancel.cancelled() => return ToolOutput::error("Aborted."),
            };
            match result {
                Ok(data) => ToolOutput::text(data.to_string()),
                Err(e) => ToolOutput::error(e),
            }
        })
    }
}

/// Most definitions the description lists; the others are counted, so a project with
/// many files cannot flood every model request.
const LISTED_MAX: usize = 24;

/// Longest description shown per definition (characters).
const DESCRIPTION_MAX: usize = 120;

/// The tool's description: the fixed text, then the agent definitions `defs` (bounded).
pub fn description_with(defs: &[DefinitionSummary]) -> String {
    let mut out = String::from(SubagentTool::DESCRIPTION);
    out.push_str("\n\nDefinitions:");
    for d in defs.iter().take(LISTED_MAX) {
        out.push_str("\n- ");
        out.push_str(&d.name);
        if let Some(desc) = &d.description {
            let one_line = desc.split_whitespace().collect::<Vec<_>>().join(" ");
            let mut cut: String = one_line.chars().take(DESCRIPTION_MAX).collect();
            if cut.len() < one_line.len() {
                cut.push('…');
            }
            out.push_str(": ");
            out.push_str(&cut);
        }
    }
    if defs.len() > LISTED_MAX {
        out.push_str(&format!("\n- … and {} more", defs.len() - LISTED_MAX));
    }
    out
}

/// The `subagent` tool as a Runtime offers it: [`SubagentTool`] with a description that
/// lists the agent definitions available when the Runtime started, which a
/// typed tool's constant description cannot.
pub struct Subagent {
    inner: Typed<SubagentTool>,
    description: String,
}

impl Subagent {
    /// The tool over `tool`, describing `defs`.
    pub fn new(tool: SubagentTool, defs: &[DefinitionSummary]) -> Self {
        Subagent {
            inner: Typed::new(tool),
            description: description_with(defs),
        }
    }
}

impl Tool for Subagent {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.inner.input_schema()
    }

    fn is_read_only(&self, args: &Value) -> bool {
        self.inner.is_read_only(args)
    }

    fn execute<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        self.inner.execute(args, ctx)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn def(name: &str, description: Option<&str>) -> DefinitionSummary {
        DefinitionSummary {
            name: name.into(),
            description: description.map(str::to_string),
        }
    }

    #[test]
    fn the_description_lists_the_definitions_within_bounds() {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let p = cwd.path().join(".shard/agents");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(
            p.join("reviewer.md"),
            "---\ndescription: Reviews diffs\n---\nx",
        )
        .unwrap();
        let h = home.path().join("agents");
        std::fs::create_dir_all(&h).unwrap();
        std::fs::write(
            h.join("tester.md"),
            "---\ndescription: Runs the\n tests\n---\n",
        )
        .unwrap();
        let defs = shard_protocol::definitions::list_blocking(home.path(), cwd.path());
        let d = description_with(&defs);
        assert!(d.starts_with(SubagentTool::DESCRIPTION));
        assert!(d.contains("\n- general: General-purpose agent"), "{d}");
        assert!(d.contains("\n- reviewer: Reviews diffs"), "{d}");
        assert!(d.contains("\n- tester: Runs the"), "{d}");

        // Many definitions, long descriptions: bounded.
        let long = "word ".repeat(200);
        let many: Vec<_> = (0..40)
            .map(|i| def(&format!("def{i:02}"), Some(&long)))
            .collect();
        let d = description_with(&many);
        assert!(d.contains("- def23:") && !d.contains("- def24"), "{d}");
        assert!(d.contains("… and 16 more"));
        let fixed = SubagentTool::DESCRIPTION.len() + 200;
        assert!(
            d.len() < fixed + LISTED_MAX * (DESCRIPTION_MAX * 3 + 16),
            "{}",
            d.len()
        );
        let tool = Subagent::new(
            SubagentTool {
                sock: PathBuf::from("/nonexistent"),
                agent_id: "agent-x".into(),
                token: "t".into(),
            },
            &[def("general", None)],
        );
        assert_eq!(tool.name(), "subagent");
        assert!(tool.description().ends_with("\n- general"));
    }

    #[test]
    fn arguments_map_to_the_pinned_commands() {
        let args: SubagentArgs = serde_json::from_value(json!({"action":"create",
            "tasks":[{"name":"general","task":"a"}],"strategy":"parallel"}))
        .unwrap();
        let wire = |c: Command| serde_json::to_value(ClientMessage::new("1", c)).unwrap();
        let c = wire(command_for("agent-X", args).unwrap());
        assert_eq!(c["type"], "subagent.create");
        assert_eq!(c["parent_agent_id"], "agent-X");
        assert_eq!(c["tasks"][0]["task"], "a");
        assert_eq!(c["strategy"], "parallel");
        assert!(c.get("task").is_none());
        let args: SubagentArgs = serde_json::from_value(
            json!({"action":"wait","handles":["x"],"timeout":0,"mode":"any"}),
        )
        .unwrap();
        let c = wire(command_for("p", args).unwrap());
        assert_eq!(c["type"], "subagent.wait");
        assert_eq!(c["timeout"], 0.0);
        assert_eq!(c["mode"], "any");
        // A missing or malformed field is one error naming it, nothing is sent.
        for (args, want) in [
            (
                json!({"action":"steer","target":"x"}),
                "`steer` needs `message`",
            ),
            (json!({"action":"stop"}), "`stop` needs `handle`"),
            (
                json!({"action":"create","task":"t","strategy":"fan"}),
                "`strategy`",
            ),
            (
                json!({"action":"wait","handles":["x"],"mode":"some"}),
                "any or all",
            ),
        ] {
            let args: SubagentArgs = serde_json::from_value(args).unwrap();
            let e = command_for("p", args).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }
}
