//! The remote command line of an `ssh` host. OpenSSH joins its arguments with spaces
//! and hands the string to the user's shell on the host, so every word is quoted here:
//! a path with a space or a `;` in it stays one argument and runs nothing.

/// One word in POSIX single quotes (`'` written as `'\''`).
pub(crate) fn word(w: &str) -> String {
    format!("'{}'", w.replace('\'', r"'\''"))
}

/// The program word: `~/rest` keeps its tilde unquoted so the host's shell expands it.
pub(crate) fn program(p: &str) -> String {
    match p.strip_prefix("~/") {
        Some(rest) => format!("~/{}", word(rest)),
        None => word(p),
    }
}

/// A whole command line: the program, then each argument quoted.
pub(crate) fn command_line(program_path: &str, args: &[String]) -> String {
    let mut line = program(program_path);
    for a in args {
        line.push(' ');
        line.push_str(&word(a));
    }
    line
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn quotes_every_word_so_the_shell_runs_nothing_else() {
        let line = command_line(
            "/opt/my shard/shard",
            &["agent".into(), "--cwd".into(), "/tmp/a'b; rm -rf ~".into()],
        );
        assert_eq!(
            line,
            r"'/opt/my shard/shard' 'agent' '--cwd' '/tmp/a'\''b; rm -rf ~'"
        );
        // The host's shell turns it back into exactly these words.
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s\\n' {}", &line))
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            "/opt/my shard/shard\nagent\n--cwd\n/tmp/a'b; rm -rf ~\n"
        );
    }

    #[test]
    fn every_word_of_an_argv_arrives_literally() {
        let argv: Vec<String> = [
            "sh",
            "-c",
            "printf '%s\\n' \"$@\"",
            "sh",
            "$(touch /tmp/shard-quote-pwned)",
            "a b'c\"d;`id`",
            "",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(command_line(&argv[0], &argv[1..]))
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            "$(touch /tmp/shard-quote-pwned)\na b'c\"d;`id`\n\n"
        );
    }

    #[test]
    fn a_tilde_program_expands_on_the_host() {
        assert_eq!(program("~/bin/shard"), "~/'bin/shard'");
        assert_eq!(program("shard"), "'shard'");
    }
}
