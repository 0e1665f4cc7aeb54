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

use std::collections::HashSet;
use std::path::Path;

use serde_json::Value;

use crate::paths::{self, Workspace};
use crate::resolve::{self, Effective, Walk};

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

/// Programs whose operands are names (subcommands, targets, packages) or the command a
/// wrapper runs (looked at as a command of its own): their words are read for trusted
/// names, but not looked up in the filesystem, which costs a system call per word on
/// every granted build or test line.
const NAMES_NOT_PATHS: &[&str] = &[
    "cargo", "npm", "pnpm", "yarn", "make", "just", "go", "rustup", "gh", "pip", "pip3", "uv",
    "timeout", "nice", "env", "nohup", "sudo", "doas", "xargs", "stdbuf", "setsid", "ionice",
    "command", "exec", "builtin", "time",
];

/// True when a path component names a trusted file.
fn trusted_component(c: &str) -> bool {
    let name = c.trim_end_matches(['.', ' ']);
    TRUSTED_NAMES.iter().any(|t| t.eq_ignore_ascii_case(name))
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

/// True when `abs` (already resolved) has a trusted component below the longest prefix
/// it shares with the cwd: a workspace that itself lies under a `.shard` folder (the
/// daemon's workspaces in SHARD_HOME) does not make every path trusted.
fn trusted_abs(cwd: &Path, abs: &Path) -> bool {
    let mut here = cwd.components();
    abs.components()
        .skip_while(|c| here.next() == Some(*c))
        .any(|c| trusted_component(&c.as_os_str().to_string_lossy()))
}

/// True when `text`, read as a path from the cwd, is or lies in a trusted location: as
/// spelled (`..` removed by text) or as the kernel resolves it (a link to `.git` made
/// earlier, `..` after a link). The kernel's walk starts at the cwd, already resolved: one
/// `lstat` per component of `text`, not of the whole path.
fn trusted_path(ws: &Workspace, text: &str) -> bool {
    if text.is_empty() {
        return false;
    }
    let cwd = ws.cwd();
    let path = Path::new(text);
    // A relative spelling without `..` is all in `text`, which `mentions` read already.
    let spelled = (path.is_absolute() || text.contains(".."))
        && trusted_abs(cwd, &paths::lexical(&cwd.join(path)));
    spelled || trusted_abs(cwd, &paths::real_from(cwd.to_path_buf(), path))
}

/// [`mentions`] in a word with the cwd's own spelling removed (a workspace may lie in a
/// `.shard` folder: the daemon's workspaces are in SHARD_HOME).
fn word_mentions(cwd: &str, word: &str) -> bool {
    if cwd.len() > 1 && word.contains(cwd) {
        mentions(&word.replace(cwd, "."))
    } else {
        mentions(word)
    }
}

/// True when the directory `text` names holds a trusted entry now (`.` at the root of a
/// repository holds `.git`): a recursive copy or an archive extracted there may write it.
fn holds_trusted(ws: &Workspace, text: &str) -> bool {
    let dir = paths::real_from(ws.cwd().to_path_buf(), Path::new(text));
    TRUSTED_NAMES.iter().any(|n| dir.join(n).exists())
}

/// What a call may write that Shard or git trusts, for the prompt; `None` when nothing.
pub fn touched(ws: &Workspace, tool: &str, read_only: bool, args: &Value) -> Option<String> {
    touched_walked(ws, tool, read_only, args, None)
}

/// [`touched`] with the `bash` line already walked ([`resolve::walk`]).
pub fn touched_walked(
    ws: &Workspace,
    tool: &str,
    read_only: bool,
    args: &Value,
    walk: Option<&Walk>,
) -> Option<String> {
    if tool == "bash" {
        let line = args.get("command").and_then(Value::as_str)?;
        let found = match walk {
            Some(w) => walk_touches(ws, w),
            None => bash_touches(ws, line),
        };
        // A line the parser does not follow (`> .git/config`, `(…) > …`) is held when it
        // names a trusted file anywhere: only an exact grant could cover it.
        let opaque = || match walk {
            Some(w) => w.commands.iter().any(|c| c.words.is_empty()),
            None => resolve::effective(line).iter().any(|c| c.words.is_empty()),
        };
        return found.or_else(|| {
            (opaque() && word_mentions(&ws.cwd().to_string_lossy(), line)).then(|| line.to_string())
        });
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
    walk_touches(ws, &resolve::walk(line))
}

fn walk_touches(ws: &Workspace, walk: &Walk) -> Option<String> {
    for target in &walk.writes {
        if target.dynamic || (target.text != "/dev/null" && trusted_path(ws, &target.text)) {
            return Some(target.text.clone());
        }
    }
    // A wrapper's words come again in the command it runs: each word is looked at once.
    let mut seen: HashSet<&str> = HashSet::new();
    let cwd = ws.cwd().to_string_lossy();
    walk.commands
        .iter()
        .find_map(|c| command_touches(ws, &cwd, c, &mut seen))
}

fn command_touches<'a>(
    ws: &Workspace,
    cwd: &str,
    cmd: &'a Effective,
    seen: &mut HashSet<&'a str>,
) -> Option<String> {
    let (first, rest) = cmd.words.split_first()?;
    let name = resolve::base_name(first);
    if READERS.contains(&name) || (name == "find" && !find_writes(rest)) {
        return None;
    }
    if name == "git" {
        return git_touches(rest);
    }
    let lookup = !NAMES_NOT_PATHS.contains(&name);
    if let Some(w) = rest
        .iter()
        .find(|w| seen.insert(w.as_str()) && word_touches(ws, cwd, w, lookup))
    {
        return Some(w.clone());
    }
    recursive_into_trusted(ws, name, rest)
}

/// True when a word of a writing command names a trusted location. The filesystem is
/// asked only about words that may be paths: not options, but an option's or an
/// operand's value after `=` (`--output=…`, `of=…`).
fn word_touches(ws: &Workspace, cwd: &str, w: &str, lookup: bool) -> bool {
    if word_mentions(cwd, w) {
        return true;
    }
    if !lookup {
        return false;
    }
    let value = w.split_once('=').map(|(_, v)| v);
    (!w.starts_with('-') && trusted_path(ws, w)) || value.is_some_and(|v| trusted_path(ws, v))
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
