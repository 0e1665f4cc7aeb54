//! The gate end to end for the classes of docs/security.md "Words as bash reads them",
//! "A grant covers what the person saw" and "Writes to trusted files": every line here is
//! let through by a grant, a deny rule or a headless allow rule on the parser and
//! signatures before them.

use serde_json::{Value, json};
use shard_protocol::command::HeadlessPolicy;
use shard_protocol::types::PermissionDecision;

use crate::config::PermissionsConfig;
use crate::gate::tests::rule;
use crate::gate::{AnyMode, Call, Decision, Gate, Refused};
use crate::grants::{self, Grant};

struct Fixture {
    _dir: tempfile::TempDir,
    cwd: std::path::PathBuf,
    gate: Gate,
}

/// A repository with `.git/hooks`, `.shard/agents`, a link `h` to `.git/hooks`; deny
/// `git push*` when `deny`; headless rules that allow every `bash` line and every write.
fn fixture_with(deny: bool) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = crate::paths::real(dir.path());
    let home = root.join("home");
    let cwd = home.join("project");
    for d in [".git/hooks", ".shard/agents", "src", "sub", "build"] {
        std::fs::create_dir_all(cwd.join(d)).unwrap();
    }
    std::fs::write(cwd.join(".git/config"), "").unwrap();
    std::os::unix::fs::symlink(cwd.join(".git/hooks"), cwd.join("h")).unwrap();
    let perms = PermissionsConfig {
        deny: if deny {
            vec![rule("bash", Some("git push*"), None)]
        } else {
            vec![]
        },
        ..PermissionsConfig::default()
    };
    let headless = [
        rule("bash", Some("*"), None),
        rule("write", None, Some("**")),
    ];
    let gate = Gate::new(&perms, &headless, &cwd, &home.join(".shard"), Some(&home)).unwrap();
    Fixture {
        _dir: dir,
        cwd,
        gate,
    }
}

/// Without deny rules: what is not allowed is asked.
fn fixture() -> Fixture {
    fixture_with(false)
}

fn decide(
    f: &Fixture,
    tool: &str,
    args: &Value,
    grants: &[Grant],
    h: Option<HeadlessPolicy>,
) -> Decision {
    f.gate.decide(
        Call {
            tool,
            read_only: false,
            args,
        },
        &AnyMode,
        grants,
        h,
    )
}

fn bash(line: &str) -> Value {
    json!({ "command": line })
}

/// The signature grant a person made for `seen`.
fn granted(seen: &str) -> Vec<Grant> {
    vec![grants::signature_grant(seen).unwrap()]
}

fn asks(d: &Decision) -> bool {
    matches!(d, Decision::Ask(_))
}

#[test]
fn attack_locale_strings_pass_no_grant_deny_or_headless_rule() {
    let f = fixture();
    let find_rule = [rule("bash", Some("find *"), None)];
    let g = Gate::new(
        &PermissionsConfig {
            deny: vec![rule("bash", Some("git push*"), None)],
            ..PermissionsConfig::default()
        },
        &find_rule,
        &f.cwd,
        &f.cwd.join("no-shard-home"),
        None,
    )
    .unwrap();
    for (seen, line) in [
        ("find . -name x", "find . $\"-exec\" touch pwned \\;"),
        ("rg -n x", "rg $\"--pre=sh\" -n x"),
        (
            "tar -cf a.tar src",
            "tar $\"--checkpoint-action=exec=sh x\" -cf a.tar src",
        ),
        ("find .", "find . -e$'x'\"ec\" touch pwned \\;"),
        ("echo a", "echo \"$'\"; touch pwned; echo \"'\""),
    ] {
        let d = decide(&f, "bash", &bash(line), &granted(seen), None);
        assert!(asks(&d), "{line} under a grant for {seen}: {d:?}");
        let call = Call {
            tool: "bash",
            read_only: false,
            args: &bash(line),
        };
        let d = g.decide(
            call,
            &AnyMode,
            &[],
            Some(HeadlessPolicy::AllowIfRuleMatches),
        );
        assert!(
            !matches!(d, Decision::Allow(_)),
            "{line} under `find *`: {d:?}"
        );
    }
    let f = fixture_with(true);
    for line in [
        "find . $\"-exec\" git push \\;",
        "find . $'-exec' git push \\;",
        "FOO=\"x\" git push",
        "echo \"$'\"; git push; echo \"'\"",
        "git pu\\\nsh",
        "rustup run stable git push",
        "npm exec -- git push",
    ] {
        let d = decide(&f, "bash", &bash(line), &[], None);
        assert!(
            matches!(
                d,
                Decision::Refuse {
                    why: Refused::DenyRule,
                    ..
                }
            ),
            "{line}: {d:?}"
        );
    }
}

#[test]
fn attack_grants_cover_only_the_level_the_person_saw() {
    let f = fixture();
    for (seen, other) in [
        ("npm pkg get name", "npm pkg set scripts.test=touch\\ pwned"),
        ("pnpm pkg get name", "pnpm pkg delete scripts.test"),
        (
            "yarn config get registry",
            "yarn config set registry http://evil",
        ),
        ("npm config list", "npm config set script-shell=/tmp/x"),
        (
            "npm pkg set version=1.0.0",
            "npm pkg set scripts.test=touch\\ pwned",
        ),
        ("pip install requests", "pip install requests evil"),
        ("pip install -r requirements.txt", "pip install -r evil.txt"),
        ("uv pip install requests", "uv pip install evil"),
        ("npm install left-pad", "npm install evil"),
        ("cargo install ripgrep", "cargo install evil"),
        (
            "rustup run stable cargo test",
            "rustup run stable bash -c id",
        ),
        ("git checkout main", "git checkout ."),
        ("git checkout main", "git checkout -- ."),
        ("git restore a.txt", "git restore ."),
        ("git reset", "git reset --hard"),
        ("git reset --hard HEAD", "git reset --hard HEAD~3"),
        ("git clean -n", "git clean -fdx"),
        ("git clean -fdx build", "git clean -fdx ."),
        ("git stash drop stash@{1}", "git stash drop stash@{0}"),
        ("git branch -D old", "git branch -D main"),
        ("rm a.txt", "rm -- src"),
        ("rm a.txt", "rm b.txt"),
    ] {
        let d = decide(&f, "bash", &bash(other), &granted(seen), None);
        assert!(asks(&d), "{other} under a grant for {seen}: {d:?}");
        let d = decide(&f, "bash", &bash(seen), &granted(seen), None);
        assert!(
            matches!(d, Decision::Allow(_)),
            "{seen} under its own grant: {d:?}"
        );
    }
    let sig = crate::signature::signatures("git checkout -- .").unwrap();
    assert!(
        sig[0].describe().contains("exactly this command"),
        "{}",
        sig[0].describe()
    );
    let sig = crate::signature::signatures("npm pkg get name").unwrap();
    assert_eq!(sig[0].subcommand, ["pkg", "get"]);
}

#[test]
fn attack_trusted_files_always_ask() {
    let f = fixture();
    let abs = format!("{}/.git/config", f.cwd.display());
    let writes = [
        "echo x > .git/config".to_string(),
        "echo x >> .git/hooks/pre-commit".into(),
        "echo x >| .git/config".into(),
        "ls &> .git/config".into(),
        "ls 2> .git/config".into(),
        "echo x > ./.git//config".into(),
        "echo x > src/../.git/config".into(),
        format!("echo x > {abs}"),
        "echo x > .GIT/config".into(),
        "echo x > .git./config".into(),
        "echo x > h/pre-commit".into(),
        "echo x > \"$F\"".into(),
        "tee .git/hooks/pre-commit".into(),
        "tee -a .git/config".into(),
        "cp x .git/hooks/pre-commit".into(),
        "cp -t .git/hooks x".into(),
        "mv x .git/config".into(),
        "mv .git old-git".into(),
        "ln -s /tmp/x .git/hooks/pre-commit".into(),
        "ln -s .git/hooks hooks".into(),
        "dd if=x of=.git/config".into(),
        "install -m755 x .git/hooks/pre-commit".into(),
        "sort -o .git/config x".into(),
        "sort -o.git/config x".into(),
        "sort --output=.git/config x".into(),
        "sed -i s/a/b/ .git/config".into(),
        "sed -n 'w .git/hooks/pre-commit' x".into(),
        "rsync x .git/hooks/".into(),
        "truncate -s0 .git/config".into(),
        "echo '{}' > .mcp.json".into(),
        "cp x .shard/agents/a.md".into(),
        "echo x > .gitmodules".into(),
        "echo 'gitdir: /tmp/x' > sub/.git".into(),
        "git config core.fsmonitor 'touch pwned'".into(),
        "git config --add core.hooksPath h".into(),
        "git config set core.pager x".into(),
        "bash -c 'echo x > .git/config'".into(),
        "sudo tee .git/config".into(),
        "find . -exec cp x .git/hooks/pre-commit \\;".into(),
        "cd .git && echo x > config".into(),
        "cp -r /tmp/evil/. .".into(),
        "tar xf evil.tar".into(),
        "unzip evil.zip".into(),
        "python3 -c \"open('.git/config','w')\"".into(),
        "echo x > $'.git/config'".into(),
        "> .git/config".into(),
        "(echo x) > .git/hooks/pre-commit".into(),
        "echo $(cat x) > .git/config".into(),
    ];
    for line in &writes {
        let args = bash(line);
        let exact = Grant::Exact {
            tool: "bash".into(),
            args: grants::canonical(&args),
        };
        let mut all = vec![exact];
        all.extend(grants::signature_grant(line));
        let d = decide(&f, "bash", &args, &all, None);
        let Decision::Ask(ask) = &d else {
            panic!("{line} was not asked: {d:?}");
        };
        assert!(ask.signature.is_none(), "{line}");
        let choices = ask.request.choices.as_ref().unwrap();
        assert!(
            choices.iter().all(|c| c.id == "allow" || c.id == "deny"),
            "{line}: {choices:?}"
        );
        assert!(
            !ask.request
                .options
                .contains(&PermissionDecision::AllowAlways)
        );
        assert!(
            ask.request.prompt.contains("trusts"),
            "{}",
            ask.request.prompt
        );
        let d = decide(
            &f,
            "bash",
            &args,
            &all,
            Some(HeadlessPolicy::AllowIfRuleMatches),
        );
        assert!(
            matches!(
                d,
                Decision::Refuse {
                    why: Refused::Headless,
                    ..
                }
            ),
            "{line} headless: {d:?}"
        );
        assert!(!f.gate.headless_allows("bash", &args), "{line}");
        assert!(
            !crate::gate::headless_allows_at(
                &crate::rules::compile_all(&[rule("bash", Some("*"), None)]).unwrap(),
                "bash",
                &args,
                &f.cwd
            ),
            "{line}"
        );
    }
    for path in [
        ".git/hooks/pre-commit",
        "./.git/config",
        ".mcp.json",
        "h/x",
        ".shard/agents/a.md",
    ] {
        let args = json!({"path": path, "content": "x"});
        let exact = Grant::Exact {
            tool: "write".into(),
            args: grants::canonical(
                &json!({"path": format!("{}/{}", f.cwd.display(), path.trim_start_matches("./")), "content": "x"}),
            ),
        };
        let d = decide(
            &f,
            "write",
            &args,
            &[exact],
            Some(HeadlessPolicy::AllowIfRuleMatches),
        );
        assert!(!matches!(d, Decision::Allow(_)), "write {path}: {d:?}");
    }
}

#[test]
fn ordinary_writes_and_reads_of_trusted_files_are_not_held() {
    let f = fixture();
    for line in [
        "echo x > out.txt",
        "echo x > .gitignore",
        "cat .git/config",
        "grep -r x .git",
        "git status",
        "git commit -m x",
        "git config user.name",
        "git config --get core.pager",
        "cp -r src build",
        "tar xf a.tar -C build",
        "echo x > .github/workflows/ci.yml",
        "find . -path ./.git -prune -o -name '*.rs' -print",
        "ls 2>&1 >/dev/null",
    ] {
        let d = decide(
            &f,
            "bash",
            &bash(line),
            &[],
            Some(HeadlessPolicy::AllowIfRuleMatches),
        );
        assert!(matches!(d, Decision::Allow(_)), "{line}: {d:?}");
    }
}

/// A workspace inside a `.shard` folder (the daemon's workspaces live in SHARD_HOME): its
/// own files are not trusted ones, its `.git` still is.
#[test]
fn a_workspace_under_a_trusted_name_is_not_all_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let root = crate::paths::real(dir.path());
    let cwd = root.join(".shard/workspaces/w1");
    std::fs::create_dir_all(cwd.join(".git")).unwrap();
    let ws = crate::paths::Workspace::new(&cwd, &[], &root.join("elsewhere"), None);
    assert_eq!(crate::trusted::bash_touches(&ws, "echo x > out.txt"), None);
    assert_eq!(crate::trusted::bash_touches(&ws, "cp a b"), None);
    let abs = format!("cp a {}/b && echo x > {}/c", cwd.display(), cwd.display());
    assert_eq!(crate::trusted::bash_touches(&ws, &abs), None);
    let abs = format!("sed -i s/a/b/ {}/.git/config", cwd.display());
    assert!(crate::trusted::bash_touches(&ws, &abs).is_some());
    assert!(crate::trusted::bash_touches(&ws, "echo x > .git/config").is_some());
    assert!(crate::trusted::bash_touches(&ws, "cp a ../../x/.git").is_some());
}
