//! What a parsed `bash` line will run, for deny and allow rules: every simple command, and
//! inside each the commands its wrappers run (`sudo`, `env`, `timeout`, `nice`, `nohup`,
//! `xargs`, `find -exec`, `bash -c`, `ssh host cmd`, `git` without its global options …).
//! Whatever cannot be known — a substitution, `eval`, a variable in command position, a
//! git alias, inline interpreter code — becomes an [`Effective`] that is *open*: its
//! known words are a prefix and anything may follow, so a deny rule that could match
//! any completion matches it (fail closed).

use crate::shell::{self, SimpleCommand, Word};

/// Nesting bound for `bash -c 'bash -c …'`: deeper is treated as unknown.
const MAX_DEPTH: usize = 6;

/// One command the line may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effective {
    /// The words known for sure, in order.
    pub words: Vec<String>,
    /// More (unknown) words may follow, or the known words are not the whole story.
    pub open: bool,
}

impl Effective {
    /// A command about which nothing is known.
    pub fn anything() -> Effective {
        Effective {
            words: Vec::new(),
            open: true,
        }
    }

    /// The known words joined with single spaces.
    pub fn text(&self) -> String {
        self.words.join(" ")
    }
}

/// Every command a line may run; a line that does not parse is one open command.
pub fn effective(line: &str) -> Vec<Effective> {
    let mut out = Vec::new();
    line_into(line, 0, &mut out);
    out
}

fn line_into(line: &str, depth: usize, out: &mut Vec<Effective>) {
    match shell::parse(line) {
        Some(cmds) if depth < MAX_DEPTH => {
            for c in &cmds {
                command_into(c, depth, out);
            }
        }
        _ => out.push(Effective::anything()),
    }
}

fn command_into(cmd: &SimpleCommand, depth: usize, out: &mut Vec<Effective>) {
    // An assignment may change what the command does (`GIT_CONFIG_*`, `LD_PRELOAD`,
    // `PATH`); it is not followed.
    if !cmd.assignments.is_empty() {
        out.push(Effective::anything());
        return;
    }
    words_into(&cmd.words, depth, out);
}

/// The known prefix of `words` (up to the first dynamic word).
fn known(words: &[Word]) -> Effective {
    let k = words.iter().position(|w| w.dynamic).unwrap_or(words.len());
    Effective {
        words: words[..k].iter().map(|w| w.text.clone()).collect(),
        open: k < words.len(),
    }
}

/// The executable's name without its directory (`/usr/bin/git` → `git`).
pub fn base_name(exe: &str) -> &str {
    exe.rsplit('/').next().unwrap_or(exe)
}

fn words_into(words: &[Word], depth: usize, out: &mut Vec<Effective>) {
    let Some(first) = words.first() else {
        out.push(Effective::anything());
        return;
    };
    if first.dynamic {
        out.push(Effective::anything());
        return;
    }
    out.push(known(words));
    let rest = &words[1..];
    let name = base_name(&first.text);
    let inner = match name {
        // Builtins that run a string or change what later words mean.
        "eval" | "source" | "." | "alias" | "hash" | "trap" | "export" | "declare" | "typeset"
        | "local" | "readonly" | "shopt" | "enable" | "coproc" | "fc" | "mapfile" | "readarray"
        | "let" => Inner::Unknown,
        "bash" | "sh" | "zsh" | "dash" | "ksh" | "mksh" | "ash" | "fish" | "csh" | "tcsh"
        | "busybox" => shell_inner(rest),
        "su" | "runuser" => flag_string(rest, &["-c", "--command"]),
        "sudo" => sudo(rest),
        "doas" => wrapper(rest, "nL", "uC", &[], &[]).and_then_shell_check(rest, "-s"),
        "env" => env(rest),
        "timeout" => {
            match wrapper(
                rest,
                "v",
                "sk",
                &["--foreground", "--preserve-status", "--verbose"],
                &["--signal", "--kill-after"],
            ) {
                // The duration comes first.
                Inner::Words(w) if w.len() > 1 => Inner::Words(w[1..].to_vec()),
                Inner::Words(_) => Inner::None,
                other => other,
            }
        }
        "nice" => nice(rest),
        "nohup" | "builtin" => Inner::Words(rest.to_vec()),
        "setsid" => wrapper(rest, "cfw", "", &["--ctty", "--fork", "--wait"], &[]),
        "time" => wrapper(
            rest,
            "pvaq",
            "of",
            &["--portability", "--verbose", "--append", "--quiet"],
            &["--output", "--format"],
        ),
        "stdbuf" => wrapper(rest, "", "ioe", &[], &["--input", "--output", "--error"]),
        "ionice" => wrapper(
            rest,
            "t",
            "cnpPu",
            &["--ignore"],
            &["--class", "--classdata", "--pid", "--pgid", "--uid"],
        ),
        "command" => {
            if rest.iter().any(|w| w.text == "-v" || w.text == "-V") {
                Inner::None
            } else {
                wrapper(rest, "p", "", &[], &[])
            }
        }
        "exec" => wrapper(rest, "cl", "a", &[], &[]),
        "xargs" => xargs(rest),
        "watch" => joined_string(
            wrapper(
                rest,
                "bcdegptx",
                "nq",
                &[
                    "--beep",
                    "--color",
                    "--no-color",
                    "--differences",
                    "--errexit",
                    "--chgexit",
                    "--precise",
                    "--no-title",
                    "--exec",
                    "--no-wrap",
                ],
                &["--interval", "--equexit"],
            ),
            rest,
        ),
        "ssh" => ssh(rest),
        "find" => find(rest, depth, out),
        "git" => git(rest),
        "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk" => awk(rest),
        "sed" | "gsed" => {
            if sed_scripts(rest).is_none_or(|s| s.iter().any(|s| sed_runs(s, "e"))) {
                Inner::Unknown
            } else {
                Inner::None
            }
        }
        n if is_interpreter(n) => interpreter(n, rest),
        // Wrappers whose options are not modelled here.
        "chroot" | "unshare" | "nsenter" | "strace" | "ltrace" | "valgrind" | "gdb"
        | "systemd-run" | "script" | "unbuffer" | "parallel" | "at" | "batch" | "pkexec"
        | "firejail" | "bwrap" | "proot" | "fakeroot" | "xvfb-run" | "dbus-run-session"
        | "entr" | "rlwrap" | "catchsegv" | "taskset" | "chrt" | "sg" | "newgrp" | "flock"
        | "npx" | "pnpx" | "bunx" | "uvx" | "expect" | "tmux" | "screen" | "nohup-wrapper"
        | "caffeinate" | "torsocks" | "proxychains" | "proxychains4" | "make-wrapper" => {
            Inner::Unknown
        }
        _ => Inner::None,
    };
    match inner {
        Inner::None => {}
        Inner::Unknown => out.push(Effective::anything()),
        Inner::Words(w) => {
            if depth + 1 >= MAX_DEPTH {
                out.push(Effective::anything());
            } else {
                words_into(&w, depth + 1, out);
            }
        }
        Inner::Open(w) => {
            if depth + 1 >= MAX_DEPTH {
                out.push(Effective::anything());
            } else {
                let mut sub = Vec::new();
                words_into(&w, depth + 1, &mut sub);
                // The command gets more arguments than written.
                if let Some(first) = sub.first_mut() {
                    first.open = true;
                }
                out.extend(sub);
            }
        }
        Inner::Line(s) => line_into(&s, depth + 1, out),
        Inner::Final(w) => out.push(known(&w)),
    }
}

/// What a wrapper runs.
#[derive(Debug, Clone)]
enum Inner {
    /// Nothing beyond itself.
    None,
    /// Something this module cannot know.
    Unknown,
    /// These words as a command.
    Words(Vec<Word>),
    /// These words as a command that gets more arguments (`xargs`).
    Open(Vec<Word>),
    /// A shell line.
    Line(String),
    /// These words as a command that is not itself a wrapper (`git` without its global
    /// options).
    Final(Vec<Word>),
}

impl Inner {
    /// `doas -s` runs a shell.
    fn and_then_shell_check(self, rest: &[Word], flag: &str) -> Inner {
        if rest.iter().any(|w| w.text == flag) {
            Inner::Unknown
        } else {
            self
        }
    }
}

/// Parses a wrapper's options: `short_flags` take no value, `short_values` take one
/// (attached or next word), long options likewise (`--x=v` always accepted for a
/// value-taking long option). Stops at `--` or the first non-option word, which starts the
/// inner command. An option not listed makes the inner command unknown (it might take a
/// value that would be mistaken for the command).
fn wrapper(
    rest: &[Word],
    short_flags: &str,
    short_values: &str,
    long_flags: &[&str],
    long_values: &[&str],
) -> Inner {
    let mut i = 0;
    while i < rest.len() {
        let w = &rest[i];
        if w.dynamic {
            return Inner::Unknown;
        }
        let t = w.text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            let name = format!("--{}", long.split('=').next().unwrap_or(long));
            if long_flags.contains(&name.as_str()) && !long.contains('=') {
                i += 1;
                continue;
            }
            if long_values.contains(&name.as_str()) {
                i += if long.contains('=') { 1 } else { 2 };
                continue;
            }
            return Inner::Unknown;
        }
        if let Some(shorts) = t.strip_prefix('-')
            && !shorts.is_empty()
        {
            let mut consumed_next = false;
            for (pos, c) in shorts.char_indices() {
                if short_values.contains(c) {
                    if pos + c.len_utf8() == shorts.len() {
                        consumed_next = true;
                    }
                    break;
                }
                if !short_flags.contains(c) {
                    return Inner::Unknown;
                }
            }
            i += if consumed_next { 2 } else { 1 };
            continue;
        }
        break;
    }
    if i >= rest.len() {
        return Inner::None;
    }
    Inner::Words(rest[i..].to_vec())
}

fn sudo(rest: &[Word]) -> Inner {
    if rest
        .iter()
        .take_while(|w| w.text.starts_with('-'))
        .any(|w| {
            matches!(w.text.as_str(), "--shell" | "--login" | "--edit")
                || (!w.text.starts_with("--") && w.text.contains(['s', 'i', 'e']))
        })
    {
        return Inner::Unknown;
    }
    wrapper(
        rest,
        "AbEHKknPSlvVBN",
        "ughpCUrtDRT",
        &[
            "--askpass",
            "--background",
            "--preserve-env",
            "--set-home",
            "--remove-timestamp",
            "--reset-timestamp",
            "--non-interactive",
            "--preserve-groups",
            "--stdin",
            "--bell",
            "--list",
        ],
        &[
            "--user",
            "--group",
            "--host",
            "--prompt",
            "--close-from",
            "--other-user",
            "--role",
            "--type",
            "--chdir",
            "--chroot",
            "--command-timeout",
        ],
    )
}

fn env(rest: &[Word]) -> Inner {
    if rest.iter().any(|w| {
        w.text.starts_with("-S") || w.text.starts_with("--split-string") || w.text == "-vS"
    }) {
        return Inner::Unknown;
    }
    match wrapper(
        rest,
        "i0v",
        "uCP",
        &["--ignore-environment", "--null", "--debug"],
        &[
            "--unset",
            "--chdir",
            "--block-signal",
            "--default-signal",
            "--ignore-signal",
        ],
    ) {
        Inner::Words(w) => {
            // `NAME=value` words set the inner command's environment, which may change
            // what it does (`GIT_CONFIG_*`, `LD_PRELOAD`): not followed.
            if w.first().is_some_and(|f| f.dynamic || f.text.contains('=')) {
                Inner::Unknown
            } else {
                Inner::Words(w)
            }
        }
        other => other,
    }
}

fn nice(rest: &[Word]) -> Inner {
    // `nice -5 cmd` is an old spelling of `-n 5`.
    if rest.first().is_some_and(|w| {
        w.text.len() > 1
            && w.text[1..].chars().all(|c| c.is_ascii_digit())
            && w.text.starts_with('-')
    }) {
        return Inner::Words(rest[1..].to_vec());
    }
    wrapper(rest, "", "n", &[], &["--adjustment"])
}

fn xargs(rest: &[Word]) -> Inner {
    // `-I R` / `-i` replace R in the arguments with input: only the executable is known.
    let replaces = rest
        .iter()
        .take_while(|w| w.text.starts_with('-'))
        .any(|w| {
            w.text.starts_with("-I") || w.text.starts_with("-i") || w.text.starts_with("--replace")
        });
    match wrapper(
        rest,
        "0oprtx",
        "adEILnPsie",
        &[
            "--null",
            "--open-tty",
            "--interactive",
            "--no-run-if-empty",
            "--verbose",
            "--exit",
            "--show-limits",
        ],
        &[
            "--arg-file",
            "--delimiter",
            "--eof",
            "--replace",
            "--max-lines",
            "--max-args",
            "--max-procs",
            "--max-chars",
            "--process-slot-var",
        ],
    ) {
        Inner::Words(w) if replaces => Inner::Open(w[..1].to_vec()),
        Inner::Words(w) => Inner::Open(w),
        // `xargs` alone runs `echo`.
        Inner::None => Inner::None,
        other => other,
    }
}

/// `bash -c STRING`: the string is a line; `bash FILE` runs a script (known only by
/// name); `bash` alone or `-s` reads commands from its input — unknown.
fn shell_inner(rest: &[Word]) -> Inner {
    let mut i = 0;
    let mut command_string = false;
    while i < rest.len() {
        let t = rest[i].text.as_str();
        if rest[i].dynamic {
            return Inner::Unknown;
        }
        if t == "--" || t == "-" {
            i += 1;
            break;
        }
        if t == "-o" || t == "+o" || t == "-O" || t == "+O" || t == "--rcfile" || t == "--init-file"
        {
            i += 2;
            continue;
        }
        if let Some(flags) = t.strip_prefix('-').or_else(|| t.strip_prefix('+')) {
            if flags.starts_with('-') {
                i += 1;
                continue;
            }
            if flags.contains('c') {
                command_string = true;
            }
            if flags.contains('s') || flags.contains('i') {
                return Inner::Unknown;
            }
            i += 1;
            continue;
        }
        break;
    }
    match (command_string, rest.get(i)) {
        (true, Some(w)) if !w.dynamic => Inner::Line(w.text.clone()),
        (true, _) => Inner::Unknown,
        (false, Some(_)) => Inner::None,
        (false, None) => Inner::Unknown,
    }
}

/// `su -c STRING`.
fn flag_string(rest: &[Word], flags: &[&str]) -> Inner {
    match rest.iter().position(|w| flags.contains(&w.text.as_str())) {
        Some(i) => match rest.get(i + 1) {
            Some(w) if !w.dynamic => Inner::Line(w.text.clone()),
            _ => Inner::Unknown,
        },
        None if rest.iter().any(|w| w.text.starts_with("--command=")) => Inner::Unknown,
        None => Inner::Unknown,
    }
}

/// `watch … CMD ARGS`: the words are joined and run by a shell.
fn joined_string(inner: Inner, _rest: &[Word]) -> Inner {
    match inner {
        Inner::Words(w) => {
            if w.iter().any(|w| w.dynamic) {
                Inner::Unknown
            } else {
                let parts: Vec<&str> = w.iter().map(|w| w.text.as_str()).collect();
                Inner::Line(parts.join(" "))
            }
        }
        other => other,
    }
}

fn ssh(rest: &[Word]) -> Inner {
    let mut i = 0;
    while i < rest.len() {
        let t = rest[i].text.as_str();
        if rest[i].dynamic {
            return Inner::Unknown;
        }
        if let Some(flags) = t.strip_prefix('-') {
            if flags.is_empty() {
                return Inner::Unknown;
            }
            let last = flags.chars().last().unwrap_or(' ');
            let takes_value = "BbcDEeFIiJLlmOoPpQRSWw".contains(last) && flags.len() == 1
                || flags
                    .chars()
                    .position(|c| "BbcDEeFIiJLlmOoPpQRSWw".contains(c))
                    == Some(flags.len() - 1);
            i += if takes_value { 2 } else { 1 };
            continue;
        }
        break;
    }
    // rest[i] is the host; what follows is the remote command line.
    let cmd = rest.get(i + 1..).unwrap_or_default();
    if cmd.is_empty() {
        return Inner::None;
    }
    joined_string(Inner::Words(cmd.to_vec()), rest)
}

fn find(rest: &[Word], depth: usize, out: &mut Vec<Effective>) -> Inner {
    let mut i = 0;
    while i < rest.len() {
        let t = rest[i].text.as_str();
        if matches!(t, "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i + 1;
            let mut end = start;
            while end < rest.len() && rest[end].text != ";" && rest[end].text != "+" {
                end += 1;
            }
            // `{}` is replaced by file names.
            let words: Vec<Word> = rest[start..end]
                .iter()
                .map(|w| Word {
                    text: w.text.clone(),
                    dynamic: w.dynamic || w.text.contains("{}"),
                })
                .collect();
            if depth + 1 >= MAX_DEPTH {
                out.push(Effective::anything());
            } else {
                words_into(&words, depth + 1, out);
            }
            i = end + 1;
            continue;
        }
        if matches!(t, "-files0-from") || rest[i].dynamic {
            return Inner::Unknown;
        }
        i += 1;
    }
    Inner::None
}

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
fn git(rest: &[Word]) -> Inner {
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

fn awk(rest: &[Word]) -> Inner {
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
fn interpreter(name: &str, rest: &[Word]) -> Inner {
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
    if inline || !has_operand || name == "osascript" {
        Inner::Unknown
    } else {
        Inner::None
    }
}
