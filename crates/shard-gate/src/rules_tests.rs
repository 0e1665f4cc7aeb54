//! Deny and allow rules, including the attack suite for signature grants (deny rules through
//! wrappers and aliases, fail closed).

use super::*;
use serde_json::json;

#[path = "../../../tests/support/skip.rs"]
mod skip;

fn rule(tool: &str, command: Option<&str>, path: Option<&str>) -> Rule {
    Rule::compile(&RuleConfig {
        tool: tool.into(),
        command: command.map(Into::into),
        path: path.map(Into::into),
    })
    .unwrap()
}

fn bash_denied(rules: &[Rule], line: &str) -> bool {
    denies(rules, "bash", &json!({ "command": line }), None)
}

#[test]
fn allow_needs_every_command() {
    let rules = [rule("bash", Some("cargo test*"), None)];
    let ok = |l: &str| allows(&rules, "bash", &json!({ "command": l }), None);
    assert!(ok("cargo test -q"));
    assert!(!ok("cargo test; rm -rf /"));
    assert!(!ok("cargo test $(rm x)"));
    assert!(!ok("timeout 5 cargo test"));
    assert!(!ok("cargo test $X"));
    assert!(!allows(&rules, "write", &json!({"path": "a"}), None));
}

#[test]
fn deny_catches_any_command() {
    let rules = [rule("bash", Some("git push*"), None)];
    assert!(bash_denied(&rules, "ls && git push origin"));
    assert!(!bash_denied(&rules, "git status"));
    assert!(bash_denied(&rules, "echo $(git push)"));
}

/// Signature grants that mean what they say: a push past a `git push*` deny rule, through every wrapper and alias.
#[test]
fn attack_deny_rule_through_wrappers_and_aliases() {
    let rules = [rule("bash", Some("git push*"), None)];
    for line in [
        "git push",
        "/usr/bin/git push",
        "\\git push",
        "g\"i\"t push --force",
        "git -C /tmp push",
        "git --git-dir=.git push",
        "git -c alias.x=push x",
        "git config alias.x '!git push' && git x",
        "git x",
        "git $SUB",
        "git pu*",
        "sudo git push",
        "sudo -u root git push",
        "env git push",
        "env -i PATH=/usr/bin git push",
        "env -- git push",
        "timeout 10 git push",
        "timeout -- 10 git push",
        "timeout -s KILL 10 git push",
        "nice git push",
        "nice -n 5 git push",
        "nice -- git push",
        "nohup git push &",
        "setsid git push",
        "time git push",
        "command git push",
        "builtin eval 'git push'",
        "exec git push",
        "stdbuf -o0 git push",
        "xargs git push < /dev/null",
        "echo origin | xargs git push",
        "echo push | xargs git",
        "echo x | xargs -I{} git {}",
        "find . -exec git push \\;",
        "find -- . -exec git push {} +",
        "find . -execdir git push \\;",
        "bash -c 'git push'",
        "sh -c \"git push origin\"",
        "bash -lc 'git push'",
        "bash -c 'bash -c \"git push\"'",
        "echo 'git push' | bash",
        "echo 'git push' | sh -s",
        "su -c 'git push'",
        "ssh localhost git push",
        "ssh -p 22 host 'git push'",
        "watch -n 1 git push",
        "eval git push",
        "eval \"$CMD\"",
        "$CMD",
        "${CMD} origin",
        "FOO=1 git push",
        "GIT_CONFIG_COUNT=1 git status",
        "python -c 'import os; os.system(\"git push\")'",
        "python3 -c x",
        "perl -e 'system(q(git push))'",
        "node -e 'x'",
        "echo x | python",
        "awk 'BEGIN{system(\"git push\")}'",
        "awk '{print | \"sh\"}'",
        "sed -n '1e git push' x",
        "sed 's/x/git push/e' f",
        "source ./x.sh",
        ". ./x.sh; git status",
        "alias git=rm; git status",
        "hash -p /bin/sh git; git status",
        "trap 'git push' EXIT",
        "(git push)",
        "{ git push; }",
        "if true; then git push; fi",
        "cat <<EOF | sh\ngit push\nEOF",
        "diff <(git push) x",
        "git fetch --upload-pack='git push' origin",
        "git submodule foreach git push",
        "git rebase -x 'git push' main",
        "git bisect run git push",
        "flock /tmp/l git push",
        "strace git push",
        "npx something",
        "busybox sh -c 'git push'",
        "tar -I 'git push' -xf a.tar",
        "tar xIf 'git push' a.tar",
        "rg --pre 'git push' x",
        "scp -S ./evil a b:",
        "rsync -e 'git push' a b:",
        "vim -c '!git push' x",
        "deno eval 'x'",
        "pwsh -Command x",
    ] {
        assert!(bash_denied(&rules, line), "not denied: {line}");
    }
}

/// What fails closed must not make every line denied.
#[test]
fn deny_rules_are_not_paranoid_about_unrelated_commands() {
    let rules = [rule("bash", Some("git push*"), None)];
    for line in [
        "git status",
        "ls *.rs",
        "echo $HOME",
        "cargo test 2>&1 | tail -n 5",
        "grep -r push src",
        "timeout 5 cargo test",
        "find . -name '*.rs' -exec wc -l {} +",
        "bash -c 'cargo build'",
        "awk '{print $1}' f",
        "sed -n 's/a/b/p' f",
        "sed -n 1p f",
        "git log -- x",
        "python script.py",
    ] {
        assert!(!bash_denied(&rules, line), "denied: {line}");
    }
}

#[test]
fn open_commands_match_by_prefix() {
    let rules = [rule("bash", Some("rm -rf /etc*"), None)];
    assert!(bash_denied(&rules, "rm -rf /[e]tc"));
    assert!(bash_denied(&rules, "rm -rf $DIR"));
    assert!(!bash_denied(&rules, "ls $DIR"));
}

#[test]
fn path_rules_match_resolved_paths_only() {
    let rules = [rule("write", None, Some("secrets/**"))];
    let p = |rel: &str| ResolvedPath {
        abs: std::path::PathBuf::from("/repo").join(rel),
        rel: Some(rel.to_string()),
    };
    assert!(denies(
        &rules,
        "write",
        &json!({}),
        Some(&p("secrets/a/key"))
    ));
    assert!(denies(&rules, "write", &json!({}), Some(&p("secrets"))));
    assert!(!denies(&rules, "write", &json!({}), Some(&p("src/a.rs"))));
    // A raw argument alone never matches: the path must be resolved.
    assert!(!denies(
        &rules,
        "write",
        &json!({"path": "secrets/x"}),
        None
    ));
}

#[test]
fn path_globs_expand_the_home_directory() {
    let Ok(home) = std::env::var("HOME") else {
        skip::skip("HOME is not set");
        return;
    };
    let rules = [rule("read", None, Some("~/.aws/config"))];
    let p = ResolvedPath {
        abs: std::path::PathBuf::from(format!("{home}/.aws/config")),
        rel: None,
    };
    assert!(denies(&rules, "read", &json!({}), Some(&p)));
}

#[test]
fn tool_names_match_globs_for_mcp_servers() {
    let rules = [rule("mcp__github__*", None, None)];
    assert!(denies(
        &rules,
        "mcp__github__create_issue",
        &json!({}),
        None
    ));
    assert!(!denies(
        &rules,
        "mcp__gitlab__create_issue",
        &json!({}),
        None
    ));
    assert!(!denies(&rules, "bash", &json!({"command": "ls"}), None));
    let allow = [rule("mcp__time__get_*", None, None)];
    assert!(allows(
        &allow,
        "mcp__time__get_current_time",
        &json!({}),
        None
    ));
    assert!(!allows(&allow, "mcp__time__convert_time", &json!({}), None));
    // An exact name still matches only itself.
    let exact = [rule("mcp__a__b", None, None)];
    assert!(!denies(&exact, "mcp__a__bc", &json!({}), None));
}
