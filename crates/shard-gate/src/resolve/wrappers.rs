//! Option parsing of the wrappers that run another command (`sudo`, `env`, `timeout`,
//! `nice`, `xargs`, shells with `-c`, `su -c`, `watch`, `ssh`): where the inner command
//! starts, or that it cannot be known.

use super::Inner;
use crate::shell::Word;

/// Parses a wrapper's options: `short_flags` take no value, `short_values` take one
/// (attached or next word), long options likewise (`--x=v` always accepted for a
/// value-taking long option). Stops at `--` or the first non-option word, which starts the
/// inner command. An option not listed makes the inner command unknown (it might take a
/// value that would be mistaken for the command).
pub(super) fn wrapper(
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

pub(super) fn sudo(rest: &[Word]) -> Inner {
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

pub(super) fn env(rest: &[Word]) -> Inner {
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

pub(super) fn nice(rest: &[Word]) -> Inner {
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

pub(super) fn xargs(rest: &[Word]) -> Inner {
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
pub(super) fn shell_inner(rest: &[Word]) -> Inner {
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
pub(super) fn flag_string(rest: &[Word], flags: &[&str]) -> Inner {
    match rest.iter().position(|w| flags.contains(&w.text.as_str())) {
        Some(i) => match rest.get(i + 1) {
            Some(w) if !w.dynamic => Inner::Line(w.text.clone()),
            _ => Inner::Unknown,
        },
        // `su` without `-c` starts a shell reading its input; `--command=…` is not parsed.
        None => Inner::Unknown,
    }
}

/// `watch … CMD ARGS`, `ssh host CMD ARGS`: the words are joined and run by a shell.
pub(super) fn joined_string(inner: Inner) -> Inner {
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

pub(super) fn ssh(rest: &[Word]) -> Inner {
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
            // The first option that takes a value ends the cluster; its value is the
            // next word when nothing follows it in this one (`-p 22`, not `-p22`).
            let takes_value = flags
                .char_indices()
                .find(|(_, c)| "BbcDEeFIiJLlmOoPpQRSWw".contains(*c))
                .is_some_and(|(pos, c)| pos + c.len_utf8() == flags.len());
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
    joined_string(Inner::Words(cmd.to_vec()))
}
