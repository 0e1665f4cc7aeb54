//! Programs whose arguments may be code: git (aliases, `-c`, subcommands that run
//! programs), awk, sed and the interpreters.

use super::Inner;
use super::options::{self, Model, Parsed, Tag};
use crate::shell::Word;

/// Git's built-in commands (aliases cannot shadow them). Any other subcommand may be an
/// alias, which may run any shell command.
pub const GIT_BUILTINS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archive",
    "bisect",
    "blame",
    "branch",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "checkout",
    "checkout-index",
    "cherry",
    "cherry-pick",
    "clean",
    "clone",
    "commit",
    "commit-graph",
    "commit-tree",
    "config",
    "count-objects",
    "credential",
    "describe",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "difftool",
    "fetch",
    "fetch-pack",
    "filter-branch",
    "for-each-ref",
    "format-patch",
    "fsck",
    "gc",
    "grep",
    "hash-object",
    "help",
    "init",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "merge",
    "merge-base",
    "merge-file",
    "mergetool",
    "mktag",
    "mktree",
    "mv",
    "notes",
    "pull",
    "push",
    "range-diff",
    "read-tree",
    "rebase",
    "reflog",
    "remote",
    "repack",
    "replace",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "send-email",
    "shortlog",
    "show",
    "show-branch",
    "show-ref",
    "sparse-checkout",
    "stash",
    "status",
    "submodule",
    "switch",
    "symbolic-ref",
    "tag",
    "update-index",
    "update-ref",
    "var",
    "verify-commit",
    "verify-tag",
    "version",
    "whatchanged",
    "worktree",
    "write-tree",
    "maintenance",
    "prune",
    "hook",
    "daemon",
    "instaweb",
];

/// `git` with its global options removed, so `git -C x push` is `git push`. Global options
/// are an allow-list matched exactly (git does not abbreviate them: `--exe=` is refused by
/// git and unknown here); `-c`, `--config-env`, `--exec-path=…`, an alias, and whatever
/// [`git_runs_code`] finds in the subcommand's arguments (read with the subcommand's model,
/// `options::git`) are unknown.
pub(super) fn git(rest: &[Word]) -> Inner {
    let mut i = 0;
    while i < rest.len() {
        let w = &rest[i];
        if w.dynamic {
            return Inner::Unknown;
        }
        let t = w.text.as_str();
        if !t.starts_with('-') {
            break;
        }
        match t {
            "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix"
            | "--attr-source" => i += 2,
            "-p"
            | "--paginate"
            | "-P"
            | "--no-pager"
            | "--bare"
            | "--no-replace-objects"
            | "--literal-pathspecs"
            | "--glob-pathspecs"
            | "--noglob-pathspecs"
            | "--icase-pathspecs"
            | "--no-optional-locks"
            | "--no-lazy-fetch"
            | "--no-advice" => i += 1,
            "--version" | "-v" | "--help" | "-h" | "--exec-path" | "--html-path" | "--man-path"
            | "--info-path" => return Inner::None,
            _ if t.starts_with("--git-dir=")
                || t.starts_with("--work-tree=")
                || t.starts_with("--namespace=")
                || t.starts_with("--attr-source=") =>
            {
                i += 1
            }
            _ => return Inner::Unknown,
        }
    }
    let Some(sub) = rest.get(i) else {
        return Inner::None;
    };
    if !GIT_BUILTINS.contains(&sub.text.as_str()) {
        return Inner::Unknown;
    }
    let args = &rest[i + 1..];
    if git_runs_code(&sub.text, args) {
        return Inner::Unknown;
    }
    let mut words = vec![Word {
        text: "git".into(),
        dynamic: false,
    }];
    words.extend_from_slice(&rest[i..]);
    Inner::Final(words)
}

/// True when a git subcommand with these arguments may run a program the line names, or
/// is not understood: an option its model does not declare, an abbreviation that is not
/// unique (`--rec=`), an option that runs a program (`--upload-pack` and its
/// abbreviations `--upload-p=`, `-u`, `--exec`, `rebase -x`, `grep -O`, `clone -c`), or a
/// second level that runs one (`bisect run`, `submodule foreach`).
pub fn git_runs_code(sub: &str, args: &[Word]) -> bool {
    let Some(parsed) = git_parse(sub, args) else {
        return true;
    };
    if parsed.has(Tag::Code) {
        return true;
    }
    let operand = |t: &str| parsed.operands.iter().any(|w| w.text == t);
    match sub {
        "bisect" => operand("run"),
        "submodule" => operand("foreach"),
        "filter-branch" | "mergetool" | "credential" | "hook" | "daemon" | "instaweb"
        | "send-email" => true,
        _ => false,
    }
}

/// A git subcommand's arguments read with its model; `None` when not understood.
pub fn git_parse(sub: &str, args: &[Word]) -> Option<Parsed> {
    options::git(sub)?.parse(args)
}

/// True when `git push` with these arguments may overwrite or delete remote refs: a
/// force (`--force`, `-f` in a cluster, `--force-with-lease`, `--force-if-includes`),
/// `--mirror`, `--delete`/`-d`, `--prune`, or a refspec `+src:dst` or `:dst`. Such a push
/// is signed as the whole command. Words that are not options are all looked at, values
/// included (`--repo +x` asks too: over-asking is the safe side). Not understood: true.
pub fn git_push_rewrites(args: &[Word]) -> bool {
    let Some(parsed) = git_parse("push", args) else {
        return true;
    };
    parsed.has(Tag::Exact)
        || args.iter().any(|w| {
            !w.text.starts_with('-') && (w.text.starts_with('+') || w.text.starts_with(':'))
        })
}

pub(super) fn awk(rest: &[Word]) -> Inner {
    // A program that calls `system`, pipes to or from a command, or is read from a file.
    let mut i = 0;
    while i < rest.len() {
        let t = rest[i].text.as_str();
        if rest[i].dynamic {
            return Inner::Unknown;
        }
        if t == "-f" || t.starts_with("--file") || t.starts_with("-f") {
            return Inner::Unknown;
        }
        if t == "-v" || t == "-F" {
            i += 2;
            continue;
        }
        if t.starts_with('-') {
            i += 1;
            continue;
        }
        break;
    }
    match rest.get(i) {
        Some(p)
            if !p.text.contains("system")
                && !p.text.contains('|')
                && !p.text.contains("getline") =>
        {
            Inner::None
        }
        _ => Inner::Unknown,
    }
}

/// The scripts a `sed` call runs (`-e` values in any spelling — `-ne`, `--e=`, `--expr`
/// — or the first operand), or `None` when they cannot be known: a script file (`-f`,
/// `-nf`, `--fi=`), a dynamic script, an option sed's model does not declare.
pub fn sed_scripts(rest: &[Word]) -> Option<Vec<String>> {
    let parsed = options::SED.parse(rest)?;
    if parsed.has(Tag::Code) {
        return None;
    }
    let mut scripts = Vec::new();
    for o in parsed.options.iter().filter(|o| o.tag == Tag::Script) {
        let v = o.value.as_ref()?;
        if v.dynamic {
            return None;
        }
        scripts.push(v.text.clone());
    }
    if scripts.is_empty() {
        let first = parsed.operands.first()?;
        if first.dynamic {
            return None;
        }
        scripts.push(first.text.clone());
    }
    Some(scripts)
}

/// What `make` runs beyond its makefile's recipes: `--eval`/`-E` (in any spelling: `--ev=`,
/// `-E…` in a cluster) evaluates makefile text the line names, and a variable set on the
/// command line (`SHELL=…`, `CC=…`) changes what every recipe runs; either, or an option
/// the model does not declare, is unknown.
pub(super) fn make(rest: &[Word]) -> Inner {
    match options::MAKE.parse(rest) {
        Some(p) if !p.has(Tag::Code) && !p.operands.iter().any(|w| w.text.contains('=')) => {
            Inner::None
        }
        _ => Inner::Unknown,
    }
}

/// A modelled data program (`tar`, `sort`): unknown when an option runs a program the
/// line names (`--to-command`, `--to-com=`, `-I` in a cluster or in tar's old-style first
/// word, `--compress-program`) or is not understood.
pub(super) fn modelled(model: &Model, name: &str, rest: &[Word]) -> Inner {
    let words = if name == "tar" {
        tar_words(rest)
    } else {
        Some(rest.to_vec())
    };
    match words.and_then(|w| model.parse(&w)) {
        Some(p) if !p.has(Tag::Code) => Inner::None,
        _ => Inner::Unknown,
    }
}

/// tar's arguments with an old-style first word (`xIf prog a.tar`) spelled as options
/// (`-x -I prog -f a.tar`): each letter that takes a value takes the next word, in order.
/// `None` when the words run out.
pub fn tar_words(rest: &[Word]) -> Option<Vec<Word>> {
    let Some(first) = rest.first() else {
        return Some(Vec::new());
    };
    if first.text.starts_with('-') || first.dynamic {
        return Some(rest.to_vec());
    }
    let mut out = Vec::new();
    let mut next = 1;
    for c in first.text.chars() {
        out.push(Word {
            text: format!("-{c}"),
            dynamic: false,
        });
        let takes = options::TAR
            .parse(&[Word {
                text: format!("-{c}"),
                dynamic: false,
            }])
            .is_none();
        if takes {
            // A letter not declared is caught by the parse of the result.
            out.push(rest.get(next)?.clone());
            next += 1;
        }
    }
    out.extend_from_slice(&rest[next..]);
    Some(out)
}

/// True when a sed script may use one of `commands` (e.g. `e` runs a shell command, `w`
/// writes a file). Errs towards true: a command letter counts unless it follows a letter
/// that cannot precede it in a command or an `s` flag list.
pub fn sed_runs(script: &str, commands: &str) -> bool {
    let chars: Vec<char> = script.chars().collect();
    chars.iter().enumerate().any(|(i, c)| {
        commands.contains(*c)
            && match i.checked_sub(1).map(|p| chars[p]) {
                None => true,
                Some(p) => !p.is_ascii_alphabetic() || "gpiImMeEwW".contains(p),
            }
    })
}

/// Interpreters: their arguments are programs or scripts.
pub fn is_interpreter(name: &str) -> bool {
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    matches!(
        stem,
        "python"
            | "pypy"
            | "perl"
            | "ruby"
            | "node"
            | "nodejs"
            | "deno"
            | "bun"
            | "php"
            | "lua"
            | "luajit"
            | "Rscript"
            | "R"
            | "julia"
            | "tclsh"
            | "wish"
            | "osascript"
            | "pwsh"
            | "powershell"
            | "groovy"
            | "scala"
            | "jshell"
            | "irb"
            | "ghci"
            | "runghc"
            | "swift"
            | "java"
            | "kotlin"
            | "elixir"
            | "erl"
            | "escript"
            | "racket"
            | "guile"
            | "sbcl"
            | "clisp"
            | "ocaml"
            | "gnuplot"
            | "octave"
            | "matlab"
            | "jq-exec"
    )
}

/// An interpreter with inline code (`-c`, `-e`, `-r`, `--eval`…) or reading its program
/// from input runs something unknown; with a script file it runs that file (known only by
/// its name, like `./script.sh`).
pub(super) fn interpreter(name: &str, rest: &[Word]) -> Inner {
    let inline = rest
        .iter()
        .take_while(|w| w.text.starts_with('-'))
        .any(|w| {
            let t = w.text.as_str();
            matches!(
                t,
                "-c" | "-e" | "-E" | "-r" | "-p" | "--eval" | "--print" | "-m" | "-x" | "-"
            ) || (t.starts_with('-')
                && !t.starts_with("--")
                && (t.contains('c') || t.contains('e')))
                || t.starts_with("--eval=")
        });
    let has_operand = rest.iter().any(|w| !w.text.starts_with('-'));
    let evaluates =
        matches!(name, "deno" | "bun") && rest.first().is_some_and(|w| w.text == "eval");
    if inline || evaluates || !has_operand || matches!(name, "osascript" | "pwsh" | "powershell") {
        Inner::Unknown
    } else {
        Inner::None
    }
}

/// Options (prefixes) with which an otherwise data-only program runs a command the line
/// names: `tar -I cmd`, `rg --pre cmd`, `scp -S cmd`, `rsync -e cmd`, `vim -c '!cmd'` …
const PROGRAM_OPTIONS: &[(&str, &[&str])] = &[
    ("rg", &["--pre"]),
    ("zip", &["-TT", "--unzip-command"]),
    ("scp", &["-S"]),
    ("rsync", &["-e", "--rsh", "--rsync-path"]),
    ("vim", &["-c", "+", "--cmd", "-S"]),
    ("vi", &["-c", "+", "--cmd", "-S"]),
    ("nvim", &["-c", "+", "--cmd", "-S"]),
    ("man", &["-P", "--pager", "-H", "--html"]),
    ("go", &["-exec", "-toolexec"]),
    ("cargo", &["--config"]),
    ("less", &["+"]),
];

/// True when `name` is given an option that makes it run a command (see
/// [`PROGRAM_OPTIONS`]); a one-letter option also counts inside a cluster (`-xIf`), and a
/// long option also in any abbreviation (`--rs=` for `--rsh`). These programs are not
/// modelled option by option (tar, sort, sed, make and git are: `options`).
pub fn runs_program_option(name: &str, rest: &[Word]) -> bool {
    let Some((_, options)) = PROGRAM_OPTIONS.iter().find(|(n, _)| *n == name) else {
        return false;
    };
    rest.iter()
        .any(|w| options.iter().any(|o| option_matches(&w.text, o)))
}

/// True when the word `t` may be the option `o`: `o` itself or with a value (`--rsh=x`,
/// `-ecmd`), `o` inside a cluster of one-letter options (`-ve`), or a unique-prefix
/// abbreviation of a long `o` (`--rsync-p=x`), as GNU `getopt_long` accepts it.
pub fn option_matches(t: &str, o: &str) -> bool {
    if t.starts_with(o) {
        return true;
    }
    if let (Some(long), Some(full)) = (t.strip_prefix("--"), o.strip_prefix("--")) {
        let name = long.split('=').next().unwrap_or(long);
        return !name.is_empty() && full.starts_with(name);
    }
    o.len() == 2
        && o.starts_with('-')
        && t.starts_with('-')
        && !t.starts_with("--")
        && t[1..].contains(&o[1..])
}

/// Subcommands that run the command named after them (`rustup run stable git push`,
/// `npm exec -- git push`, `poetry run git push`): what they run is not followed here, so
/// it is unknown.
const RUNS_COMMAND_SUBCOMMANDS: &[(&str, &[&str])] = &[
    ("npm", &["exec", "x", "explore"]),
    ("pnpm", &["exec", "dlx"]),
    ("yarn", &["exec", "dlx"]),
    ("uv", &["run", "tool"]),
    ("rustup", &["run"]),
    ("poetry", &["run"]),
    ("pipenv", &["run"]),
    ("pdm", &["run"]),
    ("hatch", &["run"]),
    ("conda", &["run"]),
    ("bundle", &["exec"]),
    ("nix", &["run", "shell", "develop"]),
    ("nix-shell", &["--run", "--command"]),
    ("direnv", &["exec"]),
    ("mise", &["exec", "x"]),
    ("asdf", &["exec"]),
    ("rbenv", &["exec"]),
    ("pyenv", &["exec"]),
];

/// True when `name`'s first operand (after its options) is a subcommand that runs a
/// command the line names (see [`RUNS_COMMAND_SUBCOMMANDS`]).
pub fn runs_command_subcommand(name: &str, rest: &[Word]) -> bool {
    let Some((_, subs)) = RUNS_COMMAND_SUBCOMMANDS.iter().find(|(n, _)| *n == name) else {
        return false;
    };
    // Any word may be the subcommand after options of unknown arity: look at all.
    rest.iter()
        .any(|w| w.dynamic || subs.contains(&w.text.as_str()))
}
