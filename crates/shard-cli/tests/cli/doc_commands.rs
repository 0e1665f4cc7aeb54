//! Every `shard …` command the README and docs/ show exists, with every `--flag` shown:
//! each is checked against the real binary's `--help`, so renaming a subcommand or a flag
//! without fixing the docs fails the build. Also: `shard … | head` ends quietly.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::harness::*;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The markdown files whose commands are checked.
fn doc_files() -> Vec<PathBuf> {
    let mut v = vec![repo().join("README.md")];
    for e in std::fs::read_dir(repo().join("docs")).unwrap() {
        let p = e.unwrap().path();
        // Decisions and performance notes record history, not the current commands.
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if p.extension().is_some_and(|x| x == "md")
            && name != "decisions.md"
            && name != "performance.md"
        {
            v.push(p);
        }
    }
    v
}

/// `shard …` command lines of a markdown text: inline code spans and the lines of fenced
/// blocks that start with `shard ` (or `$ shard `).
fn commands_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            let l = line.trim().trim_start_matches("$ ");
            if l.starts_with("shard ") {
                out.push(l.to_string());
            }
            continue;
        }
        for (i, span) in line.split('`').enumerate() {
            if i % 2 == 1 && (span.starts_with("shard ") || span == "shard") {
                out.push(span.to_string());
            }
        }
    }
    out
}

/// The subcommands a `--help` lists under "Commands:".
fn subcommands(help: &str) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    let mut inside = false;
    for l in help.lines() {
        if l.starts_with("Commands:") {
            inside = true;
            continue;
        }
        if inside {
            if !l.starts_with("  ") {
                inside = false;
                continue;
            }
            if let Some(w) = l.split_whitespace().next() {
                set.insert(w.to_string());
            }
        }
    }
    set
}

fn help_of(path: &[String]) -> String {
    let out = Command::new(shard_bin())
        .args(path)
        .arg("--help")
        .env("SHARD_HOME", "/nonexistent-shard-home")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "`shard {} --help` failed: {}",
        path.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn every_shard_command_in_the_readme_and_docs_exists_with_its_flags() {
    let mut checked = 0;
    let mut problems = Vec::new();
    for file in doc_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for cmd in commands_in(&text) {
            let words: Vec<&str> = cmd.split_whitespace().skip(1).collect();
            // The subcommand path: words while each names a subcommand of the last.
            let mut path: Vec<String> = Vec::new();
            let mut help = help_of(&path);
            for w in &words {
                if subcommands(&help).contains(*w) {
                    path.push(w.to_string());
                    help = help_of(&path);
                } else {
                    break;
                }
            }
            for w in &words {
                let flag = w
                    .split(['=', '…', ')', ',', '"', ']', '[', '|'])
                    .next()
                    .unwrap_or("");
                if flag.starts_with("--") && flag.len() > 2 && !help.contains(flag) {
                    problems.push(format!(
                        "{}: `{cmd}`: `shard {}` has no {flag}",
                        file.file_name().unwrap().to_string_lossy(),
                        path.join(" ")
                    ));
                }
            }
            checked += 1;
        }
    }
    assert!(checked > 20, "only {checked} commands found");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_closed_pipe_ends_listing_commands_quietly() {
    let sb = Sandbox::new();
    for args in [vec!["protocol", "schema"], vec!["--help"], vec!["sessions"]] {
        let mut child = Command::new(shard_bin())
            .args(&args)
            .current_dir(sb.work())
            .env("SHARD_HOME", sb.home())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Read one line, then close the pipe as `head -1` does.
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "`shard {}`: {stderr}",
            args.join(" ")
        );
    }
}
