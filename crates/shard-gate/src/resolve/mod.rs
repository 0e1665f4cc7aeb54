//! What a parsed `bash` line will run, for deny and allow rules: every simple command, and
//! inside each the commands its wrappers run (`sudo`, `env`, `timeout`, `nice`, `nohup`,
//! `xargs`, `find -exec`, `bash -c`, `ssh host cmd`, `git` without its global options …).
//! Whatever cannot be known — a substitution, `eval`, a variable in command position, a
//! git alias, inline interpreter code — becomes an [`Effective`] that is *open*: its
//! known words are a prefix and anything may follow, so a deny rule that could match
//! any completion matches it (fail closed). git, sed, make, tar and sort are read with
//! [`options`], an allow-list of each program's options: an option not understood makes
//! the call unknown.

use crate::shell::{self, SimpleCommand, Word};

pub mod options;
mod programs;
mod wrappers;

pub use programs::{
    GIT_BUILTINS, git_parse, git_push_rewrites, git_runs_code, is_interpreter, option_matches,
    runs_command_subcommand, sed_runs, sed_scripts, tar_words,
};
use programs::{awk, git, interpreter, make, modelled};
use wrappers::{env, flag_string, joined_string, nice, shell_inner, ssh, sudo, wrapper, xargs};

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

/// What a line may do: the commands it may run and the files its redirections write.
#[derive(Debug, Clone, Default)]
pub struct Walk {
    /// Every command the line may run (a line that does not parse is one open command).
    pub commands: Vec<Effective>,
    /// The targets of the redirections that may write a file (`>`, `>>`, `&>` …), of the
    /// line and of every line it runs (`bash -c '… > f'`).
    pub writes: Vec<Word>,
}

impl Walk {
    fn push(&mut self, e: Effective) {
        self.commands.push(e);
    }
}

/// Every command a line may run; a line that does not parse is one open command.
pub fn effective(line: &str) -> Vec<Effective> {
    walk(line).commands
}

/// Every command a line may run and every file its redirections may write.
pub fn walk(line: &str) -> Walk {
    let mut out = Walk::default();
    line_into(line, 0, &mut out);
    out
}

fn line_into(line: &str, depth: usize, out: &mut Walk) {
    match shell::parse(line) {
        Some(cmds) if depth < MAX_DEPTH => {
            for c in &cmds {
                command_into(c, depth, out);
            }
        }
        _ => out.push(Effective::anything()),
    }
}

fn command_into(cmd: &SimpleCommand, depth: usize, out: &mut Walk) {
    out.writes.extend(
        cmd.redirects
            .iter()
            .filter(|r| r.writes())
            .map(|r| r.target.clone()),
    );
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

fn words_into(words: &[Word], depth: usize, out: &mut Walk) {
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
        "bash" | "sh" | "zsh" | "dash" | "ksh" | "mksh" | "ash" | "fish" | "csh" | "tcsh" => {
            shell_inner(rest)
        }
        // `busybox APPLET ARGS` runs the applet.
        "busybox" => Inner::Words(rest.to_vec()),
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
        "watch" => joined_string(wrapper(
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
        )),
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
        "make" | "gmake" => make(rest),
        "tar" | "gtar" => modelled(&options::TAR, "tar", rest),
        "sort" => modelled(&options::SORT, "sort", rest),
        n if is_interpreter(n) => interpreter(n, rest),
        // Wrappers whose options are not modelled here.
        "chroot" | "unshare" | "nsenter" | "strace" | "ltrace" | "valgrind" | "gdb"
        | "systemd-run" | "script" | "unbuffer" | "parallel" | "at" | "batch" | "pkexec"
        | "firejail" | "bwrap" | "proot" | "fakeroot" | "xvfb-run" | "dbus-run-session"
        | "entr" | "rlwrap" | "catchsegv" | "taskset" | "chrt" | "sg" | "newgrp" | "flock"
        | "npx" | "pnpx" | "bunx" | "uvx" | "expect" | "tmux" | "screen" | "caffeinate"
        | "torsocks" | "proxychains" | "proxychains4" => Inner::Unknown,
        n if programs::runs_program_option(n, rest) => Inner::Unknown,
        n if programs::runs_command_subcommand(n, rest) => Inner::Unknown,
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
                let mut sub = Walk::default();
                words_into(&w, depth + 1, &mut sub);
                // The command gets more arguments than written.
                if let Some(first) = sub.commands.first_mut() {
                    first.open = true;
                }
                out.commands.extend(sub.commands);
                out.writes.extend(sub.writes);
            }
        }
        Inner::Line(s) => line_into(&s, depth + 1, out),
        Inner::Final(w) => out.push(known(&w)),
    }
}

/// What a wrapper runs.
#[derive(Debug, Clone)]
pub(crate) enum Inner {
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

fn find(rest: &[Word], depth: usize, out: &mut Walk) -> Inner {
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
