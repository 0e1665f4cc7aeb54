//! `bash_signature` version 2 (docs/protocol.md §9.5, docs/decisions.md "Gate hardening"): for
//! every command of a line, the executable as written, its subcommand (`git status` is not
//! `git checkout`), and the exact sorted set of its flags — every word starting with `-`,
//! `--` and the words after it included. A line gets a signature only when every command
//! is one whose arguments are data: commands that run their arguments as code or commands
//! (interpreters, shells, `env`, `timeout`, `xargs`, `find -exec`, `sed e`, `awk`, `git -c`
//! or aliases, `ssh` …) are never offered a signature and never matched by one. The
//! programs the gate models option by option (git, sed, make, tar, sort:
//! `resolve::options`) are signed only when every word is understood; commands whose
//! operands name what they overwrite (`cp`, `tar -c`, `git push +ref` …) are signed whole
//! (docs/decisions.md, "Program models", "Writing commands are signed whole").

use serde::{Deserialize, Serialize};

use crate::resolve::{self, GIT_BUILTINS};
use crate::shell::{self, SimpleCommand, Word};

mod runners;
use runners::is_code_runner;

/// The current signature version. Grants of other versions never match.
pub const VERSION: u32 = 2;

/// The signature of one simple command.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CommandSignature {
    /// Executable as written.
    pub exe: String,
    /// Subcommand words (`["status"]` for `git status`, `["run", "build"]` for `npm run
    /// build`); empty for commands whose operands are plain data (`ls`, `grep`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subcommand: Vec<String>,
    /// Flags, sorted and deduplicated.
    pub flags: Vec<String>,
}

impl CommandSignature {
    /// How a person reads it, saying exactly what varies: `git status (any arguments
    /// after it, no flags)`, `./test.sh (no arguments, exactly the flags --fast)`.
    pub fn describe(&self) -> String {
        let mut s = self.exe.clone();
        for w in &self.subcommand {
            s.push(' ');
            s.push_str(w);
        }
        let name = resolve::base_name(&self.exe);
        if exact_form(name, &self.subcommand) {
            s.push_str(" (exactly this command: no other operands, no flags)");
            return s;
        }
        let takes_operands =
            PLAIN.contains(&name) || WITH_SUBCOMMANDS.iter().any(|(n, _, _)| *n == name);
        s.push_str(if takes_operands {
            " (any operands"
        } else {
            " (no operands"
        });
        if self.flags.is_empty() {
            s.push_str(", no flags)");
        } else {
            s.push_str(", exactly the flags ");
            s.push_str(&self.flags.join(" "));
            s.push(')');
        }
        s
    }
}

/// Commands whose operands are data (files, patterns, text): any operands, exact flags.
const PLAIN: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "echo",
    "printf",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "diff",
    "cmp",
    "sort",
    "uniq",
    "cut",
    "tr",
    "file",
    "stat",
    "du",
    "df",
    "pwd",
    "which",
    "tree",
    "mkdir",
    "rmdir",
    "touch",
    "cp",
    "mv",
    "rm",
    "ln",
    "chmod",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "date",
    "true",
    "false",
    "test",
    "[",
    "sleep",
    "nl",
    "od",
    "xxd",
    "hexdump",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "base64",
    "jq",
    "column",
    "paste",
    "join",
    "comm",
    "fold",
    "fmt",
    "rev",
    "tac",
    "seq",
    "expand",
    "unexpand",
    "type",
    "id",
    "whoami",
    "uname",
    "hostname",
    "ps",
    "free",
    "uptime",
    "pgrep",
    "tee",
    "gzip",
    "gunzip",
    "zcat",
    "bzip2",
    "bunzip2",
    "xz",
    "unxz",
    "zip",
    "unzip",
    "tar",
    "cd",
    "wait",
    "kill",
    "find",
    "sed",
    "curl",
    "wget",
];

/// Flags that make an otherwise plain command run a program, in any spelling
/// ([`resolve::option_matches`]: in a cluster, with a value, abbreviated). The programs
/// the gate models option by option (sed, tar, sort, make, git) are read by their models
/// instead ([`modelled_signable`]).
const RUNS_CODE_FLAGS: &[(&str, &[&str])] = &[
    ("rg", &["--pre"]),
    ("zip", &["-TT", "--unzip-command"]),
    (
        "find",
        &[
            "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fls",
        ],
    ),
    ("curl", &["-K", "--config"]),
    ("printf", &["-v"]),
    ("go", &["-exec", "-toolexec"]),
    ("cargo", &["--config", "-Z"]),
    ("npm", &["--script-shell", "--node-options"]),
    ("wget", &["-e", "--execute", "-i", "--input-file"]),
];

/// For a program the gate models option by option: true when every word is understood
/// and no option runs code or changes files in place (`sed -i`, `--in-pl=`, `-ni`; `tar
/// --to-com=`; `sort --compress-p=`; `make --ev=`). Other programs: true.
fn modelled_signable(name: &str, rest: &[Word]) -> bool {
    use resolve::options::{self, Tag};
    let parsed = match name {
        "sed" => options::SED.parse(rest),
        "tar" => resolve::tar_words(rest).and_then(|w| options::TAR.parse(&w)),
        "sort" => options::SORT.parse(rest),
        "make" => options::MAKE.parse(rest),
        _ => return true,
    };
    parsed.is_some_and(|p| !p.has(Tag::Code) && !p.has(Tag::NoSign))
}

/// Commands with subcommands: (exe, subcommands that take a second level, global flags
/// accepted before the subcommand).
const WITH_SUBCOMMANDS: &[(&str, &[&str], &[&str])] = &[
    (
        "git",
        &[
            "stash",
            "remote",
            "worktree",
            "notes",
            "reflog",
            "sparse-checkout",
        ],
        &["--no-pager", "-P", "--no-optional-locks", "--bare"],
    ),
    (
        "cargo",
        &[],
        &[
            "-q",
            "--quiet",
            "-v",
            "--verbose",
            "--locked",
            "--offline",
            "--frozen",
        ],
    ),
    (
        "npm",
        &["run", "run-script", "pkg", "config"],
        &["-s", "--silent"],
    ),
    ("pnpm", &["run", "pkg", "config"], &["-s", "--silent"]),
    ("yarn", &["run", "pkg", "config"], &["-s", "--silent"]),
    ("go", &["mod", "tool"], &[]),
    (
        "rustup",
        &["toolchain", "component", "target", "override", "self"],
        &[],
    ),
    (
        "make",
        &[],
        &["-s", "-k", "-B", "-n", "--silent", "--keep-going"],
    ),
    ("just", &[], &[]),
    ("gh", &["*"], &[]),
    ("pip", &[], &["-q", "--quiet"]),
    ("pip3", &[], &["-q", "--quiet"]),
    ("uv", &["pip"], &["-q", "--quiet"]),
];

/// Git subcommands a signature may name; the rest (config, aliases, commands that run
/// programs) are exact-only.
const GIT_SIGNABLE: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "branch",
    "add",
    "commit",
    "checkout",
    "switch",
    "restore",
    "fetch",
    "pull",
    "push",
    "merge",
    "rebase",
    "stash",
    "tag",
    "reset",
    "rm",
    "mv",
    "blame",
    "grep",
    "remote",
    "clone",
    "init",
    "cherry-pick",
    "revert",
    "describe",
    "rev-parse",
    "ls-files",
    "ls-tree",
    "shortlog",
    "reflog",
    "show-ref",
    "cat-file",
    "rev-list",
    "worktree",
    "clean",
    "format-patch",
    "apply",
    "merge-base",
    "range-diff",
];

/// Signatures of every command of a line, sorted and deduplicated, or `None` when the
/// line may not be granted by signature (it does not parse, or a command runs code).
pub fn signatures(line: &str) -> Option<Vec<CommandSignature>> {
    let mut sigs = Vec::new();
    for cmd in shell::parse(line)? {
        sigs.push(signature(&cmd)?);
    }
    sigs.sort();
    sigs.dedup();
    Some(sigs)
}

/// The signature of one command, or `None` when it may not have one.
pub fn signature(cmd: &SimpleCommand) -> Option<CommandSignature> {
    if !cmd.assignments.is_empty() || cmd.words.iter().any(|w| w.dynamic) {
        return None;
    }
    if !cmd.redirects.iter().all(harmless_redirect) {
        return None;
    }
    let exe = cmd.words.first()?.text.clone();
    let name = resolve::base_name(&exe);
    let rest = &cmd.words[1..];
    let mut flags: Vec<String> = rest
        .iter()
        .filter(|w| w.text.len() > 1 && w.text.starts_with('-'))
        .map(|w| w.text.clone())
        .collect();
    // `tar xIf prog a.tar`: an old-style first word is an option cluster.
    if name == "tar"
        && let Some(first) = rest.first()
        && !first.text.starts_with('-')
    {
        flags.push(format!("-{}", first.text));
    }
    // `make test CC=evil`, `just x=y recipe`: a variable set on the command line can make
    // the granted target run anything.
    if matches!(name, "make" | "just") && rest.iter().any(|w| w.text.contains('=')) {
        return None;
    }
    flags.sort();
    flags.dedup();
    if let Some((_, bad)) = RUNS_CODE_FLAGS.iter().find(|(n, _)| *n == name)
        && flags
            .iter()
            .any(|f| bad.iter().any(|b| resolve::option_matches(f, b)))
    {
        return None;
    }
    if !modelled_signable(name, rest) {
        return None;
    }
    let subcommand = if PLAIN.contains(&name) {
        if name == "sed" {
            let scripts = resolve::sed_scripts(rest)?;
            if scripts.iter().any(|s| resolve::sed_runs(s, "ewWrR")) {
                return None;
            }
        }
        Vec::new()
    } else if let Some((_, two_level, globals)) =
        WITH_SUBCOMMANDS.iter().find(|(n, _, _)| *n == name)
    {
        subcommand_of(name, rest, two_level, globals)?
    } else {
        // Any other command: signed only when it has no operands (an operand might be a
        // subcommand or a program).
        if rest
            .iter()
            .any(|w| !w.text.starts_with('-') || w.text == "-")
        {
            return None;
        }
        if is_code_runner(name) {
            return None;
        }
        Vec::new()
    };
    let all: Vec<String> = rest.iter().map(|w| w.text.clone()).collect();
    if exact_form(name, &all) {
        // The whole command, in order: nothing else falls under it.
        return Some(CommandSignature {
            exe,
            subcommand: all,
            flags: Vec::new(),
        });
    }
    Some(CommandSignature {
        exe,
        subcommand,
        flags,
    })
}

/// Forms whose operands decide what is destroyed, installed, set or run, so a signature
/// for "any operands" would cover far more than the person saw: their signature is the
/// whole command. `args` are the words after the executable, in order.
fn exact_form(name: &str, args: &[String]) -> bool {
    let words: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|w| !w.starts_with('-'))
        .collect();
    let first = words.first().copied().unwrap_or_default();
    let second = words.get(1).copied().unwrap_or_default();
    match name {
        // What they overwrite is an operand: a grant for `cp a b` must not cover `cp a
        // ~/.bashrc`.
        "rm" | "cp" | "mv" | "tee" => true,
        "tar" => writes_named_file(&resolve::options::TAR, resolve::tar_words(&literal(args))),
        "sort" => writes_named_file(&resolve::options::SORT, Some(literal(args))),
        "git" => {
            matches!(first, "checkout" | "restore" | "reset" | "clean" | "rm")
                || git_writes_named(first, args)
                || (first == "stash" && matches!(second, "drop" | "clear" | "pop"))
                || (first == "branch"
                    && args.iter().any(|w| {
                        matches!(
                            w.as_str(),
                            "-D" | "-d" | "--delete" | "-f" | "--force" | "-M"
                        )
                    }))
        }
        "npm" | "pnpm" | "yarn" => {
            matches!(
                first,
                "install" | "i" | "add" | "ci" | "update" | "up" | "upgrade" | "remove" | "rm"
            ) || (matches!(first, "pkg" | "config")
                && matches!(second, "set" | "delete" | "fix" | "edit" | "rm" | "unset"))
        }
        "pip" | "pip3" => matches!(first, "install" | "download" | "wheel" | "uninstall"),
        "uv" => first == "pip" && matches!(second, "install" | "sync" | "uninstall"),
        "cargo" => words.contains(&"install"),
        "rustup" => first == "run",
        "go" => matches!(first, "install" | "get"),
        _ => false,
    }
}

/// `git SUB …` that rewrites remote refs (`push +ref`, `push --force` …) or writes a file
/// it names (`log --output FILE`); also when its arguments are not understood.
fn git_writes_named(sub: &str, args: &[String]) -> bool {
    let Some(p) = args.iter().position(|a| a == sub) else {
        return false;
    };
    let rest = literal(&args[p + 1..]);
    if sub == "push" {
        return resolve::git_push_rewrites(&rest);
    }
    resolve::git_parse(sub, &rest).is_none_or(|parsed| parsed.has(resolve::options::Tag::Exact))
}

fn literal(args: &[String]) -> Vec<Word> {
    resolve::options::literal_words(args)
}

/// True when the call writes a file it names (`tar -c`, `sort -o`), or is not understood.
fn writes_named_file(model: &resolve::options::Model, words: Option<Vec<Word>>) -> bool {
    words
        .and_then(|w| model.parse(&w))
        .is_none_or(|p| p.has(resolve::options::Tag::Exact))
}

fn subcommand_of(
    name: &str,
    rest: &[Word],
    two_level: &[&str],
    globals: &[&str],
) -> Option<Vec<String>> {
    let mut i = 0;
    // Flags before the subcommand: only those known to take no value.
    while let Some(w) = rest.get(i) {
        if !w.text.starts_with('-') || w.text == "-" {
            break;
        }
        if !globals.contains(&w.text.as_str()) {
            return None;
        }
        i += 1;
    }
    // No subcommand (`make`, `cargo --version`): only lines without one match.
    let Some(first) = rest.get(i) else {
        return Some(Vec::new());
    };
    let mut sub = vec![first.text.clone()];
    if name == "cargo" && sub[0].starts_with('+') {
        sub.push(rest.get(i + 1)?.text.clone());
        i += 1;
    }
    // A subcommand that runs a command the line names (`npm exec`, `uv run`) is never
    // signed; `rustup run` gets the whole-command signature instead (see `exact_form`).
    if name != "rustup" && resolve::runs_command_subcommand(name, rest) {
        return None;
    }
    if name == "git" {
        if !GIT_SIGNABLE.contains(&sub[0].as_str())
            || resolve::git_runs_code(&sub[0], &rest[i + 1..])
        {
            return None;
        }
        debug_assert!(GIT_BUILTINS.contains(&sub[0].as_str()));
    }
    if two_level.contains(&"*") || two_level.contains(&sub[sub.len() - 1].as_str()) {
        // The second level is the next operand; a flag before it has an unknown arity.
        match rest.get(i + 1) {
            Some(w) if !w.text.starts_with('-') => sub.push(w.text.clone()),
            Some(_) => return None,
            None => {}
        }
    }
    Some(sub)
}

/// `N>&M`, `>&N` and anything to or from `/dev/null` write no file.
fn harmless_redirect(r: &shell::Redirect) -> bool {
    if r.target.dynamic {
        return false;
    }
    let t = r.target.text.as_str();
    if r.op.ends_with(">&") || r.op.ends_with("<&") {
        return t == "-" || t.chars().all(|c| c.is_ascii_digit());
    }
    t == "/dev/null"
}

/// True when every command of `line` has one of the granted signatures.
pub fn covered(line: &str, granted: &[CommandSignature]) -> bool {
    signatures(line).is_some_and(|sigs| sigs.iter().all(|s| granted.contains(s)))
}

/// What a signature grant allows, in words, for the choice's description.
pub fn describe_scope(sigs: &[CommandSignature]) -> String {
    let parts: Vec<String> = sigs.iter().map(CommandSignature::describe).collect();
    format!(
        "From now on in this project, bash may run without asking any line made only of: {}; \
         joined by pipes or lists. Different flags, another subcommand, redirections to \
         files, variables, globs, commands that run other commands, and writes to files Shard \
         or git trusts (.git, .shard, .mcp.json, .gitmodules) still ask.",
        parts.join("; ")
    )
}
