//! Files Shard or git trust: what a tool writes there runs later outside the sandbox or
//! with more authority than the agent has (a hook on the user's next `git commit`, a
//! `core.fsmonitor` the next `git status` runs, an MCP server the next Runtime starts, an
//! agent definition with wider tools). A call that may write one always asks, whatever
//! grant or `[[headless.allow]]` rule exists, and its prompt offers no "always" choice
//! (docs/security.md, "Writes to trusted files"; docs/decisions.md, "Trusted files").
//!
//! The list, by path component (ASCII case folded, trailing dots and spaces ignored, as
//! case-insensitive and Windows file systems read names): `.git` (a directory or a `gitdir:`
//! file, anywhere: hooks, config, info, a nested repository's or a worktree's), `.shard`
//! (project agent definitions), `.mcp.json` (MCP servers Shard starts), `.gitmodules`
//! (where `git submodule update` clones from and checks out to).

use std::path::Path;

use serde_json::Value;

use crate::paths::Workspace;
use crate::resolve::{self, Effective};

/// Names whose path component makes a path trusted.
const TRUSTED_NAMES: &[&str] = &[".git", ".shard", ".mcp.json", ".gitmodules"];

/// Programs that never write a file their words name: a trusted path among their words is
/// only read. Every other program (writers, interpreters, scripts, `cd`, unknown tools)
/// counts as writing every path its words name.
const READERS: &[&str] = &[
    "cat",
    "head",
    "tail",
    "less",
    "more",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ls",
    "wc",
    "stat",
    "file",
    "diff",
    "cmp",
    "echo",
    "printf",
    "test",
    "[",
    "realpath",
    "readlink",
    "basename",
    "dirname",
    "du",
    "tree",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "jq",
    "od",
    "xxd",
    "hexdump",
    "nl",
    "cut",
    "tr",
    "column",
    "true",
    "false",
    "pwd",
    "which",
    "type",
    "strings",
];

/// True when a path component names a trusted file.
fn trusted_component(c: &str) -> bool {
    let folded = c.trim_end_matches(['.', ' ']).to_ascii_lowercase();
    TRUSTED_NAMES.contains(&folded.as_str())
}

/// True when `text` mentions a trusted name as a component of some path in it: split at
/// `/` and at the characters that separate a path from an option or a script around it
/// (`of=.git/config`, `-o.git/x`, `w .git/hooks/x`, `open('.git/config')`).
fn mentions(text: &str) -> bool {
    text.split(|c: char| {
        matches!(
            c,
            '/' | '='
                | ':'
                | ';'
                | ','
                | '\''
                | '"'
                | ' '
                | '\t'
                | '\n'
                | '('
                | ')'
                | '<'
                | '>'
                | '|'
                | '&'
                | '`'
                | '{'
                | '}'
                | '['
                | ']'
                | '\\'
        )
    })
    .any(|piece| {
        trusted_component(piece)
            // `-o.git`: a one-letter option with its value attached.
            || (piece.len() > 2 && piece.starts_with('-') && trusted_component(&piece[2..]))
    })
}

/// True when `abs` (already resolved) has a trusted component.
fn trusted_abs(abs: &Path) -> bool {
    abs.components()
        .any(|c| trusted_component(&c.as_os_str().to_string_lossy()))
}

/// True when `text`, read as a path from the cwd, is or lies in a trusted location: by
/// its spelling, or once `..` and symlinks are resolved (a link to `.git` made earlier).
fn trusted_path(ws: &Workspace, text: &str) -> bool {
    if text.is_empty() {
        return false;
    }
    mentions(text) || ws.resolve_all(text).iter().any(|p| trusted_abs(&p.abs))
}

/// True when the directory `text` names holds a trusted entry now (`.` at the root of a
/// repository holds `.git`): a recursive copy or an archive extracted there may write it.
fn holds_trusted(ws: &Workspace, text: &str) -> bool {
    ws.resolve_all(text)
        .iter()
        .any(|p| p.abs.is_dir() && TRUSTED_NAMES.iter().any(|n| p.abs.join(n).exists()))
}

/// What a call may write that Shard or git trusts, for the prompt; `None` when nothing.
pub fn touched(ws: &Workspace, tool: &str, read_only: bool, args: &Value) -> Option<String> {
    if tool == "bash" {
        return args
            .get("command")
            .and_then(Value::as_str)
            .and_then(|line| bash_touches(ws, line));
    }
    if read_only {
        return None;
    }
    let path = args.get("path").and_then(Value::as_str)?;
    trusted_path(ws, path).then(|| path.to_string())
}

/// What a `bash` line may write that is trusted: a redirection's target, a path among the
/// words of a command that is not a known reader, a `git config` that sets something, or
/// a recursive copy or extraction into a directory holding a trusted entry.
pub fn bash_touches(ws: &Workspace, line: &str) -> Option<String> {
    let walk = resolve::walk(line);
    for target in &walk.writes {
        if target.dynamic || trusted_path(ws, &target.text) {
            return Some(target.text.clone());
        }
    }
    walk.commands.iter().find_map(|c| command_touches(ws, c))
}

fn command_touches(ws: &Workspace, cmd: &Effective) -> Option<String> {
    let (first, rest) = cmd.words.split_first()?;
    let name = resolve::base_name(first);
    if READERS.contains(&name) || (name == "find" && !find_writes(rest)) {
        return None;
    }
    if name == "git" {
        return git_touches(rest);
    }
    if let Some(w) = rest.iter().find(|w| {
        trusted_path(ws, w)
            || w.split_once('=').is_some_and(|(_, v)| trusted_path(ws, v))
            || mentions(w)
    }) {
        return Some(w.clone());
    }
    recursive_into_trusted(ws, name, rest)
}

/// `find` writes files only with these actions (what `-exec` runs is a command of its own).
fn find_writes(rest: &[String]) -> bool {
    rest.iter()
        .any(|w| w == "-delete" || w.starts_with("-fprint") || w == "-fls")
}

/// `git config` that writes, or git pointed at a trusted location by a global option.
fn git_touches(rest: &[String]) -> Option<String> {
    let sub = rest.iter().position(|w| !w.starts_with('-'));
    let globals = &rest[..sub.unwrap_or(rest.len())];
    if let Some(w) = globals.iter().find(|w| mentions(w)) {
        return Some(w.clone());
    }
    let sub = sub?;
    if rest[sub] != "config" {
        // Other subcommands write `.git` the way git itself means to.
        return None;
    }
    let args = &rest[sub + 1..];
    let reads = |w: &str| {
        w.starts_with("--get")
            || matches!(
                w,
                "-l" | "--list" | "get" | "list" | "--show-origin" | "--show-scope"
            )
    };
    let writes = |w: &str| {
        w.starts_with("--unset")
            || w.starts_with("--replace")
            || matches!(
                w,
                "--add"
                    | "-e"
                    | "--edit"
                    | "--rename-section"
                    | "--remove-section"
                    | "set"
                    | "unset"
                    | "edit"
                    | "rename-section"
                    | "remove-section"
            )
    };
    let operands = args.iter().filter(|w| !w.starts_with('-')).count();
    let read_only =
        !args.iter().any(|w| writes(w)) && (args.iter().any(|w| reads(w)) || operands <= 1);
    if read_only {
        None
    } else {
        Some(format!("git config {}", args.join(" ")))
    }
}

/// A recursive copy (`cp -r`, `cp -a`, `rsync`) or an archive extraction (`tar x`,
/// `unzip`) into a directory that holds a trusted entry: the source decides what it
/// writes there, `.git/hooks` included.
fn recursive_into_trusted(ws: &Workspace, name: &str, rest: &[String]) -> Option<String> {
    let flags: Vec<&str> = rest
        .iter()
        .filter(|w| w.starts_with('-') && w.len() > 1)
        .map(String::as_str)
        .collect();
    let short = |c: char| {
        flags
            .iter()
            .any(|f| !f.starts_with("--") && f[1..].contains(c))
    };
    let operands = || rest.iter().filter(|w| !w.starts_with('-'));
    let into_operand = || operands().find(|w| holds_trusted(ws, w)).cloned();
    match name {
        "cp" if short('r')
            || short('R')
            || short('a')
            || flags
                .iter()
                .any(|f| f.starts_with("--recursive") || f.starts_with("--archive")) =>
        {
            into_operand()
        }
        "rsync" => into_operand(),
        "tar" => {
            let cluster = rest.first().filter(|w| !w.starts_with('-'));
            let extracts = short('x')
                || flags.iter().any(|f| *f == "--extract" || *f == "--get")
                || cluster.is_some_and(|c| c.contains('x'));
            let elsewhere = short('C') || flags.iter().any(|f| f.starts_with("--directory"));
            if !extracts {
                None
            } else if elsewhere {
                into_operand()
            } else {
                holds_trusted(ws, ".").then(|| "tar extracting into .".to_string())
            }
        }
        "unzip" => {
            if short('d') {
                into_operand()
            } else {
                holds_trusted(ws, ".").then(|| "unzip extracting into .".to_string())
            }
        }
        _ => None,
    }
}

#[cfg(test)]
#[path = "trusted_tests.rs"]
mod tests;
