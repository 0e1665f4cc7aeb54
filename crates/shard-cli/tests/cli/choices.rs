//! Checks of what a client or the user chooses, through the real `shard agent`:
//! prompt images, model resolution, start validation, and the kinds of `ask_user`.

use serde_json::json;
use shard_protocol::Event;
use shard_protocol::command::kind;
use shard_protocol::error::ErrorCode;
use shard_protocol::types::{NotifyType, UiKind};

use crate::harness::*;
use crate::runtime::{SID, active_model};

// ---------------------------------------------------------------- item 8: images

#[test]
fn a_prompt_image_with_bad_base64_is_refused_and_nothing_is_saved() {
    let sb = Sandbox::new();
    let script = sb.script("s.json", json!({"turns": [text_turn("fine")]}));
    let mut a = Agent::spawn(&sb, Some(&script), &["--session", SID]);
    a.until_type("sync");
    let id = a.send(json!({"type": "prompt", "message": "look", "images": [{"type": "image", "data": "%%% not base64", "mime_type": "image/png"}]}));
    let resp = a.response(&id);
    assert!(!resp.success, "{resp:?}");
    assert_eq!(code_of(&resp), ErrorCode::InvalidRequest);
    assert!(
        resp.error.as_ref().unwrap().message.contains("base64"),
        "{resp:?}"
    );
    let id = a.send(json!({"type": "prompt", "message": "look", "images": [{"type": "image", "data": "iVBORw0KGgo=", "mime_type": "image/tiff"}]}));
    assert_eq!(a.fails(&id), ErrorCode::InvalidRequest);
    assert!(a.finish().success());
    let messages = transcript(&sb.session_file(SID))
        .into_iter()
        .filter(|e| e["type"] == "message")
        .count();
    assert_eq!(messages, 0);
}

// ------------------------------------------------------- item 9: model resolution

#[test]
fn model_resolution_is_one_rule() {
    let sb = Sandbox::new();
    sb.config(
        "[providers.local]\nbase_url = \"http://127.0.0.1:9/v1\"\ndefault_model = \"qwen3\"\n",
    );
    // The configured default wins over keys that happen to be set.
    let keys = [
        ("ANTHROPIC_API_KEY", "sk-ant-x"),
        ("OPENAI_API_KEY", "sk-oa-x"),
    ];
    let mut a = Agent::spawn_env(&sb, None, &[], &keys);
    a.until_type("sync");
    assert_eq!(active_model(&mut a).id, "local/qwen3");
    assert!(a.finish().success());
    drop(a);

    // Only an OpenAI key: the picker offers no Anthropic model; a bare catalog name of the
    // current provider is accepted; an unknown provider/model is refused with the fix.
    std::fs::remove_file(sb.home().join("config.toml")).unwrap();
    let mut b = Agent::spawn_env(
        &sb,
        None,
        &["--provider", "openai"],
        &[("OPENAI_API_KEY", "sk-oa-x")],
    );
    b.until_type("sync");
    let id = b.send(json!({"type": "list_models"}));
    let list = b.ok::<kind::ListModels>(&id);
    let providers: Vec<&str> = list.models.iter().map(|m| m.provider.as_str()).collect();
    assert!(providers.contains(&"openai"), "{list:?}");
    assert!(
        !providers.contains(&"anthropic"),
        "no key, not offered: {list:?}"
    );
    let id = b.send(json!({"type": "set_model", "model": "gpt-5-mini"}));
    assert!(b.response(&id).success);
    assert_eq!(active_model(&mut b).id, "openai/gpt-5-mini");
    let id = b.send(json!({"type": "set_model", "model": "gpt-5-minii"}));
    let resp = b.response(&id);
    assert!(!resp.success, "{resp:?}");
    assert!(
        resp.error
            .as_ref()
            .unwrap()
            .message
            .contains("did you mean `gpt-5-mini`"),
        "says what would work: {resp:?}"
    );
    assert_eq!(
        active_model(&mut b).id,
        "openai/gpt-5-mini",
        "unchanged after a refusal"
    );
    assert!(b.finish().success());
    drop(b);

    // With an Anthropic key, a bare Anthropic catalog name resolves while on Anthropic.
    let mut c = Agent::spawn_env(
        &sb,
        None,
        &["--provider", "anthropic"],
        &[("ANTHROPIC_API_KEY", "sk-ant-x")],
    );
    c.until_type("sync");
    let id = c.send(json!({"type": "set_model", "model": "claude-opus-4-5"}));
    assert!(c.response(&id).success);
    assert_eq!(active_model(&mut c).id, "anthropic/claude-opus-4-5");
    assert!(c.finish().success());
}

// ------------------------------------------------------------ start validation

#[test]
fn an_unknown_mode_is_a_start_error() {
    let sb = Sandbox::new();
    let script = sb.script("s.json", json!({"turns": []}));
    let mut a = Agent::spawn(&sb, Some(&script), &["--mode", "bogus", "--session", SID]);
    assert!(matches!(a.next_event(), Event::Hello(_)));
    let err = pick::error(&a.next_event()).expect("an error right after hello");
    assert_eq!(err.fatal, Some(true));
    assert_eq!(err.code, ErrorCode::InvalidRequest);
    assert!(err.message.contains("plan"), "names the modes: {err:?}");
    let status = a.finish();
    assert!(!status.success());
    assert!(!sb.session_file(SID).exists(), "nothing is created");
    drop(a);

    // The same for a provider or model that does not exist.
    for flags in [["--provider", "nosuch"], ["--model", "claude-nope"]] {
        let mut a = Agent::spawn_env(&sb, None, &flags, &[("ANTHROPIC_API_KEY", "sk-ant-x")]);
        assert!(matches!(a.next_event(), Event::Hello(_)));
        let err = pick::error(&a.next_event()).expect("an error right after hello");
        assert_eq!(err.fatal, Some(true), "{flags:?}: {err:?}");
        assert!(!a.finish().success());
    }
}

// ---------------------------------------------------------- item 1: ask_user kinds

#[test]
fn ask_user_produces_confirm_editor_and_notify() {
    let sb = Sandbox::new();
    let script = sb.script(
        "s.json",
        json!({"turns": [
            tool_turn("n1", "ask_user", json!({"question": "Tests pass.", "kind": "notify", "level": "warning"})),
            tool_turn("c1", "ask_user", json!({"question": "Push now?", "kind": "confirm"})),
            tool_turn("e1", "ask_user", json!({"question": "Commit message?", "kind": "editor", "prefill": "fix: "})),
            text_turn("done")
        ]}),
    );
    let mut a = Agent::spawn(&sb, Some(&script), &[]);
    a.until_type("sync");
    a.send(prompt("go"));
    let notify = a.until_event(pick::ui_request);
    assert_eq!(notify.kind, UiKind::Notify);
    assert_eq!(notify.notify_type, Some(NotifyType::Warning));
    // The notification waits for nobody: the turn goes on to the next question.
    let result = a.until_event(pick::tool_result);
    assert_eq!(result.tool_call_id, "n1");
    let confirm = a.until_event(pick::ui_request);
    assert_eq!(confirm.kind, UiKind::Confirm);
    a.send(json!({"type": "ui_response", "request_id": confirm.request_id, "value": "yes"}));
    let result = a.until_event(|e| pick::tool_result(e).filter(|r| r.tool_call_id == "c1"));
    assert_eq!(result_text(&result.content), "The user answered: yes");
    let editor = a.until_event(pick::ui_request);
    assert_eq!(editor.kind, UiKind::Editor);
    assert_eq!(editor.prefill.as_deref(), Some("fix: "));
    a.send(
        json!({"type": "ui_response", "request_id": editor.request_id, "value": "fix: the thing"}),
    );
    let result = a.until_event(|e| pick::tool_result(e).filter(|r| r.tool_call_id == "e1"));
    assert_eq!(
        result_text(&result.content),
        "The user answered: fix: the thing"
    );
    a.until_type("turn_end");
    assert!(a.finish().success());
}

#[test]
fn agent_check_validates_without_creating_anything() {
    let sb = Sandbox::new();
    let check = |flags: &[&str], envs: &[(&str, &str)]| {
        std::process::Command::new(shard_bin())
            .args(["agent", "--check", "--cwd"])
            .arg(sb.work())
            .args(flags)
            .env("SHARD_HOME", sb.home())
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .envs(envs.iter().copied())
            .output()
            .unwrap()
    };
    let key = [("ANTHROPIC_API_KEY", "sk-ant-x")];
    let ok = check(&["--mode", "plan", "--model", "claude-haiku-4-5"], &key);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(ok.stdout.is_empty());
    for (flags, env) in [
        (vec!["--mode", "bogus"], &key[..]),
        (vec!["--provider", "nosuch"], &key[..]),
        (vec!["--model", "nope"], &key[..]),
        (vec!["--provider", "anthropic"], &[][..]),
    ] {
        let out = check(&flags, env);
        assert!(!out.status.success(), "{flags:?}");
        let events = events_of(&out.stdout);
        assert!(matches!(events[0], Event::Hello(_)), "{flags:?}");
        let err = pick::error(&events[1]).expect("an error after hello");
        assert_eq!(err.fatal, Some(true), "{flags:?}");
    }
    assert!(!sb.home().join("sessions").exists(), "nothing is created");
}
