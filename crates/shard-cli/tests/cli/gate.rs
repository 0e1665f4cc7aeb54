//! The attack suite of the gate and sandbox hardening through a real `shard agent`: a scripted
//! model makes each hostile call and the test checks what the gate let through. Every
//! case here is listed in docs/security.md.

use crate::harness::*;
use serde_json::{Value, json};
use shard_protocol::event::{PermissionRequest, ToolResultEvent};
use shard_protocol::types::PermissionChoice;

/// Runs one prompt whose model makes `calls` (id, tool, args) in turn, answering every
/// permission request with `answer(request)` (a choice id). Returns the tool results by
/// id and the permission requests seen.
pub(crate) fn run_calls(
    sb: &Sandbox,
    calls: &[(&str, &str, Value)],
    extra: &[&str],
    answer: impl Fn(&PermissionRequest) -> &'static str,
) -> (Vec<ToolResultEvent>, Vec<PermissionRequest>) {
    let mut turns: Vec<Value> = calls
        .iter()
        .map(|(id, tool, args)| tool_turn(id, tool, args.clone()))
        .collect();
    turns.push(text_turn("done"));
    let script = sb.script("gate.json", json!({ "turns": turns }));
    let mut a = Agent::spawn(sb, Some(&script), extra);
    a.until_type("sync");
    let (results, requests) = a.answer_turn("go", answer);
    assert!(a.finish().success());
    (results, requests)
}

/// The choice `id` of a permission request, when offered.
pub(crate) fn choice<'a>(req: &'a PermissionRequest, id: &str) -> Option<&'a PermissionChoice> {
    req.choices.as_ref()?.iter().find(|c| c.id == id)
}

/// A `git push*` deny rule holds through wrappers, aliases and unresolvable lines;
/// no request is even shown.
#[test]
fn attack_deny_rule_through_wrappers() {
    let sb = Sandbox::new();
    sb.config("[[permissions.deny]]\ntool = \"bash\"\ncommand = \"git push*\"\n");
    let lines = [
        "sudo git push",
        "env -- git push",
        "timeout -- 5 git push",
        "nice -- git push",
        "echo origin | xargs git push",
        "find . -exec git push \\;",
        "bash -c 'git push'",
        "git -c alias.x=push x",
        "git config alias.x '!git push' && git x",
        "eval \"$CMD\"",
        "awk 'BEGIN{system(\"git push\")}'",
    ];
    let calls: Vec<(String, &str, Value)> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| (format!("c{i}"), "bash", json!({ "command": l })))
        .collect();
    let calls: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(i, t, a)| (i.as_str(), *t, a.clone()))
        .collect();
    let (results, requests) = run_calls(&sb, &calls, &[], |_| "allow");
    assert!(
        requests.is_empty(),
        "a denied line was offered: {requests:?}"
    );
    assert_eq!(results.len(), lines.len());
    for (r, line) in results.iter().zip(lines) {
        assert!(r.is_error, "{line}: {r:?}");
        assert!(
            result_text(&r.content).contains("deny rule"),
            "{line}: {r:?}"
        );
    }
}

/// A signature grant for `git status` does not cover `git checkout -- file`, nor
/// `find .` a `find -- . -exec`; code runners get no signature choice.
#[test]
fn attack_signature_grants_cannot_be_widened() {
    let sb = Sandbox::new();
    std::fs::write(sb.work().join("f"), "x").unwrap();
    let calls = [
        ("s1", "bash", json!({"command": "find ."})),
        (
            "s2",
            "bash",
            json!({"command": "find -- . -exec touch pwned \\;"}),
        ),
        ("s3", "bash", json!({"command": "timeout 5 touch pwned"})),
    ];
    let (results, requests) = run_calls(&sb, &calls, &[], |req| {
        if choice(req, "allow_signature").is_some() {
            "allow_signature"
        } else {
            "deny"
        }
    });
    assert_eq!(requests.len(), 3, "every widened call asks again");
    let scope = choice(&requests[0], "allow_signature")
        .unwrap()
        .description
        .clone()
        .unwrap();
    assert!(scope.contains("find (any operands, no flags)"), "{scope}");
    for r in &requests[1..] {
        assert!(
            choice(r, "allow_signature").is_none(),
            "a code runner was offered a signature: {r:?}"
        );
    }
    assert!(!results[0].is_error);
    assert!(!sb.work().join("pwned").exists());
}

/// Every spelling of a denied folder is refused to read, and grep/find/ls never print
/// what is in it.
#[test]
fn attack_denied_paths_by_any_spelling() {
    let sb = Sandbox::new();
    let work = std::fs::canonicalize(sb.work()).unwrap();
    std::fs::create_dir_all(work.join("secrets")).unwrap();
    std::fs::create_dir_all(work.join("src")).unwrap();
    std::fs::write(work.join("secrets/key.txt"), "TOPSECRET\n").unwrap();
    std::fs::write(work.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::os::unix::fs::symlink(work.join("secrets"), work.join("src/link")).unwrap();
    sb.config("[[permissions.deny]]\ntool = \"read\"\npath = \"secrets/**\"\n");
    let abs = work.join("secrets/key.txt").display().to_string();
    let calls = [
        ("r1", "read", json!({"path": "a/../secrets/key.txt"})),
        ("r2", "read", json!({"path": "./secrets/key.txt"})),
        ("r3", "read", json!({"path": abs})),
        ("r4", "read", json!({"path": "src/link/key.txt"})),
        ("g1", "grep", json!({"pattern": "TOP.ECRET"})),
        (
            "g2",
            "grep",
            json!({"pattern": "TOP.ECRET", "path": "src/link"}),
        ),
        ("f1", "find", json!({"pattern": "*.txt"})),
        ("l1", "ls", json!({"path": "secrets"})),
        ("l2", "ls", json!({})),
        ("ok", "read", json!({"path": "src/main.rs"})),
    ];
    let (results, requests) = run_calls(&sb, &calls, &[], |_| "deny");
    assert!(requests.is_empty(), "{requests:?}");
    for r in &results {
        let text = result_text(&r.content);
        assert!(!text.contains("TOPSECRET"), "leaked: {r:?}");
        let id = r.tool_call_id.as_str();
        if id.starts_with('r') {
            assert!(r.is_error, "{r:?}");
        } else if id != "ok" {
            assert!(!text.contains("key.txt"), "listed: {r:?}");
        }
    }
    let l2 = results.iter().find(|r| r.tool_call_id == "l2").unwrap();
    assert!(!result_text(&l2.content).contains("secrets"), "{l2:?}");
    let ok = results.iter().find(|r| r.tool_call_id == "ok").unwrap();
    assert!(!ok.is_error, "{ok:?}");
}

/// Writing through a symlink asks with the real target; the prompt shows it.
#[test]
fn attack_write_through_a_symlink_asks_with_the_target() {
    let sb = Sandbox::new();
    let elsewhere = sb.dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, sb.work().join("out")).unwrap();
    let calls = [
        ("w1", "write", json!({"path": "out/x.txt", "content": "x"})),
        (
            "e1",
            "bash",
            json!({"command": "echo one\necho two; touch pwned"}),
        ),
    ];
    let (results, requests) = run_calls(&sb, &calls, &[], |_| "deny");
    assert_eq!(requests.len(), 2);
    let real = std::fs::canonicalize(&elsewhere).unwrap().join("x.txt");
    let prompt = &requests[0].prompt;
    assert!(prompt.contains(&real.display().to_string()), "{prompt}");
    let prompt = &requests[1].prompt;
    assert!(prompt.contains("echo two; touch pwned"), "{prompt}");
    assert!(results.iter().all(|r| r.is_error));
    assert!(!real.exists());
}

/// Reads outside the workspace ask; SHARD_HOME and credential files are refused.
#[test]
fn attack_reads_outside_the_workspace() {
    let sb = Sandbox::new();
    sb.config("# nothing\n");
    std::fs::write(sb.dir.path().join("outside.txt"), "OUTSIDE\n").unwrap();
    std::fs::write(sb.dir.path().join(".env"), "KEY=1\n").unwrap();
    let config = sb.home().join("config.toml").display().to_string();
    let calls = [
        ("o1", "read", json!({"path": "../outside.txt"})),
        ("s1", "read", json!({"path": config})),
        (
            "s2",
            "grep",
            json!({"pattern": "x", "path": sb.home().display().to_string()}),
        ),
        ("s3", "read", json!({"path": "../.env"})),
    ];
    let (results, requests) = run_calls(&sb, &calls, &[], |_| "deny");
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert!(requests[0].prompt.contains("outside the workspace"));
    for r in &results {
        assert!(r.is_error, "{r:?}");
        assert!(!result_text(&r.content).contains("OUTSIDE"));
    }
    assert!(
        result_text(&results[1].content).contains("SHARD_HOME"),
        "{:?}",
        results[1]
    );
    assert!(
        result_text(&results[3].content).contains("environment file"),
        "{:?}",
        results[3]
    );
}

/// Honest stop and refusal reports: the headless refusal says no person saw the request.
#[test]
fn headless_refusals_do_not_blame_a_person() {
    let sb = Sandbox::new();
    let calls = [("b1", "bash", json!({"command": "touch x"}))];
    let (results, _) = run_calls(&sb, &calls, &["--headless-policy", "deny"], |_| "deny");
    let text = result_text(&results[0].content);
    assert!(!text.contains("The user denied"), "{text}");
    assert!(text.contains("No person saw"), "{text}");
}

/// §2: `edit` through a symlink out of the workspace asks with the real target.
#[test]
fn attack_edit_through_a_symlink_asks_with_the_target() {
    let sb = Sandbox::new();
    let elsewhere = sb.dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("x.txt"), "old\n").unwrap();
    std::os::unix::fs::symlink(elsewhere.join("x.txt"), sb.work().join("x.txt")).unwrap();
    let calls = [(
        "e1",
        "edit",
        json!({"path": "x.txt", "old_string": "old", "new_string": "new"}),
    )];
    let (results, requests) = run_calls(&sb, &calls, &[], |_| "deny");
    let real = std::fs::canonicalize(elsewhere.join("x.txt")).unwrap();
    assert_eq!(requests.len(), 1);
    let prompt = &requests[0].prompt;
    assert!(prompt.contains(&real.display().to_string()), "{prompt}");
    assert!(results[0].is_error);
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "old\n");
}

/// A version 1 signature grant already on disk is never matched; the person is asked.
#[test]
fn v1_signature_grants_on_disk_are_ignored() {
    let sb = Sandbox::new();
    let calls = [("s1", "bash", json!({"command": "ls -a"}))];
    let (_, requests) = run_calls(&sb, &calls, &[], |_| "allow_signature");
    assert_eq!(requests.len(), 1);
    // The grant now on disk covers the call …
    let (_, requests) = run_calls(&sb, &calls, &[], |_| "deny");
    assert!(requests.is_empty(), "a v2 grant must cover its own line");
    // … until it is rewritten as version 1.
    let dir = sb.home().join("grants");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    let mut v: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    for g in v["grants"].as_array_mut().unwrap() {
        if g["kind"] == "bash_signature" {
            g["version"] = json!(1);
        }
    }
    std::fs::write(&file, serde_json::to_vec(&v).unwrap()).unwrap();
    let (_, requests) = run_calls(&sb, &calls, &[], |_| "deny");
    assert_eq!(requests.len(), 1, "a v1 grant was honoured");
}

/// Runs `lines` as `bash` calls (ids `c0`, `c1` …), answering each request with `answer`.
fn run_bash_lines(
    sb: &Sandbox,
    lines: &[&str],
    extra: &[&str],
    answer: impl Fn(&PermissionRequest) -> &'static str,
) -> (Vec<ToolResultEvent>, Vec<PermissionRequest>) {
    let ids: Vec<String> = (0..lines.len()).map(|i| format!("c{i}")).collect();
    let calls: Vec<(&str, &str, Value)> = ids
        .iter()
        .zip(lines)
        .map(|(id, l)| (id.as_str(), "bash", json!({ "command": l })))
        .collect();
    run_calls(sb, &calls, extra, answer)
}

/// An option spelled as the program reads it but an old deny-list did not — abbreviated
/// (`--upload-p=`, `--e=`, `--ev=`), in a cluster (`-nO…`), ambiguous (`--rec=`) — passes no
/// headless allow rule, and a deny rule on what it runs denies it without a request.
#[test]
fn attack_option_spellings_pass_no_allow_rule_and_deny_rules_deny() {
    let attacks = [
        "git fetch --upload-p='touch pwned' .",
        "git grep -nO'touch pwned' x",
        "sed --e='1e touch pwned' f",
        "make --ev='$(shell touch pwned)' -f /dev/null",
        "tar --to-com='touch pwned' -xf a.tar",
    ];
    let sb = Sandbox::new();
    std::fs::write(sb.work().join("f"), "x\n").unwrap();
    let mut config = String::new();
    for program in ["git", "sed", "make", "tar"] {
        config.push_str(&format!(
            "[[headless.allow]]\ntool = \"bash\"\ncommand = \"{program} *\"\n"
        ));
    }
    sb.config(&config);
    let mut lines = attacks.to_vec();
    lines.push("sed -n 1p f");
    let (results, requests) = run_bash_lines(
        &sb,
        &lines,
        &["--headless-policy", "allow_if_rule_matches"],
        |_| "allow",
    );
    assert!(requests.is_empty(), "{requests:?}");
    for (r, line) in results.iter().zip(&attacks) {
        assert!(r.is_error, "{line}: {r:?}");
        assert!(
            result_text(&r.content).contains("headless.allow"),
            "{line}: {r:?}"
        );
    }
    assert!(
        !results[attacks.len()].is_error,
        "{:?}",
        results[attacks.len()]
    );
    assert!(!sb.work().join("pwned").exists());

    let sb = Sandbox::new();
    sb.config("[[permissions.deny]]\ntool = \"bash\"\ncommand = \"git push*\"\n");
    let lines: Vec<String> = attacks
        .iter()
        .map(|a| a.replace("touch pwned", "git push"))
        .chain([
            "git push --rec=x origin".to_string(),
            "git --exe=/tmp push".to_string(),
        ])
        .collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (results, requests) = run_bash_lines(&sb, &lines, &[], |_| "allow");
    assert!(
        requests.is_empty(),
        "a denied line was offered: {requests:?}"
    );
    for (r, line) in results.iter().zip(&lines) {
        assert!(
            r.is_error && result_text(&r.content).contains("deny rule"),
            "{line}: {r:?}"
        );
    }
}

/// A signature grant for a plain push does not cover a forced push or a deletion, and
/// those are offered only as the whole command; a grant for `cp a b` does not cover
/// `cp a c`.
#[test]
fn attack_push_and_copy_grants_cover_only_what_the_person_saw() {
    let sb = Sandbox::new();
    std::fs::write(sb.work().join("a"), "x").unwrap();
    let first = std::cell::Cell::new(true);
    let lines = [
        "git push nowhere main",
        "git push nowhere +main",
        "git push nowhere :main",
        "git push -uf nowhere main",
        "git push --force-w nowhere main",
    ];
    let (_, requests) = run_bash_lines(&sb, &lines, &[], |_req| {
        if first.replace(false) {
            "allow_signature"
        } else {
            "deny"
        }
    });
    assert_eq!(
        requests.len(),
        lines.len(),
        "a rewrite ran under a push grant"
    );
    for r in &requests[1..] {
        let scope = choice(r, "allow_signature")
            .and_then(|c| c.description.clone())
            .unwrap_or_default();
        assert!(scope.contains("exactly this command"), "{r:?}");
    }

    let sb = Sandbox::new();
    std::fs::write(sb.work().join("a"), "x").unwrap();
    let first = std::cell::Cell::new(true);
    let (results, requests) = run_bash_lines(&sb, &["cp a b", "cp a c"], &[], |_| {
        if first.replace(false) {
            "allow_signature"
        } else {
            "deny"
        }
    });
    assert!(!results[0].is_error, "{:?}", results[0]);
    assert_eq!(requests.len(), 2, "cp a c ran under a grant for cp a b");
    assert!(!sb.work().join("c").exists());
}
