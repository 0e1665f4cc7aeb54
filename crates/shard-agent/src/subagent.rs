//! `subagent`: the model delegates background work (ARCHITECTURE §9). The tool forwards
//! to the daemon's `subagent.*` commands (PROTOCOL §10.3) over `SHARD_DAEMON_SOCK`,
//! proving the Runtime's identity with `runtime.auth` and its `SHARD_AGENT_TOKEN`. It
//! is offered only when the Runtime runs under a daemon.

use std::path::PathBuf;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use shard_protocol::definitions::DefinitionSummary;
use shard_tools::{Tool, ToolContext, ToolOutput, Typed, TypedTool};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Which command the call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
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
pub struct SubagentTaskArg {
    /// Agent definition name (`general` or a `.shard/agents/NAME.md`).
    pub name: String,
    /// What the child should do; include everything it needs to know.
    pub task: String,
}

/// Arguments of `subagent` (pinned by issue 16).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct SubagentArgs {
    /// The command.
    pub action: SubagentAction,
    /// create: agent definition name (default `general`).
    #[serde(default)]
    pub name: Option<String>,
    /// create: the task of a single child.
    #[serde(default)]
    pub task: Option<String>,
    /// create: several tasks (with `strategy`).
    #[serde(default)]
    pub tasks: Option<Vec<SubagentTaskArg>>,
    /// create: `single`, `parallel` or `chain` (each step gets the previous result).
    #[serde(default)]
    pub strategy: Option<String>,
    /// create: model for the children.
    #[serde(default)]
    pub model: Option<String>,
    /// create: the children's mode; wait: `any` or `all`.
    #[serde(default)]
    pub mode: Option<String>,
    /// wait: job ids, run ids, agent ids or aliases.
    #[serde(default)]
    pub handles: Option<Vec<String>>,
    /// wait: seconds (omitted waits until done, 0 polls).
    #[serde(default)]
    pub timeout: Option<f64>,
    /// steer / relaunch: run id, agent id or alias.
    #[serde(default)]
    pub target: Option<String>,
    /// steer: the message.
    #[serde(default)]
    pub message: Option<String>,
    /// status: handles to report on.
    #[serde(default)]
    pub targets: Option<Vec<String>>,
    /// stop: job id, run id or alias.
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
        Some(SubagentTool {
            sock: PathBuf::from(get("SHARD_DAEMON_SOCK")?),
            agent_id: get("SHARD_AGENT_ID")?,
            token: get("SHARD_AGENT_TOKEN")?,
        })
    }
}

/// The daemon command for `args` (without `id`).
pub fn command_for(parent: &str, args: SubagentArgs) -> Value {
    let (ty, mut v) = match args.action {
        SubagentAction::Create => (
            "subagent.create",
            json!({"name": args.name, "task": args.task, "strategy": args.strategy,
                   "model": args.model, "mode": args.mode,
                   "tasks": args.tasks.map(|t| t.into_iter()
                       .map(|t| json!({"name": t.name, "task": t.task})).collect::<Vec<_>>())}),
        ),
        SubagentAction::Wait => (
            "subagent.wait",
            json!({"handles": args.handles.unwrap_or_default(), "mode": args.mode,
                   "timeout": args.timeout}),
        ),
        SubagentAction::Steer => (
            "subagent.steer",
            json!({"target": args.target, "message": args.message}),
        ),
        SubagentAction::Relaunch => (
            "subagent.relaunch",
            json!({"target": args.target, "task": args.task}),
        ),
        SubagentAction::Status => ("subagent.status", json!({"targets": args.targets})),
        SubagentAction::Stop => ("subagent.stop", json!({"handle": args.handle})),
    };
    if let Some(o) = v.as_object_mut() {
        o.retain(|_, x| !x.is_null());
        o.insert("type".into(), json!(ty));
        o.insert("parent_agent_id".into(), json!(parent));
    }
    v
}

impl SubagentTool {
    /// One connection per call: hello, `runtime.auth`, the command, its response.
    async fn call(&self, mut command: Value) -> Result<Value, String> {
        let stream = tokio::net::UnixStream::connect(&self.sock)
            .await
            .map_err(|e| format!("cannot reach the daemon: {e}"))?;
        let (r, mut w) = stream.into_split();
        let mut lines = BufReader::new(r).lines();
        let auth = json!({"type": "runtime.auth", "id": "auth", "agent_id": self.agent_id,
                          "token": self.token});
        command["id"] = json!("call");
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
    const DESCRIPTION: &'static str = "Delegate work to background subagents that run in \
        parallel with you. `action`: `create` (`task`, optional `name` of an agent \
        definition — `general` is built in, others are .shard/agents/NAME.md — or `tasks` \
        [{name, task}] with `strategy` parallel/chain), `wait` (`handles`, `mode` any/all, \
        `timeout` seconds), `steer` (`target`, `message`), `relaunch` (`target`, `task`), \
        `status` (`targets`), `stop` (`handle`). Each finished run's report arrives as a \
        message; you need not wait. Tasks must be self-contained.";
    // Delegating changes nothing by itself: every child gates its own tools (and a
    // planning parent only gets planning children), so no permission is asked here.
    const READ_ONLY: bool = true;

    fn run<'a>(&'a self, args: SubagentArgs, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let command = command_for(&self.agent_id, args);
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
    out.push_str("\n\nAgent definitions (`name`):");
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
/// lists the agent definitions available when the Runtime started (issue 16), which a
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
        let c = command_for("agent-X", args);
        assert_eq!(c["type"], "subagent.create");
        assert_eq!(c["parent_agent_id"], "agent-X");
        assert_eq!(c["tasks"][0]["task"], "a");
        assert!(c.get("task").is_none());
        let args: SubagentArgs =
            serde_json::from_value(json!({"action":"wait","handles":["x"],"timeout":0})).unwrap();
        let c = command_for("p", args);
        assert_eq!(c["type"], "subagent.wait");
        assert_eq!(c["timeout"], 0.0);
    }
}
