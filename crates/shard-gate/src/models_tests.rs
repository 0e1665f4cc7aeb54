//! Attack tests of the gate's program models (docs/security.md, "Round three: the gate's
//! program models"): an option spelled so that an old deny-list missed it — in a cluster,
//! with `=`, as a separate word, abbreviated, after another operand, behind `env`/`sudo` —
//! is never taken as harmless. For each line: (a) no signature is offered, (b) an
//! existing grant and a headless allow rule do not cover it, (c) a deny rule on the
//! program and subcommand denies it (never asks), and so does one on what its payload runs.

use super::*;
use crate::config::RuleConfig;
use crate::grants::{self, Grant};
use crate::signature;
use serde_json::json;

fn rule(tool: &str, command: &str) -> RuleConfig {
    RuleConfig {
        tool: tool.into(),
        command: Some(command.into()),
        path: None,
    }
}

/// A gate in a fresh directory with these deny and headless allow rules.
fn gate(deny: &[&str], allow: &[&str]) -> (tempfile::TempDir, Gate) {
    let dir = tempfile::tempdir().unwrap();
    let root = crate::paths::real(dir.path());
    let cwd = root.join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    let perms = PermissionsConfig {
        deny: deny.iter().map(|c| rule("bash", c)).collect(),
        ..PermissionsConfig::default()
    };
    let allow: Vec<RuleConfig> = allow.iter().map(|c| rule("bash", c)).collect();
    let gate = Gate::new(&perms, &allow, &cwd, &root.join(".shard"), Some(&root)).unwrap();
    (dir, gate)
}

fn decide(gate: &Gate, line: &str, grants: &[Grant], headless: Option<HeadlessPolicy>) -> Decision {
    gate.decide(
        Call {
            tool: "bash",
            read_only: false,
            args: &json!({ "command": line }),
        },
        &AnyMode,
        grants,
        headless,
    )
}

fn denied_by_rule(d: &Decision) -> bool {
    matches!(
        d,
        Decision::Refuse {
            why: Refused::DenyRule,
            ..
        }
    )
}

/// (grant a person made, its program and subcommand, attack lines). Every payload runs
/// `git push`, so a `git push*` deny rule must catch each line too.
const ATTACKS: &[(&str, &str, &[&str])] = &[
    (
        "git fetch origin",
        "git fetch",
        &[
            "git fetch --upload-p='git push' origin",
            "git fetch --upload-pa 'git push' origin",
            "git fetch origin --upl='git push'",
            "git fetch --upload-pack='git push' origin",
            "env git fetch --upload-p='git push' origin",
            "sudo git fetch --upl 'git push' origin",
            "git -C . fetch --upload-p='git push' origin",
            // Not understood: an option git 2.47 does not have, an ambiguous prefix.
            "git fetch --no-such-option origin",
            "git fetch --re=x origin",
        ],
    ),
    (
        "git pull origin main",
        "git pull",
        &["git pull --upload-p='git push' origin main"],
    ),
    (
        "git push origin main",
        "git push",
        &[
            "git push --receive-p='git push' origin main",
            "git push --exe='git push' origin main",
            "git push --rec='git push' origin main",
            "git push origin main --receive-pack 'git push'",
        ],
    ),
    (
        "git clone url dir",
        "git clone",
        &[
            "git clone --upload-p='git push' url dir",
            "git clone -u'git push' url dir",
            "git clone -qu 'git push' url dir",
            "git clone --conf=core.sshCommand='git push' url dir",
            "git clone -c core.fsmonitor='git push' url dir",
            "git clone --templ=/tmp/hooks url dir",
        ],
    ),
    (
        "git fetch origin",
        "git ls-remote",
        &["git ls-remote --upload-p='git push' origin"],
    ),
    (
        "git grep -n foo",
        "git grep",
        &[
            "git grep --open='git push' foo",
            "git grep --open-files='git push' foo",
            "git grep -nO'git push' foo",
            "git grep -O 'git push' foo",
        ],
    ),
    (
        "git rebase main",
        "git rebase",
        &[
            "git rebase --exe='git push' main",
            "git rebase -ix 'git push' main",
            "git rebase main --exec 'git push'",
        ],
    ),
    (
        "git status",
        "git",
        &[
            "git --exe=/tmp/evil push",
            "git --exec-p=/tmp/evil status",
            "git --conf=x status",
        ],
    ),
    (
        "sed -n 1p f",
        "sed",
        &[
            "sed -ne '1e git push' f",
            "sed -n -e '1e git push' f",
            "sed --e='1e git push' f",
            "sed --expr '1e git push' f",
            "sed f --expression='1e git push'",
            "sed -nl5 -e '1e git push' f",
            "sed -l 5 '1e git push' f",
            "sed -nf script.sed f",
            "sed --fi=script.sed f",
            "sed -s --file script.sed f",
            "timeout 5 sed --e='1e git push' f",
            "sed --bogus '1p' f",
            // After `--` the first operand is the script.
            "sed -n -- '1e git push' f",
        ],
    ),
    (
        "make test",
        "make",
        &[
            "make --eval='$(shell git push)' test",
            "make --ev='$(shell git push)' test",
            "make --ev '$(shell git push)' test",
            "make -E '$(shell git push)' test",
            "make -sE'$(shell git push)' test",
            "make test --eval '$(shell git push)'",
            "make test SHELL='git push'",
            "sudo make --ev='$(shell git push)' test",
            "make --no-such-option test",
            // After `--` a word with `=` still sets a variable.
            "make -- test 'SHELL=git push'",
        ],
    ),
    (
        "tar -xf a.tar",
        "tar",
        &[
            "tar --to-com='git push' -xf a.tar",
            "tar -xf a.tar --use-comp='git push'",
            "tar -xIf 'git push' a.tar",
            "tar xIf 'git push' a.tar",
            "tar --checkpoint-act=exec='git push' -xf a.tar",
            "tar -x --info-scr='git push' -f a.tar",
        ],
    ),
    (
        "sort f",
        "sort",
        &["sort --compress-p='git push' f", "sort --comp 'git push' f"],
    ),
];

#[test]
fn attack_option_spellings_pass_no_grant_or_allow_rule_and_deny_rules_deny() {
    for (seen, program, attacks) in ATTACKS {
        let grant = grants::signature_grant(seen).unwrap_or_else(|| panic!("no signature: {seen}"));
        let grants = std::slice::from_ref(&grant);
        let (_d, plain) = gate(
            &[],
            &[&format!(
                "{} *",
                program.split(' ').next().unwrap_or_default()
            )],
        );
        let (_e, deny) = gate(&[&format!("{program}*"), "git push*"], &[]);
        let (_f, deny_payload) = gate(&["git push*"], &[]);
        assert!(
            matches!(
                decide(&plain, seen, grants, None),
                Decision::Allow(Allowed::Grant)
            ),
            "{seen}"
        );
        for line in *attacks {
            // (a) no signature is offered.
            assert!(signature::signatures(line).is_none(), "signed: {line}");
            // (b) the grant and a headless allow rule for the whole program do not cover it.
            assert!(
                matches!(decide(&plain, line, grants, None), Decision::Ask(_)),
                "{seen} covered {line}"
            );
            assert!(
                !matches!(
                    decide(&plain, line, &[], Some(HeadlessPolicy::AllowIfRuleMatches)),
                    Decision::Allow(_)
                ),
                "allow rule `{program} *` allowed {line}"
            );
            // (c) a deny rule on the program and subcommand denies, and never asks.
            let d = decide(&deny, line, grants, None);
            assert!(denied_by_rule(&d), "{program}* did not deny {line}: {d:?}");
            // …and a deny rule on what the payload runs, where the line names a program.
            if !line.contains("no-such") && !line.contains("--re=") && !line.contains("bogus") {
                let d = decide(&deny_payload, line, grants, None);
                assert!(denied_by_rule(&d), "git push* did not deny {line}: {d:?}");
            }
        }
    }
}

/// Forms that rewrite or delete remote refs are not covered by a plain push's grant, and
/// their own signature is the whole command.
#[test]
fn attack_push_rewrites_are_signed_whole() {
    let (_d, g) = gate(&[], &[]);
    let plain = grants::signature_grant("git push origin main").unwrap();
    for line in [
        "git push origin +main",
        "git push origin +HEAD:main",
        "git push origin :main",
        "git push origin main :old",
        "git push -f origin main",
        "git push -uf origin main",
        "git push --force origin main",
        "git push --forc origin main",
        "git push --force-with-lease origin main",
        "git push --force-w=main:abc origin main",
        "git push --force-if-includes origin main",
        "git push --mirror origin",
        "git push --delete origin old",
        "git push -d origin old",
        "git push --prune origin refs/heads/*:refs/heads/*",
        "git push origin --prune main",
    ] {
        let d = decide(&g, line, std::slice::from_ref(&plain), None);
        assert!(
            matches!(d, Decision::Ask(_)),
            "plain push grant covered {line}"
        );
        if let Some(sigs) = signature::signatures(line) {
            assert!(
                sigs.iter()
                    .all(|s| s.describe().contains("exactly this command")),
                "{line}: {:?}",
                sigs.iter().map(|s| s.describe()).collect::<Vec<_>>()
            );
        }
    }
    // Granting one forced push covers that push only.
    let forced = grants::signature_grant("git push origin +main").unwrap();
    let d = decide(
        &g,
        "git push origin +release",
        std::slice::from_ref(&forced),
        None,
    );
    assert!(matches!(d, Decision::Ask(_)));
    let d = decide(
        &g,
        "git push origin +main",
        std::slice::from_ref(&forced),
        None,
    );
    assert!(matches!(d, Decision::Allow(Allowed::Grant)));
    // A plain push grant still covers other plain pushes.
    let d = decide(
        &g,
        "git push origin feature",
        std::slice::from_ref(&plain),
        None,
    );
    assert!(matches!(d, Decision::Allow(Allowed::Grant)));
}

/// A grant for a command that writes the file it names covers that file only.
#[test]
fn attack_copy_and_archive_grants_do_not_overwrite_other_files() {
    let (_d, g) = gate(&[], &[]);
    for (seen, attack) in [
        ("cp a b", "cp a c"),
        ("cp a b", "cp evil b"),
        ("cp -r src build", "cp -r src ../other"),
        ("mv a b", "mv a c"),
        ("tee out.log", "tee ../.bashrc"),
        ("tar -cf x.tar src", "tar -cf other.tar src"),
        ("tar -czf x.tgz src", "tar -czf x.tgz ../../etc"),
        ("tar cf x.tar src", "tar cf y.tar src"),
        ("tar -rf x.tar a", "tar -rf y.tar a"),
        (
            "tar --create --file=x.tar src",
            "tar --create --file=y.tar src",
        ),
        ("sort -o out f", "sort -o ../.bashrc f"),
        ("sort --output=out f", "sort --output=other f"),
        ("git log --output out.txt", "git log --output ../.bashrc"),
        (
            "git diff --output out.diff HEAD",
            "git diff --output other.diff HEAD",
        ),
    ] {
        let grant = grants::signature_grant(seen).unwrap_or_else(|| panic!("no signature: {seen}"));
        let grants = std::slice::from_ref(&grant);
        let d = decide(&g, attack, grants, None);
        assert!(matches!(d, Decision::Ask(_)), "{seen} covered {attack}");
        let d = decide(&g, seen, grants, None);
        assert!(matches!(d, Decision::Allow(Allowed::Grant)), "{seen}");
    }
    // Reading commands keep their wide signatures.
    let grant = grants::signature_grant("tar -xf a.tar").unwrap();
    let d = decide(&g, "tar -xf b.tar", std::slice::from_ref(&grant), None);
    assert!(matches!(d, Decision::Allow(Allowed::Grant)));
    let grant = grants::signature_grant("sort -u f").unwrap();
    let d = decide(&g, "sort -u g", std::slice::from_ref(&grant), None);
    assert!(matches!(d, Decision::Allow(Allowed::Grant)));
}

/// The models do not make ordinary lines ask or deny: signatures are still offered and
/// unrelated deny rules stay silent.
#[test]
fn models_are_not_paranoid_about_ordinary_lines() {
    let (_d, deny) = gate(&["git push*", "rm *"], &[]);
    // (line, offered a signature before the models: `make` with `-j`/`-C` never was)
    for (line, signed) in [
        ("git log --oneline -n 5", true),
        ("git diff --stat HEAD~1", true),
        ("git status -sb", true),
        ("git fetch --all --prune", true),
        ("git pull --rebase origin main", true),
        ("git grep -n foo", true),
        ("git rebase -i HEAD~3", true),
        ("git clone --depth 1 url dir", true),
        ("sed -n 's/a/b/p' f", true),
        ("sed -E -e 's/a/b/' -e 's/c/d/' f", true),
        ("make -s test", true),
        ("make -j4 test", false),
        ("make -C sub -k all", false),
        ("tar -czf out.tgz src", true),
        ("tar -xf - -C dir", true),
        ("sort -u -k2,2n f", true),
    ] {
        let d = decide(&deny, line, &[], None);
        assert!(matches!(d, Decision::Ask(_)), "{line}: {d:?}");
        assert_eq!(signature::signatures(line).is_some(), signed, "{line}");
    }
}
