//! A deliberately small shell analyzer for permission matching (PROTOCOL §9.5
//! `bash_signature`). It understands plain commands joined by pipes and lists, with
//! quoting; anything else — command substitution, subshells, redirections to files,
//! control keywords, assignments, an executable built from expansions — makes it give up,
//! and giving up always means "no match" (fail closed).

use serde::{Deserialize, Serialize};

/// One simple command: its words after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// Words; the first is the executable.
    pub words: Vec<String>,
}

/// The signature of one simple command: the executable and its exact sorted flag set.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CommandSignature {
    /// Executable as written.
    pub exe: String,
    /// Flags (words starting with `-`), sorted and deduplicated.
    pub flags: Vec<String>,
}

impl SimpleCommand {
    /// Its signature.
    pub fn signature(&self) -> CommandSignature {
        let mut flags: Vec<String> = Vec::new();
        for w in self.words.iter().skip(1) {
            if w == "--" {
                break;
            }
            if w.len() > 1 && w.starts_with('-') {
                flags.push(w.clone());
            }
        }
        flags.sort();
        flags.dedup();
        CommandSignature {
            exe: self.words.first().cloned().unwrap_or_default(),
            flags,
        }
    }

    /// The command re-joined with single spaces, for glob rules.
    pub fn text(&self) -> String {
        self.words.join(" ")
    }
}

const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "function", "select", "time", "coproc", "[[", "]]", "!", "{", "}", "eval", "exec", "source",
    ".",
];

/// Splits a command line into simple commands, or `None` when it uses anything this
/// analyzer does not understand.
pub fn split_commands(line: &str) -> Option<Vec<SimpleCommand>> {
    let chars: Vec<char> = line.chars().collect();
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut i = 0;
    let end_word = |word: &mut String, in_word: &mut bool, words: &mut Vec<String>| {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => end_word(&mut word, &mut in_word, &mut words),
            '\n' | ';' | '|' | '&' => {
                // `N>&M` fd duplication is the one use of `&` inside a word we accept.
                if c == '&' && in_word && word.ends_with('>') {
                    word.push(c);
                    i += 1;
                    continue;
                }
                end_word(&mut word, &mut in_word, &mut words);
                if !words.is_empty() {
                    commands.push(finish(std::mem::take(&mut words))?);
                } else if c != '\n' {
                    // An operator with no command before it (`; ls`, `&& x`).
                    if commands.is_empty() || matches!(chars.get(i + 1), Some(';')) {
                        return None;
                    }
                }
                // Swallow the second char of `&&`, `||`, `|&`, `;;` is not allowed.
                if matches!(
                    (c, chars.get(i + 1)),
                    ('&', Some('&')) | ('|', Some('|')) | ('|', Some('&'))
                ) {
                    i += 1;
                }
            }
            '\'' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    word.push(chars[i]);
                    i += 1;
                }
                if i >= chars.len() {
                    return None;
                }
            }
            '"' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    match chars[i] {
                        '`' => return None,
                        '$' if matches!(chars.get(i + 1), Some('(')) => return None,
                        '\\' if i + 1 < chars.len() => {
                            i += 1;
                            word.push(chars[i]);
                        }
                        other => word.push(other),
                    }
                    i += 1;
                }
                if i >= chars.len() {
                    return None;
                }
            }
            '\\' => {
                in_word = true;
                i += 1;
                match chars.get(i) {
                    Some('\n') => {}
                    Some(&n) => word.push(n),
                    None => return None,
                }
            }
            '`' | '(' | ')' | '{' | '}' | '<' => return None,
            '$' if matches!(chars.get(i + 1), Some('(') | Some('{')) => return None,
            '>' => {
                // Only `N>&M` (e.g. `2>&1`) is accepted: it writes no file.
                let digits_before = in_word && word.chars().all(|d| d.is_ascii_digit());
                let dup = matches!(chars.get(i + 1), Some('&'))
                    && chars.get(i + 2).is_some_and(|d| d.is_ascii_digit());
                if !(digits_before && dup) {
                    return None;
                }
                word.push_str(">&");
                word.push(chars[i + 2]);
                i += 3;
                end_word(&mut word, &mut in_word, &mut words);
                // Drop the redirection word itself from the command's words.
                words.pop();
                continue;
            }
            '#' if !in_word => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            other => {
                in_word = true;
                word.push(other);
            }
        }
        i += 1;
    }
    end_word(&mut word, &mut in_word, &mut words);
    if !words.is_empty() {
        commands.push(finish(words)?);
    }
    if commands.is_empty() {
        return None;
    }
    Some(commands)
}

fn finish(words: Vec<String>) -> Option<SimpleCommand> {
    let exe = words.first()?;
    if KEYWORDS.contains(&exe.as_str())
        || exe.contains('=')
        || exe.contains('$')
        || exe.contains(['*', '?', '['])
        || exe.is_empty()
    {
        return None;
    }
    Some(SimpleCommand { words })
}

/// Signatures of every command of a line, or `None` (fail closed).
pub fn signatures(line: &str) -> Option<Vec<CommandSignature>> {
    let mut sigs: Vec<CommandSignature> = split_commands(line)?
        .iter()
        .map(SimpleCommand::signature)
        .collect();
    sigs.sort();
    sigs.dedup();
    Some(sigs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(exe: &str, flags: &[&str]) -> CommandSignature {
        CommandSignature {
            exe: exe.into(),
            flags: flags.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn pipelines_and_lists() {
        assert_eq!(
            signatures("cargo test -q --lib 2>&1 | tail -n 5 && echo 'a b'").unwrap(),
            vec![
                sig("cargo", &["--lib", "-q"]),
                sig("echo", &[]),
                sig("tail", &["-n"])
            ]
        );
    }

    #[test]
    fn fails_closed() {
        for bad in [
            "echo $(rm -rf /)",
            "echo `id`",
            "ls > out.txt",
            "cat < x",
            "(cd /; rm x)",
            "FOO=1 cargo test",
            "$CMD arg",
            "if true; then ls; fi",
            "echo \"$(id)\"",
            "echo 'unterminated",
            "eval ls",
            "diff <(ls) <(ls)",
            "",
            "; ls",
        ] {
            assert!(signatures(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn quoted_flags_are_flags() {
        assert_eq!(signatures("rm '-rf' x").unwrap(), vec![sig("rm", &["-rf"])]);
        assert_eq!(signatures("git log -- -x").unwrap(), vec![sig("git", &[])]);
    }
}
