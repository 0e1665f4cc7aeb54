//! Programs whose arguments may be code: git (aliases, `-c`, subcommands that run
//! programs), awk, sed and the interpreters.

use super::Inner;
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

/// `git` with its global options removed, so `git -C x push` is `git push`; `-c`,
/// `--config-env`, `--exec-path=…`, an alias, a subcommand that runs a command (`bisect
/// run`, `submodule foreach`, `rebase --exec`, `filter-branch`, `difftool -x`, `grep -O`)
/// or a transport program option (`--upload-pack`, `--receive-pack`, `--exec`) is unknown.
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
            "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix" => i += 2,
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
            | "--no-advice" => i += 1,
            "--version" | "-v" | "--help" | "-h" | "--exec-path" | "--html-path" | "--man-path"
            | "--info-path" => return Inner::None,
            _ if t.starts_with("--git-dir=")
                || t.starts_with("--work-tree=")
                || t.starts_with("--namespace=") =>
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

/// True when a git subcommand with these arguments runs a program the line names.
pub fn git_runs_code(sub: &str, args: &[Word]) -> bool {
    let has = |f: &dyn Fn(&str) -> bool| args.iter().any(|w| f(&w.text));
    if has(&|t| {
        t.starts_with("--upload-pack")
            || t.starts_with("--receive-pack")
            || t.starts_with("--exec")
            || t.starts_with("--config")
            || t.starts_with("--template")
    }) {
        return true;
    }
    match sub {
        "bisect" => has(&|t| t == "run"),
        "submodule" => has(&|t| t == "foreach"),
        "filter-branch" | "mergetool" | "credential" | "hook" | "daemon" | "instaweb"
        | "send-email" => true,
        "rebase" => {
            has(&|t| t == "-x" || (t.starts_with('-') && !t.starts_with("--") && t.contains('x')))
        }
        "difftool" => has(&|t| t == "-x" || t.starts_with("--extcmd") || t.starts_with("-x")),
        "grep" => has(&|t| t.starts_with("-O") || t.starts_with("--open-files-in-pager")),
        "clone" | "fetch" | "pull" | "ls-remote" | "archive" => {
            has(&|t| t == "-u" || t == "-c" || (sub == "clone" && t.starts_with("-u")))
        }
        "config" => false,
        _ => false,
    }
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

/// The scripts a `sed` call runs (`-e` values, or the first operand), or `None` when they
/// cannot be known (`-f FILE`, a dynamic word).
pub fn sed_scripts(rest: &[Word]) -> Option<Vec<String>> {
    let mut scripts = Vec::new();
    let mut operands = Vec::new();
    let mut i = 0;
    let mut end_of_options = false;
    while i < rest.len() {
        let w = &rest[i];
        if w.dynamic {
            return None;
        }
        let t = w.text.as_str();
        if !end_of_options && t == "--" {
            end_of_options = true;
        } else if !end_of_options && (t == "-e" || t == "--expression") {
            scripts.push(rest.get(i + 1)?.text.clone());
            i += 1;
        } else if !end_of_options && let Some(s) = t.strip_prefix("--expression=") {
            scripts.push(s.to_string());
        } else if !end_of_options
            && (t == "-f"
                || t.starts_with("--file")
                || (t.starts_with('-') && !t.starts_with("--") && t.contains('f')))
        {
            return None;
        } else if !end_of_options && t.starts_with("-e") {
            scripts.push(t[2..].to_string());
        } else if !end_of_options && (t == "-l" || t == "--line-length") {
            i += 1;
        } else if !end_of_options && t.starts_with('-') && t.len() > 1 {
        } else {
            operands.push(t.to_string());
        }
        i += 1;
    }
    if scripts.is_empty() {
        scripts.push(operands.first()?.clone());
    }
    Some(scripts)
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
    (
        "tar",
        &[
            "-I",
            "--use-compress-program",
            "--to-command",
            "--checkpoint-action",
            "--info-script",
            "-F",
            "--new-volume-script",
        ],
    ),
    ("rg", &["--pre"]),
    ("sort", &["--compress-program"]),
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
/// [`PROGRAM_OPTIONS`]); a one-letter option also counts inside a cluster (`-xIf`), and
/// tar's old-style first word (`xIf`) is a cluster.
pub fn runs_program_option(name: &str, rest: &[Word]) -> bool {
    let Some((_, options)) = PROGRAM_OPTIONS.iter().find(|(n, _)| *n == name) else {
        return false;
    };
    rest.iter().enumerate().any(|(i, w)| {
        let t = if name == "tar" && i == 0 && !w.text.starts_with('-') {
            format!("-{}", w.text)
        } else {
            w.text.clone()
        };
        options.iter().any(|o| {
            t.starts_with(o)
                || (o.len() == 2
                    && o.starts_with('-')
                    && t.starts_with('-')
                    && !t.starts_with("--")
                    && t[1..].contains(&o[1..]))
        })
    })
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
