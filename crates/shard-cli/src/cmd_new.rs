//! `shard new`: creates a daemon agent from flags, no JSON to write.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use shard_protocol::command::{AgentCreate, AttachRole, Command, HeadlessPolicy, Prompt};

use crate::cmd_agent::PolicyArg;
use crate::cmd_daemon::with_client;

/// Arguments of `shard new`.
#[derive(Args, Debug)]
pub struct NewArgs {
    /// Working directory (default: the current directory); with --host, a path on the
    /// host (required).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// Run the agent on this `[hosts.NAME]` of config.toml (docs/hosts.md).
    #[arg(long)]
    host: Option<String>,
    /// Display name.
    #[arg(long)]
    name: Option<String>,
    /// Provider: anthropic, openai, openai-responses, scripted (with --script), or a
    /// [providers.NAME] of config.toml. `shard models` lists what is usable.
    #[arg(long)]
    provider: Option<String>,
    /// Model: a catalog id `provider/model` or a model name of the catalog.
    #[arg(long)]
    model: Option<String>,
    /// Mode: build (default), plan (read-only), or a [[modes]] of config.toml.
    #[arg(long)]
    mode: Option<String>,
    /// Adopt this existing session (`shard sessions` lists them).
    #[arg(long)]
    session: Option<String>,
    /// Comma-separated tool allow-list.
    #[arg(long, value_delimiter = ',')]
    tools: Option<Vec<String>>,
    /// Who answers permission requests while no interactive client is attached (with
    /// --prompt the default is queue: they wait for the first person who attaches).
    #[arg(long, value_enum)]
    headless_policy: Option<PolicyArg>,
    /// Script file for the scripted provider (implies --provider scripted).
    #[arg(long)]
    script: Option<PathBuf>,
    /// A first prompt to send once the agent exists.
    #[arg(long)]
    prompt: Option<String>,
}

/// Runs `shard new`: prints the new agent's id on stdout.
pub fn new(args: NewArgs) -> ExitCode {
    let cwd = match (&args.host, &args.cwd) {
        // A path on the host, checked there.
        (Some(_), Some(c)) => c.clone(),
        (Some(h), None) => {
            eprintln!("shard new: --host {h} needs --cwd PATH_ON_HOST");
            return ExitCode::from(crate::common::EXIT_USAGE);
        }
        (None, _) => match crate::common::canonical_cwd(args.cwd.clone()) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("shard new: {e}");
                return ExitCode::from(crate::common::EXIT_USAGE);
            }
        },
    };
    let (provider, model) = crate::common::provider_and_model(
        args.script.as_deref(),
        args.provider.clone(),
        args.model.clone(),
    );
    // An agent started on a prompt works before anyone attaches: its requests wait for
    // the first person, unless the caller chose otherwise.
    let policy: Option<HeadlessPolicy> = args
        .headless_policy
        .map(Into::into)
        .or(args.prompt.is_some().then_some(HeadlessPolicy::Queue));
    with_client(|c| async move {
        let create = AgentCreate {
            cwd: cwd.display().to_string(),
            session_id: args.session.clone(),
            model,
            provider,
            mode: args.mode.clone(),
            tools: args.tools.clone(),
            skills: None,
            headless_policy: policy,
            mcp_servers: None,
            name: args.name.clone(),
            parent_agent_id: None,
            system_prompt: None,
            depth: None,
            launch_policy: None,
            alias: None,
            definition_name: None,
            display_name: None,
            names: None,
            host: args.host.clone(),
        };
        let id = match c.create_with_notice(create).await {
            Ok(created) => {
                if let Some(n) = &created.notice {
                    eprintln!("shard new: {n}");
                }
                created.agent_id
            }
            Err(e) => {
                eprintln!("shard new: {e}");
                return ExitCode::from(crate::common::EXIT_FAILED);
            }
        };
        println!("{id}");
        let prompted = args.prompt.is_some();
        if let Some(p) = args.prompt {
            // Driving an agent needs an attachment; it ends once the prompt is accepted,
            // and the agent's headless policy answers what comes after.
            if let Err(e) = c.attach(&id, AttachRole::Interactive).await {
                eprintln!("shard new: created {id}, but cannot attach to send the prompt: {e}");
                return ExitCode::from(crate::common::EXIT_FAILED);
            }
            let cmd = Command::Prompt(Prompt {
                agent_id: Some(id.clone()),
                message: p,
                images: None,
                streaming_behavior: None,
            });
            if let Err(e) = c.call(cmd).await {
                eprintln!("shard new: created {id}, but the prompt failed: {e}");
                return ExitCode::from(crate::common::EXIT_FAILED);
            }
            let _ = c.detach(&id).await;
        }
        eprintln!("{}", hint(&id, prompted, policy));
        ExitCode::SUCCESS
    })
}

/// What to do next, saying who answers the agent's permission requests meanwhile.
fn hint(id: &str, prompted: bool, policy: Option<HeadlessPolicy>) -> String {
    if !prompted {
        return format!("follow it with: shard attach {id}");
    }
    let meanwhile = match policy {
        Some(HeadlessPolicy::Queue) | None => {
            "its permission requests wait for the first person who attaches (denied after the \
             headless timeout, [headless] timeout_secs)"
        }
        Some(HeadlessPolicy::Deny) => {
            "with --headless-policy deny, its permission requests are denied until someone attaches"
        }
        Some(HeadlessPolicy::AllowIfRuleMatches) => {
            "until someone attaches, its permission requests are answered by the \
             [[headless.allow]] rules of config.toml (anything else is denied)"
        }
    };
    format!("working on the prompt; {meanwhile}: shard attach {id}")
}
