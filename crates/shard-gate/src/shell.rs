//! A deliberately small shell parser for permission matching (docs/protocol.md §9.5
//! `bash_signature`, docs/architecture.md#the-permissiongate). It understands simple commands joined by pipes and
//! lists, every quoting form bash has, parameter expansions (as "unknown" words), globs and
//! redirections. Anything else — command or process substitution, arithmetic, subshells,
//! groups, here-documents, control keywords — makes [`parse`] return `None`, and every user
//! of the parser treats `None` as "this line could run anything" (fail closed).
//!
//! Each word is the word bash yields (`bash -c LINE` without an rc file, as the `bash` tool
//! runs it), or it is marked [`Word::dynamic`]: its value depends on something only known
//! when bash runs (a variable, the home directory, the files a glob matches, the locale a
//! `$"…"` string is translated with). `tests/words.rs` checks this against real bash for
//! generated words mixing every form. This is the only tokenizer of the gate: signature
//! grants, deny rules and headless allow rules all read lines through it
//! (docs/security.md, "Words as bash reads them").
//!
//! What the words mean (wrappers, interpreters, git aliases) is decided by
//! [`crate::resolve`] and [`crate::signature`]; this module only splits.

mod word;

/// One word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The text after quote removal; expansions are kept as written (`$HOME`).
    pub text: String,
    /// The word's final value is not known before bash runs: it contains a parameter
    /// expansion, a tilde expansion, an unquoted glob character, a brace expansion, a
    /// locale-translated string, or an ANSI-C escape whose value depends on the locale.
    pub dynamic: bool,
}

/// One redirection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The operator with its file-descriptor prefix, e.g. `2>`, `>>`, `<`, `&>`, `>&`.
    pub op: String,
    /// Its target word.
    pub target: Word,
}

impl Redirect {
    /// True when the redirection may write its target: any operator with `>` (`>`, `>>`,
    /// `>|`, `&>`, `&>>`, `<>`, `>&FILE`), except duplicating or closing a descriptor
    /// (`>&2`, `>&-`).
    pub fn writes(&self) -> bool {
        if !self.op.contains('>') {
            return false;
        }
        let t = &self.target;
        let dup = self.op.ends_with(">&")
            && !t.dynamic
            && (t.text == "-"
                || (!t.text.is_empty() && t.text.chars().all(|c| c.is_ascii_digit())));
        !dup
    }
}

/// One simple command.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SimpleCommand {
    /// `NAME=value` words before the executable.
    pub assignments: Vec<String>,
    /// Words; the first is the executable.
    pub words: Vec<Word>,
    /// Redirections, in order.
    pub redirects: Vec<Redirect>,
}

impl SimpleCommand {
    /// The words re-joined with single spaces, for glob rules.
    pub fn text(&self) -> String {
        let words: Vec<&str> = self.words.iter().map(|w| w.text.as_str()).collect();
        words.join(" ")
    }
}

/// Words that start syntax this parser does not follow.
const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "function", "select", "coproc", "[[", "]]", "!", "{", "}", "in",
];

/// The line being read. Bash removes a backslash-newline pair (a line continuation)
/// wherever it reads input, except inside single quotes (`'…'`, `$'…'`), in a comment, and
/// right after an escaping backslash; [`Parser::peek`] does the same, the raw accessors do
/// not.
struct Parser {
    chars: Vec<char>,
    i: usize,
}

/// Splits a command line into simple commands, or `None` when it uses anything this
/// parser does not understand.
pub fn parse(line: &str) -> Option<Vec<SimpleCommand>> {
    let mut p = Parser {
        chars: line.chars().collect(),
        i: 0,
    };
    let mut commands = Vec::new();
    let mut current = SimpleCommand::default();
    let mut pending_redirect: Option<String> = None;
    // True right after an operator that needs a command after it (`|`, `&&`, `||`).
    let mut need_command = false;
    loop {
        p.skip_blanks();
        let Some(c) = p.peek() else { break };
        match c {
            '#' => {
                // A comment ends at the first newline; a backslash does not continue it.
                while p.raw().is_some_and(|c| c != '\n') {
                    p.i += 1;
                }
            }
            '\n' | ';' | '&' | '|' => {
                if pending_redirect.is_some() {
                    return None;
                }
                p.i += 1;
                let next = p.peek();
                let needs_more = match (c, next) {
                    ('&', Some('&')) | ('|', Some('|')) | ('|', Some('&')) => {
                        p.i += 1;
                        true
                    }
                    (';', Some(';')) | (';', Some('&')) => return None,
                    ('&', Some('>')) => {
                        // `&>file` / `&>>file` at the start of a word.
                        p.i += 1;
                        let mut op = String::from("&>");
                        if p.peek() == Some('>') {
                            p.i += 1;
                            op.push('>');
                        }
                        pending_redirect = Some(op);
                        continue;
                    }
                    ('|', _) => true,
                    _ => false,
                };
                if current.words.is_empty() {
                    if !current.assignments.is_empty() || !current.redirects.is_empty() {
                        // A bare assignment or redirection: it changes state this parser
                        // does not track.
                        return None;
                    }
                    if c != '\n' && (commands.is_empty() || need_command) {
                        return None;
                    }
                    if c == '\n' && need_command {
                        // A newline after `|` or `&&` continues the line.
                        continue;
                    }
                } else {
                    commands.push(std::mem::take(&mut current));
                }
                need_command = needs_more;
            }
            '(' | ')' | '`' => return None,
            '<' | '>' => {
                if pending_redirect.is_some() {
                    return None;
                }
                pending_redirect = Some(p.redirect_op(String::new())?);
            }
            _ => {
                let w = p.word()?;
                // `2>` : a word of digits directly followed by a redirection operator.
                if !w.quoted
                    && !w.text.is_empty()
                    && w.text.chars().all(|d| d.is_ascii_digit())
                    && matches!(p.peek(), Some('<' | '>'))
                    && pending_redirect.is_none()
                {
                    pending_redirect = Some(p.redirect_op(w.text)?);
                    continue;
                }
                let assignment = w.assignment;
                let keyword = !w.quoted && KEYWORDS.contains(&w.text.as_str());
                let word = Word {
                    text: w.text,
                    dynamic: w.dynamic,
                };
                if let Some(op) = pending_redirect.take() {
                    current.redirects.push(Redirect { op, target: word });
                    continue;
                }
                if current.words.is_empty() {
                    if assignment {
                        current.assignments.push(word.text);
                        continue;
                    }
                    if keyword {
                        return None;
                    }
                }
                current.words.push(word);
                need_command = false;
            }
        }
    }
    if pending_redirect.is_some() || need_command {
        return None;
    }
    if current.words.is_empty() {
        if !current.assignments.is_empty() || !current.redirects.is_empty() {
            return None;
        }
    } else {
        commands.push(current);
    }
    if commands.is_empty() {
        return None;
    }
    Some(commands)
}

impl Parser {
    /// Skips line continuations at the current position.
    fn skip_continuations(&mut self) {
        while self.chars.get(self.i) == Some(&'\\') && self.chars.get(self.i + 1) == Some(&'\n') {
            self.i += 2;
        }
    }

    /// The next character, after any line continuation (which is consumed).
    fn peek(&mut self) -> Option<char> {
        self.skip_continuations();
        self.chars.get(self.i).copied()
    }

    /// The character after [`Parser::peek`]'s, line continuations skipped.
    fn peek_next(&mut self) -> Option<char> {
        self.skip_continuations();
        let mut j = self.i + 1;
        while self.chars.get(j) == Some(&'\\') && self.chars.get(j + 1) == Some(&'\n') {
            j += 2;
        }
        self.chars.get(j).copied()
    }

    /// The character at the current position as written.
    fn raw(&self) -> Option<char> {
        self.chars.get(self.i).copied()
    }

    /// The character after the current one as written (what a backslash escapes).
    fn raw_next(&self) -> Option<char> {
        self.chars.get(self.i + 1).copied()
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.i += 1;
        }
    }

    /// Reads a redirection operator at `<` or `>`; `None` for here-documents and
    /// process substitution.
    fn redirect_op(&mut self, mut op: String) -> Option<String> {
        let c = self.peek()?;
        self.i += 1;
        op.push(c);
        match (c, self.peek()) {
            (_, Some('(')) => return None,
            ('<', Some('<')) => {
                // `<<<` is a here-string (its word is data); `<<` is a here-document.
                if self.peek_next() == Some('<') {
                    self.i += 1;
                    self.peek();
                    self.i += 1;
                    op.push_str("<<");
                } else {
                    return None;
                }
            }
            ('>', Some(n @ ('>' | '|'))) | ('<', Some(n @ '>')) | ('>' | '<', Some(n @ '&')) => {
                op.push(n);
                self.i += 1;
            }
            _ => {}
        }
        Some(op)
    }
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod tests;
