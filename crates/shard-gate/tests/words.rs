//! The shell parser against real bash: for generated words mixing every quoting and
//! expansion form bash has, the parser either yields exactly the words bash yields
//! (`bash -c 'printf "%s\0" WORD'`) or marks one of them dynamic (a signature grant never
//! covers it, an allow rule never allows it, a deny rule matches it as "anything may
//! follow"), or refuses the line. docs/security.md, "Words as bash reads them".
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Words compared with bash's (neither refused nor dynamic).
static COMPARED: AtomicUsize = AtomicUsize::new(0);

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use shard_gate::shell;

/// What bash prints for `printf '%s\0' WORD` in an empty folder with a bare environment,
/// split at the NULs; `None` when bash rejects the line.
fn bash_words(dir: &std::path::Path, line: &str) -> Option<Vec<String>> {
    let out = Command::new("bash")
        .arg("-c")
        .arg(line)
        .current_dir(dir)
        .env_clear()
        .env("HOME", "/home/nobody")
        .env("PATH", "/usr/bin:/bin")
        .env("LC_ALL", "C.UTF-8")
        .env("x", "val ue")
        .output()
        .expect("bash runs");
    if !out.status.success() {
        return None;
    }
    let mut words: Vec<String> = out
        .stdout
        .split(|b| *b == 0)
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    // The output ends with a NUL: the last piece is empty.
    words.pop();
    Some(words)
}

/// Whether bash's parser accepts `line` (`bash -n`: read, never run).
fn bash_accepts(dir: &std::path::Path, line: &str) -> bool {
    Command::new("bash")
        .arg("-n")
        .arg("-c")
        .arg(line)
        .current_dir(dir)
        .env_clear()
        .env("LC_ALL", "C.UTF-8")
        .output()
        .expect("bash runs")
        .status
        .success()
}

fn one_of(items: &'static [&'static str]) -> BoxedStrategy<String> {
    proptest::sample::select(items)
        .prop_map(str::to_string)
        .boxed()
}

/// Characters inside single quotes.
const INNER: &[&str] = &[
    "a", "-", " ", "\n", "$", "\\", "\"", "*", "?", "~", "{", ",", "}", "=", ":", "!", "#", ";",
    "&", "|", "<", ">", "(", ")", "é", "x", "[", "]", ".", "\\\n",
];

fn single_quoted() -> BoxedStrategy<String> {
    proptest::collection::vec(one_of(INNER), 0..5)
        .prop_map(|v| format!("'{}'", v.concat()))
        .boxed()
}

/// Pieces inside `"…"` or `$"…"`.
fn double_piece() -> BoxedStrategy<String> {
    prop_oneof![
        one_of(&[
            "a", " ", "-", "'", "*", "~", "{a,b}", "!", "\n", "é", "$", "$x", "${x}", "$1", "$@",
            "$*", "$#", "$?", "$-", "$'", "\\\n", "=", ":", "#", ";", "|", "&",
        ]),
        one_of(&[
            "\\$", "\\\\", "\\\"", "\\`", "\\a", "\\n", "\\'", "\\!", "\\ ", "\\{"
        ]),
    ]
    .boxed()
}

fn double_quoted(prefix: &'static str) -> BoxedStrategy<String> {
    proptest::collection::vec(double_piece(), 0..5)
        .prop_map(move |v| format!("{prefix}\"{}\"", v.concat()))
        .boxed()
}

fn ansi_c() -> BoxedStrategy<String> {
    proptest::collection::vec(
        one_of(&[
            "a",
            " ",
            "-",
            "\"",
            "$",
            "x",
            "\n",
            "é",
            "{",
            "~",
            "*",
            "\\n",
            "\\t",
            "\\e",
            "\\E",
            "\\a",
            "\\b",
            "\\f",
            "\\r",
            "\\v",
            "\\\\",
            "\\'",
            "\\\"",
            "\\?",
            "\\q",
            "\\\n",
            "\\x41",
            "\\x4",
            "\\x",
            "\\xg",
            "\\x7f",
            "\\xff",
            "\\101",
            "\\0",
            "\\7",
            "\\12",
            "\\1234",
            "\\777",
            "\\u41",
            "\\u00e9",
            "\\u",
            "\\U0001F600",
            "\\U41",
            "\\cA",
            "\\c",
            "\\$",
            "\\ ",
        ]),
        0..5,
    )
    .prop_map(|v| format!("$'{}'", v.concat()))
    .boxed()
}

/// One piece of an unquoted word.
fn piece() -> BoxedStrategy<String> {
    prop_oneof![
        4 => one_of(&[
            "a", "b", "-", "--", ".", "/", "=", ":", ",", "%", "@", "+", "^", "é", "0", "1", "x",
            "exec",
        ]),
        2 => one_of(&["*", "?", "[", "]", "[a]", "{", "}", "{a,b}", "{1..2}", "{}", "~", "!", "#"]),
        2 => one_of(&[
            "\\a", "\\ ", "\\\n", "\\\\", "\\'", "\\\"", "\\$", "\\*", "\\~", "\\{", "\\;",
            "\\&", "\\|", "\\<", "\\>", "\\(", "\\)", "\\`", "\\#", "\\!", "\\\t", "\\é",
        ]),
        2 => one_of(&[
            "$x", "${x}", "${x:-a}", "$1", "$@", "$*", "$#", "$$", "$?", "$-", "$!", "$_", "$0",
            "$", "$\\\nx", "$/", "$=", "${x#a}",
        ]),
        2 => single_quoted(),
        2 => double_quoted(""),
        1 => double_quoted("$"),
        2 => ansi_c(),
    ]
    .boxed()
}

fn word() -> BoxedStrategy<String> {
    proptest::collection::vec(piece(), 1..5)
        .prop_map(|v| v.concat())
        .boxed()
}

/// Checks one word: the parser's words after `printf '%s\0'` are bash's, or one is
/// dynamic, or the parser refused the line.
fn check(dir: &std::path::Path, word: &str) -> Result<(), TestCaseError> {
    let line = format!("printf '%s\\0' {word}");
    let Some(cmds) = shell::parse(&line) else {
        return Ok(());
    };
    let first = &cmds[0];
    let dynamic = cmds
        .iter()
        .flat_map(|c| c.words.iter().chain(c.redirects.iter().map(|r| &r.target)))
        .any(|w| w.dynamic);
    if dynamic || !first.assignments.is_empty() {
        return Ok(());
    }
    if cmds.len() > 1 || !first.redirects.is_empty() {
        // A later command (`x` after a comment ended the line) or a redirect may fail when
        // bash runs it, so only bash's syntax check can judge the parse here.
        prop_assert!(
            bash_accepts(dir, &line),
            "the parser accepted a line bash rejects: {line:?} → {cmds:?}"
        );
        return Ok(());
    }
    let bash = bash_words(dir, &line);
    prop_assert!(
        bash.is_some(),
        "the parser accepted a line bash rejects: {line:?} → {cmds:?}"
    );
    let mut parsed: Vec<String> = first.words[2..].iter().map(|w| w.text.clone()).collect();
    if parsed.is_empty() {
        // `printf FORMAT` with no argument still prints the format once.
        parsed.push(String::new());
    }
    COMPARED.fetch_add(1, Ordering::Relaxed);
    prop_assert_eq!(bash.unwrap(), parsed, "line {:?}", line);
    Ok(())
}

#[test]
fn words_are_what_bash_yields_or_dynamic() {
    if Command::new("bash").arg("-c").arg("true").status().is_err() {
        eprintln!("skipped: no bash on this machine");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cases = std::env::var("SHARD_WORD_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500u32);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    runner.run(&word(), |w| check(dir.path(), &w)).unwrap();
    let compared = COMPARED.load(Ordering::Relaxed);
    eprintln!("{compared} of {cases} generated words were compared with bash's");
    // Most words must be known exactly, or the property proves little.
    assert!(compared * 4 > cases as usize, "{compared} of {cases}");
}

/// The forms that showed the bug, and what the property found, checked on every run.
#[test]
fn known_words() {
    let dir = tempfile::tempdir().unwrap();
    for w in [
        "$\"-exec\"",
        "$'-exec'",
        "-e$'x'\"e\"c",
        "$'\\x2dexec'",
        "\"$'\"",
        "a\\\nb",
        "$\\\nx",
        "'a\\\nb'",
        "$'a\\\nb'",
        "a=~",
        "a{b,c}",
        "@{u}",
        "\\",
        // A comment ends at its newline even after a backslash: `x` is a second command.
        "#$\\\nx",
    ] {
        check(dir.path(), w).unwrap();
    }
}
