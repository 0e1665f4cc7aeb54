//! The gate's second round through a real `shard agent` (docs/security.md, "Words as bash
//! reads them", "A grant covers what the person saw", "Writes to trusted files"): a
//! scripted model makes each hostile call after a grant, a deny rule or a headless allow
//! rule that the gate used to stretch over it, and the test checks what ran. The hostile
//! calls never reach a sandbox (the gate stops them first), so they hold on either
//! sandbox path.

use crate::gate::{choice, run_calls};
use crate::harness::*;
use serde_json::{Value, json};
use shard_protocol::event::{PermissionRequest, ToolResultEvent};

/// Runs `lines` as `bash` calls (ids `c0`, `c1` …), answering each permission request
/// with `answer(request)`.
fn run_lines(
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

/// Runs `lines`, answering `allow_signature` to the first request and `deny` to every
/// later one.
fn grant_first_then_deny(
    sb: &Sandbox,
    lines: &[&str],
) -> (Vec<ToolResultEvent>, Vec<PermissionRequest>) {
    let first = std::cell::Cell::new(true);
    run_lines(sb, lines, &[], |req| {
        if first.replace(false) {
            assert!(choice(req, "allow_signature").is_some(), "{req:?}");
            "allow_signature"
        } else {
            "deny"
        }
    })
}

/// `$"…"` is a word bash may translate, not a `$` and a string: it passes no signature
/// grant, no deny rule and no headless allow rule.
#[test]
fn attack_locale_quoting_is_read_as_bash_reads_it() {
    let sb = Sandbox::new();
    sb.config("[[permissions.deny]]\ntool = \"bash\"\ncommand = \"git push*\"\n");
    let (results, requests) = grant_first_then_deny(
        &sb,
        &[
            "find . -name nothing-here",
            "find . $\"-exec\" touch pwned \\;",
            "find . $\"-exec\" git push \\;",
            "find . -e$'x'\"ec\" touch pwned \\;",
        ],
    );
    assert!(!results[0].is_error, "{:?}", results[0]);
    // The two `touch` lines ask again; the `git push` line is denied without a request.
    assert_eq!(requests.len(), 3, "{requests:?}");
    assert!(
        result_text(&results[2].content).contains("deny rule"),
        "{:?}",
        results[2]
    );
    assert!(!sb.work().join("pwned").exists());

    let sb = Sandbox::new();
    sb.config("[[headless.allow]]\ntool = \"bash\"\ncommand = \"find *\"\n");
    let (results, requests) = run_lines(
        &sb,
        &["find . $\"-exec\" touch pwned \\;", "find . -name x"],
        &["--headless-policy", "allow_if_rule_matches"],
        |_| "deny",
    );
    assert!(requests.is_empty(), "{requests:?}");
    assert!(results[0].is_error, "{:?}", results[0]);
    assert!(!results[1].is_error, "{:?}", results[1]);
    assert!(!sb.work().join("pwned").exists());
}

/// A signature grant covers the level the person saw: `npm pkg get` is not `npm pkg set`,
/// `rm a` is not `rm b`, `git checkout main` is not `git checkout -- .`.
#[test]
fn attack_grants_cover_only_what_the_person_saw() {
    for (seen, widened) in [
        ("rm gone.txt", "rm keep.txt"),
        ("npm pkg get name", "npm pkg set scripts.test=touch\\ pwned"),
        ("git checkout main", "git checkout -- ."),
        ("pip install requests", "pip install requests evil"),
    ] {
        let sb = Sandbox::new();
        std::fs::write(sb.work().join("gone.txt"), "x").unwrap();
        std::fs::write(sb.work().join("keep.txt"), "x").unwrap();
        let (_, requests) = grant_first_then_deny(&sb, &[seen, widened]);
        assert_eq!(requests.len(), 2, "{widened} ran under a grant for {seen}");
        assert!(sb.work().join("keep.txt").exists());
        let scope = choice(&requests[0], "allow_signature")
            .unwrap()
            .description
            .clone()
            .unwrap_or_default();
        // The choice names the level the grant covers.
        let level: Vec<&str> = seen.split(' ').take(3).collect();
        assert!(scope.contains(&level.join(" ")), "{seen}: {scope}");
    }
}

/// A write to `.git`, `.shard`, `.mcp.json` or `.gitmodules` asks every time, by any
/// spelling, whatever grant or headless rule exists, and offers no "always" choice.
#[test]
fn attack_trusted_files_always_ask() {
    let sb = Sandbox::new();
    let work = sb.work();
    std::fs::create_dir_all(work.join(".git/hooks")).unwrap();
    std::fs::write(work.join("a.txt"), "x").unwrap();
    std::fs::write(work.join("evil.sh"), "#!/bin/sh\ntouch pwned\n").unwrap();
    let lines = [
        "cp a.txt b.txt",
        "cp evil.sh .git/hooks/pre-commit",
        "cp evil.sh ./.git//hooks/../hooks/post-checkout",
        "cp evil.sh .mcp.json",
    ];
    let (results, requests) = grant_first_then_deny(&sb, &lines);
    assert!(!results[0].is_error, "{:?}", results[0]);
    assert_eq!(
        requests.len(),
        lines.len(),
        "a trusted write ran under the cp grant"
    );
    for r in &requests[1..] {
        assert!(choice(r, "allow_always").is_none(), "{r:?}");
        assert!(choice(r, "allow_signature").is_none(), "{r:?}");
        assert!(r.prompt.contains("trusts"), "{r:?}");
    }
    assert!(!work.join(".git/hooks/pre-commit").exists());
    assert!(!work.join(".git/hooks/post-checkout").exists());
    assert!(!work.join(".mcp.json").exists());

    // Headless, with a rule that allows every `bash` line.
    let sb = Sandbox::new();
    let work = sb.work();
    std::fs::create_dir_all(work.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(work.join(".shard/agents")).unwrap();
    sb.config("[[headless.allow]]\ntool = \"bash\"\ncommand = \"*\"\n");
    let (results, requests) = run_lines(
        &sb,
        &[
            "echo 'touch pwned' > .git/hooks/pre-commit",
            "echo x | tee .shard/agents/wide.md",
            "git config core.fsmonitor 'touch pwned'",
            "echo ok > out.txt",
        ],
        &["--headless-policy", "allow_if_rule_matches"],
        |_| "allow",
    );
    assert!(requests.is_empty(), "{requests:?}");
    for r in &results[..3] {
        assert!(r.is_error, "{r:?}");
        assert!(result_text(&r.content).contains("trusts"), "{r:?}");
    }
    assert!(!results[3].is_error, "{:?}", results[3]);
    assert!(work.join("out.txt").exists());
    assert!(!work.join(".git/hooks/pre-commit").exists());
    assert!(!work.join(".shard/agents/wide.md").exists());
}
