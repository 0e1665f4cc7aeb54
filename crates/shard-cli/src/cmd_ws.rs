//! `shard ws create|attach|list|status|retire`: workspaces (one agent, one git worktree,
//! docs/workspaces.md) from the command line, over the daemon's `workspace.*` commands.
//! Refusals print the daemon's reason and what to do next; `--json` prints the data.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::Value;
use shard_client::Client;
use shard_protocol::command::Command;
use shard_protocol::orchestrator::{
    BranchDisposition, WorkspaceAttach, WorkspaceCreate, WorkspaceList, WorkspaceRef,
    WorkspaceRetire,
};

use crate::cmd_daemon::with_client;
use crate::common::{EXIT_FAILED, EXIT_USAGE};

/// Arguments of `shard ws`.
#[derive(Args)]
pub struct WsArgs {
    #[command(subcommand)]
    command: WsCommand,
}

#[derive(Subcommand)]
enum WsCommand {
    /// Create a worktree and branch for a fresh agent (printed: workspace id, agent id).
    Create(CreateArgs),
    /// Launch a fresh agent in an existing workspace.
    Attach(AttachArgs),
    /// List workspaces grouped by repository.
    List(ListArgs),
    /// Branch, ahead/behind, dirty files and live agents of one workspace.
    Status(StatusArgs),
    /// Retire a workspace: remove its worktree; delete its branch only when proven merged
    /// (or confirmed).
    Retire(RetireArgs),
}

/// The fresh agent's settings (as `shard new`).
#[derive(Args)]
struct AgentFlags {
    /// Display name of the agent.
    #[arg(long)]
    name: Option<String>,
    /// Provider (`shard models` lists what is usable).
    #[arg(long)]
    provider: Option<String>,
    /// Model.
    #[arg(long)]
    model: Option<String>,
    /// Mode: build (default), plan, or a [[modes]] of config.toml.
    #[arg(long)]
    mode: Option<String>,
    /// Script file for the scripted provider (implies --provider scripted).
    #[arg(long)]
    script: Option<PathBuf>,
}

impl AgentFlags {
    fn provider_model(&self) -> (Option<String>, Option<String>) {
        crate::common::provider_and_model(
            self.script.as_deref(),
            self.provider.clone(),
            self.model.clone(),
        )
    }
}

#[derive(Args)]
struct CreateArgs {
    /// A directory inside the repository (default: the current directory).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// A label (also names the branch when --branch is not given).
    #[arg(long)]
    label: Option<String>,
    /// The branch to create (default: shard/<label>-<id>).
    #[arg(long)]
    branch: Option<String>,
    /// Where the branch starts (default: the repository's HEAD).
    #[arg(long)]
    base: Option<String>,
    /// The branch it is merged into (default: the branch of the main checkout).
    #[arg(long)]
    integration_target: Option<String>,
    /// The `[hosts.NAME]` the repository is on: `--cwd` is a path there, and the
    /// worktree, its git and its agent are there too.
    #[arg(long)]
    host: Option<String>,
    #[command(flatten)]
    agent: AgentFlags,
    /// Print the response data as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct AttachArgs {
    /// The workspace id.
    workspace: String,
    #[command(flatten)]
    agent: AgentFlags,
    /// Print the response data as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ListArgs {
    /// Only the repository of this directory.
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// `--cwd` is a path on this `[hosts.NAME]`.
    #[arg(long, requires = "cwd")]
    host: Option<String>,
    /// Include retired workspaces.
    #[arg(long)]
    all: bool,
    /// Print the response data as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct StatusArgs {
    /// The workspace id.
    workspace: String,
    /// Print the response data as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct RetireArgs {
    /// The workspace id.
    workspace: String,
    /// Keep the branch.
    #[arg(long, conflicts_with = "delete_confirmed")]
    keep: bool,
    /// Delete the branch even when it is not merged (its tip is recorded and printed).
    #[arg(long)]
    delete_confirmed: bool,
    /// Print the response data as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `shard ws`.
pub fn ws(args: WsArgs) -> ExitCode {
    let command = match build(args.command) {
        Ok(c) => c,
        Err(code) => return code,
    };
    with_client(|c| async move { run(&c, command).await })
}

/// What to send and how to print its answer.
struct Planned {
    command: Command,
    json: bool,
    print: fn(&Value) -> String,
}

fn cwd_of(p: Option<PathBuf>) -> Result<String, ExitCode> {
    crate::common::canonical_cwd(p)
        .map(|c| c.display().to_string())
        .map_err(|e| {
            eprintln!("shard ws: {e}");
            ExitCode::from(EXIT_USAGE)
        })
}

fn build(cmd: WsCommand) -> Result<Planned, ExitCode> {
    Ok(match cmd {
        WsCommand::Create(a) => {
            let (provider, model) = a.agent.provider_model();
            Planned {
                command: Command::WorkspaceCreate(WorkspaceCreate {
                    // A path on the host is not this machine's to resolve.
                    cwd: match &a.host {
                        Some(_) => a.cwd.map(|p| p.display().to_string()).unwrap_or_default(),
                        None => cwd_of(a.cwd)?,
                    },
                    host: a.host,
                    label: a.label,
                    branch: a.branch,
                    base_ref: a.base,
                    integration_target: a.integration_target,
                    name: a.agent.name,
                    model,
                    provider,
                    mode: a.agent.mode,
                    ..Default::default()
                }),
                json: a.json,
                print: print_launched,
            }
        }
        WsCommand::Attach(a) => {
            let (provider, model) = a.agent.provider_model();
            Planned {
                command: Command::WorkspaceAttach(WorkspaceAttach {
                    workspace_id: a.workspace,
                    name: a.agent.name,
                    model,
                    provider,
                    mode: a.agent.mode,
                    ..Default::default()
                }),
                json: a.json,
                print: print_launched,
            }
        }
        WsCommand::List(a) => Planned {
            command: Command::WorkspaceList(WorkspaceList {
                version: None,
                cwd: match &a.host {
                    Some(_) => a.cwd.map(|p| p.display().to_string()),
                    None => a.cwd.map(|c| cwd_of(Some(c))).transpose()?,
                },
                include_retired: Some(a.all),
                host: a.host,
            }),
            json: a.json,
            print: print_list,
        },
        WsCommand::Status(a) => Planned {
            command: Command::WorkspaceStatus(WorkspaceRef {
                version: None,
                workspace_id: a.workspace,
            }),
            json: a.json,
            print: print_status,
        },
        WsCommand::Retire(a) => Planned {
            command: Command::WorkspaceRetire(WorkspaceRetire {
                version: None,
                workspace_id: a.workspace,
                branch_disposition: Some(if a.keep {
                    BranchDisposition::Keep
                } else if a.delete_confirmed {
                    BranchDisposition::DeleteConfirmed
                } else {
                    BranchDisposition::DeleteIfMerged
                }),
            }),
            json: a.json,
            print: print_retired,
        },
    })
}

async fn run(c: &Client, p: Planned) -> ExitCode {
    let ty = p.command.type_name();
    let r = match c.request(p.command).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("shard ws: {ty} failed: {e}");
            return ExitCode::from(EXIT_FAILED);
        }
    };
    if let Some(err) = r.error.filter(|_| !r.success) {
        eprintln!("shard ws: {}", err.message);
        let kind = err
            .data
            .as_ref()
            .and_then(|d| d.get("kind"))
            .and_then(Value::as_str);
        if let Some(hint) = kind.and_then(hint) {
            eprintln!("{hint}");
        }
        return ExitCode::from(EXIT_FAILED);
    }
    let data = r.data.unwrap_or(Value::Null);
    let text = if p.json {
        serde_json::to_string_pretty(&data).unwrap_or_default()
    } else {
        (p.print)(&data)
    };
    let _ = writeln!(std::io::stdout().lock(), "{}", text.trim_end());
    ExitCode::SUCCESS
}

/// What to do after a refusal of this kind.
fn hint(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "confirmation_required" => {
            "the branch is not proven merged; rerun with --delete-confirmed to delete it anyway \
             (its tip is recorded and printed), or --keep to keep it"
        }
        "live" => "stop its agents first: shard kill AGENT",
        "dirty" => "commit or remove the changes in the worktree first",
        "busy" => "wait for the turn to finish (or abort it), then retry",
        _ => return None,
    })
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("-")
}

/// Path `k` of `v`, as `HOST:PATH` when `v` names a host.
fn at(v: &Value, k: &str) -> String {
    match v.get("host").and_then(Value::as_str) {
        Some(h) => format!("{h}:{}", s(v, k)),
        None => s(v, k).to_string(),
    }
}

fn print_launched(d: &Value) -> String {
    let w = &d["workspace"];
    format!(
        "{}\t{}\t{}\n  branch {} in {}\n  follow it with: shard attach {}",
        s(w, "workspace_id"),
        s(d, "agent_id"),
        at(w, "cwd"),
        s(w, "branch"),
        at(w, "repository_cwd"),
        s(d, "agent_id")
    )
}

fn print_list(d: &Value) -> String {
    let groups = d["repositories"].as_array().cloned().unwrap_or_default();
    if groups.is_empty() {
        return "no workspaces".into();
    }
    let mut out = String::new();
    for g in groups {
        out.push_str(&format!("{}\n", at(&g, "repository_cwd")));
        for w in g["workspaces"].as_array().cloned().unwrap_or_default() {
            let agents = w["agent_ids"].as_array().map_or(0, Vec::len);
            out.push_str(&format!(
                "  {:<30} {:<8} {:<28} agents:{} {}\n",
                s(&w, "workspace_id"),
                s(&w, "lifecycle"),
                s(&w, "branch"),
                agents,
                w.get("label").and_then(Value::as_str).unwrap_or("")
            ));
        }
    }
    out
}

fn print_status(d: &Value) -> String {
    let w = &d["workspace"];
    let num = |k: &str| d.get(k).and_then(Value::as_u64).map(|n| n.to_string());
    let mut out = format!(
        "{} {} ({})\n  worktree  {}{}\n  branch    {}",
        s(w, "workspace_id"),
        s(w, "lifecycle"),
        at(w, "repository_cwd"),
        at(w, "cwd"),
        if d["missing"] == true {
            "  MISSING (removed by hand; never recreated)"
        } else {
            ""
        },
        s(w, "branch"),
    );
    if let (Some(a), Some(b)) = (num("ahead"), num("behind")) {
        out.push_str(&format!(
            "  ahead {a}, behind {b} of {}",
            s(w, "integration_target")
        ));
    }
    if let Some(n) = num("dirty_files") {
        out.push_str(&format!("\n  dirty     {n} file(s)"));
    }
    let list = |k: &str| {
        d[k].as_array()
            .map(|v| {
                v.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    out.push_str(&format!("\n  live      {}", list("live_agents")));
    let busy = list("busy_agents");
    if !busy.is_empty() {
        out.push_str(&format!("\n  busy      {busy}"));
    }
    out
}

fn print_retired(d: &Value) -> String {
    let w = &d["workspace"];
    let mut out = format!("retired {}", s(w, "workspace_id"));
    if d["already_retired"] == true {
        out.push_str(" (already)");
    }
    if d["branch_deleted"] == true {
        out.push_str(&format!(
            "; branch {} deleted at {}\n  restore it with: {} (in {})",
            s(w, "branch"),
            s(d, "branch_tip"),
            s(d, "restore"),
            at(w, "repository_cwd")
        ));
    } else {
        out.push_str(&format!("; branch {} kept", s(w, "branch")));
    }
    out
}
