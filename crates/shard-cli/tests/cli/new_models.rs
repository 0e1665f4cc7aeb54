//! A model released after this build: with its provider named it is used at once, with a
//! one-line notice (no price, so no cost; an assumed context window), in `shard run`,
//! `shard new` (agent.create) and `set_model`; a bare unknown name is refused with
//! suggestions.

use std::process::Command;

use serde_json::json;
use shard_protocol::command::kind;

use crate::harness::*;
use crate::mock::MockApi;

fn run_with(sb: &Sandbox, api: &MockApi, args: &[&str]) -> (bool, String) {
    let out = Command::new(shard_bin())
        .arg("run")
        .args(args)
        .current_dir(sb.work())
        .env("SHARD_HOME", sb.home())
        .envs(api.env())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn run_sends_a_model_the_catalog_lacks_when_its_provider_is_named() {
    let sb = Sandbox::new();
    let api = MockApi::start(vec![]);
    let (ok, stderr) = run_with(&sb, &api, &["--model", "anthropic/claude-next-9", "hi"]);
    assert!(ok, "{stderr}");
    let notices: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("not in Shard's model catalog"))
        .collect();
    assert_eq!(notices.len(), 1, "one line: {stderr}");
    assert!(notices[0].contains("anthropic/claude-next-9"), "{stderr}");
    assert!(notices[0].contains("128000 tokens"), "{stderr}");
    assert!(notices[0].contains("price is unknown"), "{stderr}");
    let seen = api.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/messages");
    assert_eq!(seen[0].body["model"], "claude-next-9");

    let (ok, stderr) = run_with(
        &sb,
        &api,
        &["--provider", "openai", "--model", "gpt-next", "hi"],
    );
    assert!(ok, "{stderr}");
    assert!(stderr.contains("`openai/gpt-next` is not in"), "{stderr}");
    let seen = api.requests();
    assert_eq!(seen[1].path, "/v1/chat/completions");
    assert_eq!(seen[1].body["model"], "gpt-next");

    // A catalog model gets no notice.
    let (ok, stderr) = run_with(&sb, &api, &["--model", "claude-haiku-4-5", "hi"]);
    assert!(ok, "{stderr}");
    assert!(!stderr.contains("not in Shard's model catalog"), "{stderr}");
}

#[test]
fn a_bare_unknown_name_is_refused_with_suggestions() {
    let sb = Sandbox::new();
    let api = MockApi::start(vec![]);
    let (ok, stderr) = run_with(&sb, &api, &["--model", "claude-sonet-4-5", "hi"]);
    assert!(!ok);
    assert!(
        stderr.contains("did you mean `claude-sonnet-4-5`"),
        "{stderr}"
    );
    assert!(stderr.contains("provider/model"), "{stderr}");
    assert!(api.requests().is_empty(), "nothing was sent");
    assert!(!sb.home().join("sessions").exists(), "nothing was created");
}

#[test]
fn set_model_accepts_it_with_a_notice_in_the_response() {
    let sb = Sandbox::new();
    let keys = [("ANTHROPIC_API_KEY", "sk-ant-x")];
    let mut a = Agent::spawn_env(&sb, None, &["--provider", "anthropic"], &keys);
    a.until_type("sync");
    let id = a.send(json!({"type": "set_model", "model": "anthropic/claude-next-9"}));
    let set = a.ok::<kind::SetModel>(&id);
    assert_eq!(set.active.id, "anthropic/claude-next-9");
    assert_eq!(set.active.context_window, Some(128000));
    let notice = set.notice.unwrap();
    assert!(notice.contains("128000"), "{notice}");
    let id = a.send(json!({"type": "set_model", "model": "claude-haiku-4-5"}));
    let set = a.ok::<kind::SetModel>(&id);
    assert_eq!(set.notice, None, "{set:?}");
    let id = a.send(json!({"type": "set_model", "model": "claude-nope"}));
    let resp = a.response(&id);
    assert!(!resp.success, "{resp:?}");
    assert!(a.finish().success());
}

#[test]
fn shard_new_creates_the_agent_and_prints_the_notice() {
    let sb = Sandbox::new();
    let api = MockApi::start(vec![]);
    let env: Vec<(String, String)> = api.env();
    let env: Vec<(&str, Option<&str>)> = env
        .iter()
        .map(|(k, v)| (k.as_str(), Some(v.as_str())))
        .collect();
    let _d = crate::daemon::Daemon::start_with_env(&sb.home(), &[], &env);
    let new = |args: &[&str]| {
        Command::new(shard_bin())
            .arg("new")
            .args(args)
            .current_dir(sb.work())
            .env("SHARD_HOME", sb.home())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let out = new(&["--provider", "anthropic", "--model", "claude-next-9"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .starts_with("agent-")
    );
    assert!(
        stderr.contains("`anthropic/claude-next-9` is not in Shard's model catalog"),
        "{stderr}"
    );
    let out = new(&["--model", "claude-next-9"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown model"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
