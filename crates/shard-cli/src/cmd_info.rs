//! `shard sessions` and `shard models`: what there is to continue, and what can be used
//! now. Both read local state only; no daemon is needed.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use shard_client::sanitize::strip;

use crate::common::{self, usage};

/// Arguments of `shard sessions`.
#[derive(Args, Debug)]
pub struct SessionsArgs {
    /// Directory whose sessions to list (default: the current directory).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// Print JSON (an array of session records) instead of a table.
    #[arg(long)]
    json: bool,
}

/// Arguments of `shard models`.
#[derive(Args, Debug)]
pub struct ModelsArgs {
    /// Print JSON (an array of `{id, provider, model, context_window, usable, reason}`).
    #[arg(long)]
    json: bool,
}

fn report(what: &str, r: anyhow::Result<ExitCode>) -> ExitCode {
    match r {
        Ok(c) => c,
        Err(e) => {
            eprintln!("shard {what}: {e:#}");
            common::exit_for(&e)
        }
    }
}

/// Runs `shard sessions`: this directory's sessions, newest first.
pub fn sessions(args: SessionsArgs) -> ExitCode {
    common::init_logging();
    report("sessions", sessions_inner(args))
}

fn sessions_inner(args: SessionsArgs) -> anyhow::Result<ExitCode> {
    let home = common::shard_home()?;
    let cwd = match args.cwd {
        Some(c) => c,
        None => std::env::current_dir()?,
    };
    let cwd = std::fs::canonicalize(&cwd).map_err(|e| usage(format!("{}: {e}", cwd.display())))?;
    let store = shard_session::SessionStore::new(home.clone());
    let list = store.list_for_cwd(&cwd)?;
    let mut out = std::io::stdout().lock();
    let problems: Vec<Option<String>> = list
        .iter()
        .map(|m| common::unopenable(&home, &m.session_id))
        .collect();
    if args.json {
        let mut rows = serde_json::to_value(&list)?;
        if let Some(rows) = rows.as_array_mut() {
            for (row, problem) in rows.iter_mut().zip(&problems) {
                if let (Some(obj), Some(p)) = (row.as_object_mut(), problem) {
                    obj.insert("unopenable".into(), serde_json::Value::String(p.clone()));
                }
            }
        }
        writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if list.is_empty() {
        writeln!(out, "no sessions in {}", cwd.display())?;
        return Ok(ExitCode::SUCCESS);
    }
    let now = shard_protocol::ids::now_millis();
    writeln!(
        out,
        "{:<31} {:<9} {:>7}  {:<6} {:<30} TITLE",
        "SESSION", "UPDATED", "ENTRIES", "MODE", "MODEL"
    )?;
    for (m, problem) in list.into_iter().zip(problems) {
        let model = m
            .model
            .as_ref()
            .map(|r| format!("{}/{}", r.provider, r.model))
            .unwrap_or_else(|| "-".into());
        let title = m.title.as_deref().map(strip).unwrap_or_default();
        let mut title: String = title.replace('\n', " ").chars().take(60).collect();
        if let Some(p) = problem {
            title = format!("[cannot be opened: {p}] {title}");
        }
        writeln!(
            out,
            "{:<31} {:<9} {:>7}  {:<6} {:<30} {}",
            m.session_id,
            ago(now.saturating_sub(m.updated_at)),
            m.entry_count,
            m.mode.as_deref().unwrap_or("-"),
            model,
            title
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `65_000` ms → `1 min ago`.
fn ago(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..=59 => format!("{s} s ago"),
        60..=3599 => format!("{} min ago", s / 60),
        3600..=86_399 => format!("{} h ago", s / 3600),
        _ => format!("{} d ago", s / 86_400),
    }
}

/// Runs `shard models`: every catalog model, usable now or why not.
pub fn models(args: ModelsArgs) -> ExitCode {
    common::init_logging();
    report("models", models_inner(args))
}

/// One row of `shard models`.
#[derive(serde::Serialize)]
struct Row {
    id: String,
    provider: String,
    model: String,
    context_window: u64,
    usable: bool,
    default: bool,
    reason: Option<String>,
}

fn models_inner(args: ModelsArgs) -> anyhow::Result<ExitCode> {
    let home = common::shard_home()?;
    let config = shard_agent::config::Config::load(&home).map_err(|e| usage(e.to_string()))?;
    let ai = config.ai_config();
    let env = common::process_env();
    let lookup = |k: &str| env(k);
    let catalog = shard_ai::Catalog::with_config(&ai);
    let default = shard_ai::default_selection(&ai, &lookup);
    // Whether each provider can be built now, and why not.
    let mut verdicts: Vec<(String, Option<String>)> = Vec::new();
    let mut rows = Vec::new();
    for info in catalog.list() {
        let verdict = match verdicts.iter().find(|(p, _)| *p == info.provider) {
            Some((_, v)) => v.clone(),
            None => {
                let v = shard_ai::build_provider(&info.provider, &ai, &lookup)
                    .err()
                    .map(|e| e.to_string());
                verdicts.push((info.provider.clone(), v.clone()));
                v
            }
        };
        rows.push(Row {
            id: info.id.clone(),
            provider: info.provider.clone(),
            model: info.model.clone(),
            context_window: info.context_window,
            usable: verdict.is_none(),
            default: default
                .as_ref()
                .is_some_and(|(p, m)| *p == info.provider && *m == info.model),
            reason: verdict,
        });
    }
    rows.push(Row {
        id: "scripted/script".into(),
        provider: "scripted".into(),
        model: "script".into(),
        context_window: 0,
        usable: false,
        default: false,
        reason: Some("offline test provider: pass --provider scripted --script FILE".into()),
    });
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    // Grouped by provider: the reason a provider is not usable is said once.
    let mut provider = "";
    for r in &rows {
        if r.provider != provider {
            provider = &r.provider;
            let status = match &r.reason {
                None => "usable".to_string(),
                Some(why) if r.provider == "scripted" => why.clone(),
                Some(why) => format!("not usable: {why}"),
            };
            writeln!(out, "{provider}: {status}")?;
        }
        if r.provider == "scripted" {
            continue;
        }
        let ctx = if r.context_window >= 1000 {
            format!("{}k", r.context_window / 1000)
        } else {
            r.context_window.to_string()
        };
        let default = if r.default { "  (default)" } else { "" };
        writeln!(out, "  {:<40} {:>6} context{default}", r.id, ctx)?;
    }
    if !rows.iter().any(|r| r.usable) {
        writeln!(
            out,
            "\nno model is usable: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or add a provider to {}",
            home.join("config.toml").display()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
