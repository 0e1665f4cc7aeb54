//! `shard agent --remote`: a daemon's Runtime on another host (docs/hosts.md). It reads
//! the daemon's `runtime.settings` line first — provider keys and base URLs, the
//! daemon's policy tables, `SHARD_HOME` — and keeps the keys in memory only, then serves
//! like any daemon-managed Runtime: end of input (the daemon gone, the connection
//! dropped) aborts the turn and exits.

use std::io::{BufRead, Read};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use shard_agent::RuntimeOptions;
use shard_agent::models::EnvLookup;
use shard_protocol::remote::{MAX_RUNTIME_SETTINGS_LINE, RuntimeSettings};

use crate::cmd_agent::AgentArgs;
use crate::common;

/// Runs `shard agent --remote`.
pub fn run(args: AgentArgs) -> ExitCode {
    // Before the async runtime exists: std's stdin buffer keeps whatever followed the
    // first line, and the async reader later reads through the same buffer.
    let settings = match read_settings(&mut std::io::stdin().lock()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("shard agent: {e}");
            return ExitCode::from(common::EXIT_USAGE);
        }
    };
    let (opts, env) = match options(&args, settings) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("shard agent: {e:#}");
            return ExitCode::from(common::EXIT_USAGE);
        }
    };
    let rt = match common::tokio_runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("shard agent: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    if args.check {
        return rt.block_on(crate::cmd_agent::check(opts, env));
    }
    let code = rt.block_on(crate::cmd_agent::serve(opts, env, true));
    rt.shutdown_background();
    code
}

/// Reads and checks the first input line.
fn read_settings(input: &mut impl BufRead) -> Result<RuntimeSettings, String> {
    let mut line = Vec::new();
    let limit = u64::try_from(MAX_RUNTIME_SETTINGS_LINE).unwrap_or(u64::MAX);
    input
        .by_ref()
        .take(limit + 1)
        .read_until(b'\n', &mut line)
        .map_err(|e| format!("cannot read runtime.settings: {e}"))?;
    if line.last() != Some(&b'\n') {
        return Err(if line.len() > MAX_RUNTIME_SETTINGS_LINE {
            "runtime.settings is longer than its limit".into()
        } else {
            "input ended before runtime.settings: `--remote` is for a daemon's Runtime on another host".into()
        });
    }
    line.pop();
    RuntimeSettings::parse(&line)
}

/// The Runtime's options and key lookup from the flags and the daemon's settings.
fn options(
    args: &AgentArgs,
    settings: RuntimeSettings,
) -> anyhow::Result<(RuntimeOptions, EnvLookup)> {
    let shard_home = match &settings.home {
        Some(h) => expand_home(h)?,
        None => common::shard_home()?,
    };
    common::ensure_home(&shard_home)?;
    let cwd = args
        .cwd
        .clone()
        .ok_or_else(|| anyhow::anyhow!("--remote needs --cwd"))?;
    let system_prompt = crate::cmd_agent::read_system_prompt(args)?;
    let opts = RuntimeOptions {
        shard_home,
        cwd,
        provider: args.provider.clone(),
        model: args.model.clone(),
        mode: args.mode.clone(),
        session_id: args.session.clone(),
        headless_policy: args.headless_policy.map(Into::into),
        name: args.name.clone(),
        script: args.script.clone(),
        agent_id: Some(settings.agent_id.clone()),
        tools: args.tools.clone(),
        system_prompt,
        forwarded: Some(settings.config),
        // The daemon refuses client MCP servers for agents on hosts (docs/hosts.md).
        client_mcp_servers: Vec::new(),
        one_shot: false,
    };
    // The daemon's variables first, then the host's own environment.
    let forwarded = settings.env;
    let host = common::process_env();
    let env: EnvLookup = Arc::new(move |k: &str| {
        forwarded
            .get(k)
            .filter(|v| !v.is_empty())
            .cloned()
            .or_else(|| host(k))
    });
    Ok((opts, env))
}

/// `~/…` on the host, from its `HOME`.
fn expand_home(h: &str) -> anyhow::Result<PathBuf> {
    match h.strip_prefix("~/") {
        Some(rest) => {
            let home = std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .ok_or_else(|| anyhow::anyhow!("home {h} uses ~ but HOME is not set"))?;
            Ok(PathBuf::from(home).join(rest))
        }
        None if h.starts_with('/') => Ok(PathBuf::from(h)),
        None => anyhow::bail!("home {h:?} is not an absolute path"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn reads_only_the_first_line() {
        let s = RuntimeSettings::new("agent-x");
        let mut bytes = s.to_line();
        bytes.extend_from_slice(b"{\"type\":\"sync\"}\n");
        let mut input = std::io::BufReader::new(&bytes[..]);
        assert_eq!(read_settings(&mut input).unwrap().agent_id, "agent-x");
        let mut rest = String::new();
        input.read_line(&mut rest).unwrap();
        assert_eq!(rest, "{\"type\":\"sync\"}\n");
    }

    #[test]
    fn end_of_input_and_garbage_are_one_line_errors() {
        let e = read_settings(&mut &b""[..]).unwrap_err();
        assert!(e.contains("input ended"), "{e}");
        let e = read_settings(&mut &b"hello\n"[..]).unwrap_err();
        assert!(e.contains("runtime.settings"), "{e}");
    }

    #[test]
    fn forwarded_keys_come_first_and_stay_out_of_the_environment() {
        let mut s = RuntimeSettings::new("agent-x");
        s.home = Some("/tmp/shard-remote-test-home".into());
        s.env.insert("SHARD_TEST_FORWARDED_KEY".into(), "k1".into());
        let args = AgentArgs {
            cwd: Some("/".into()),
            ..Default::default()
        };
        let (opts, env) = options(&args, s).unwrap();
        assert_eq!(opts.agent_id.as_deref(), Some("agent-x"));
        assert_eq!(env("SHARD_TEST_FORWARDED_KEY").as_deref(), Some("k1"));
        assert!(std::env::var_os("SHARD_TEST_FORWARDED_KEY").is_none());
        let _ = std::fs::remove_dir("/tmp/shard-remote-test-home");
    }
}
