//! A deliberately small shell parser for permission matching (PROTOCOL §9.5
//! `bash_signature`, ARCHITECTURE §4.3). It understands simple commands joined by pipes and
//! lists, quoting, parameter expansions (as "unknown" words), globs and redirections.
//! Anything else — command or process substitution, subshells, groups, here-documents,
//! control keywords, arithmetic — makes [`parse`] return `None`, and every user of the
//! parser treats `None` as "this line could run anything" (fail closed).
//!
//! What the words mean (wrappers, interpreters, git aliases) is decided by
//! [`crate::resolve`] and [`crate::signature`]; this module only splits.

/// One word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The text after quote removal; expansions are kept as written (`$HOME`).
    pub text: String,
    /// The word's final value is not known before bash runs: it contains a parameter
    /// expansion, an unquoted glob character or a brace expansion.
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

struct Parser {
    chars: Vec<char>,
    i: usize,
}

#[derive(Default)]
struct WordBuf {
    text: String,
    dynamic: bool,
    started: bool,
    /// Any part of the word was quoted (so it is not an assignment or a keyword).
    quoted: bool,
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
                while p.peek().is_some_and(|c| c != '\n') {
                    p.i += 1;
                }
            }
            '\n' | ';' | '&' | '|' => {
                if pending_redirect.is_some() {
                    return None;
                }
                p.i += 1;
                let next = p.peek();
                let (op, needs_more) = match (c, next) {
                    ('&', Some('&')) | ('|', Some('|')) | ('|', Some('&')) => {
                        p.i += 1;
                        ("and_or", true)
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
                    ('|', _) => ("pipe", true),
                    _ => ("list", false),
                };
                let _ = op;
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
                let word = Word {
                    text: w.text,
                    dynamic: w.dynamic,
                };
                if let Some(op) = pending_redirect.take() {
                    current.redirects.push(Redirect { op, target: word });
                    continue;
                }
                if current.words.is_empty() {
                    if !w.quoted && is_assignment(&word.text) {
                        current.assignments.push(word.text);
                        continue;
                    }
                    if !w.quoted && KEYWORDS.contains(&word.text.as_str()) {
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

fn is_assignment(text: &str) -> bool {
    let Some((name, _)) = text.split_once('=') else {
        return false;
    };
    let name = name.strip_suffix('+').unwrap_or(name);
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.i).copied()
    }

    fn peek_at(&self, n: usize) -> Option<char> {
        self.chars.get(self.i + n).copied()
    }

    fn skip_blanks(&mut self) {
        loop {
            match self.peek() {
                Some(' ' | '\t') => self.i += 1,
                Some('\\') if self.peek_at(1) == Some('\n') => self.i += 2,
                _ => break,
            }
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
                if self.peek_at(1) == Some('<') {
                    self.i += 2;
                    op.push_str("<<");
                } else {
                    return None;
                }
            }
            ('>', Some('>' | '|')) | ('<', Some('>')) | ('>' | '<', Some('&')) => {
                op.push(self.peek()?);
                self.i += 1;
            }
            _ => {}
        }
        Some(op)
    }

    /// Reads one word; `None` for syntax this parser does not follow.
    fn word(&mut self) -> Option<WordBuf> {
        let mut w = WordBuf::default();
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')' => break,
                '`' => return None,
                '\'' => {
                    w.started = true;
                    w.quoted = true;
                    self.i += 1;
                    loop {
                        match self.peek()? {
                            '\'' => break,
                            other => w.text.push(other),
                        }
                        self.i += 1;
                    }
                    self.i += 1;
                }
                '"' => {
                    w.started = true;
                    w.quoted = true;
                    self.i += 1;
                    loop {
                        match self.peek()? {
                            '"' => break,
                            '`' => return None,
                            '$' => {
                                self.dollar(&mut w)?;
                                continue;
                            }
                            '\\' => {
                                let n = self.peek_at(1)?;
                                if matches!(n, '$' | '`' | '"' | '\\') {
                                    w.text.push(n);
                                } else if n != '\n' {
                                    w.text.push('\\');
                                    w.text.push(n);
                                }
                                self.i += 1;
                            }
                            other => w.text.push(other),
                        }
                        self.i += 1;
                    }
                    self.i += 1;
                }
                '\\' => {
                    w.started = true;
                    w.quoted = true;
                    let n = self.peek_at(1)?;
                    if n != '\n' {
                        w.text.push(n);
                    }
                    self.i += 2;
                }
                '$' => {
                    w.started = true;
                    self.dollar(&mut w)?;
                }
                '*' | '?' | '[' | ']' | '{' | '}' | '~' => {
                    // A `{`/`}` word on its own is a group; inside a word it is a brace
                    // expansion. `~` expands to a home directory. All change the value.
                    if matches!(c, '{' | '}') && !w.started {
                        let next = self.peek_at(1);
                        if next.is_none_or(|n| matches!(n, ' ' | '\t' | '\n' | ';')) {
                            return None;
                        }
                    }
                    if c == '?' || c == '*' || c == '[' {
                        // `?(`, `*(`… are extended globs.
                        if self.peek_at(1) == Some('(') {
                            return None;
                        }
                    }
                    if c == '~' && w.started {
                        w.text.push(c);
                    } else {
                        w.dynamic = true;
                        w.text.push(c);
                    }
                    w.started = true;
                    self.i += 1;
                }
                '!' | '@' | '+' if self.peek_at(1) == Some('(') => return None,
                '=' => {
                    // `NAME=(…)` array assignment.
                    w.started = true;
                    w.text.push(c);
                    self.i += 1;
                    if self.peek() == Some('(') {
                        return None;
                    }
                }
                other => {
                    w.started = true;
                    w.text.push(other);
                    self.i += 1;
                }
            }
        }
        if !w.started {
            return None;
        }
        // A lone `[` or `]` (the `test` command) is never a pattern.
        if w.text == "[" || w.text == "]" {
            w.dynamic = false;
        }
        Some(w)
    }

    /// At a `$`: a parameter expansion marks the word dynamic; `$(`, `$((`, and `${…}`
    /// holding anything but a plain name are refused. `$'…'` is ANSI-C quoting (its
    /// escapes are not decoded here, so the word is dynamic).
    fn dollar(&mut self, w: &mut WordBuf) -> Option<()> {
        match self.peek_at(1) {
            Some('(') => None,
            Some('{') => {
                self.i += 2;
                w.text.push_str("${");
                loop {
                    let c = self.peek()?;
                    self.i += 1;
                    w.text.push(c);
                    match c {
                        '}' => break,
                        '$' | '`' | '(' | '\'' | '"' | '\\' => return None,
                        _ => {}
                    }
                }
                w.dynamic = true;
                Some(())
            }
            Some('\'') => {
                self.i += 2;
                w.quoted = true;
                loop {
                    match self.peek()? {
                        '\'' => break,
                        '\\' => {
                            w.text.push('\\');
                            self.i += 1;
                            w.text.push(self.peek()?);
                        }
                        other => w.text.push(other),
                    }
                    self.i += 1;
                }
                self.i += 1;
                w.dynamic = true;
                Some(())
            }
            Some(n) if n.is_ascii_alphanumeric() || "_?#@*$!-".contains(n) => {
                self.i += 1;
                w.text.push('$');
                if n.is_ascii_alphabetic() || n == '_' {
                    while let Some(c) = self.peek() {
                        if c.is_ascii_alphanumeric() || c == '_' {
                            w.text.push(c);
                            self.i += 1;
                        } else {
                            break;
                        }
                    }
                } else {
                    w.text.push(n);
                    self.i += 1;
                }
                w.dynamic = true;
                Some(())
            }
            _ => {
                // A lone `$` is literal.
                w.text.push('$');
                self.i += 1;
                Some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(line: &str) -> Vec<String> {
        parse(line)
            .unwrap()
            .iter()
            .map(SimpleCommand::text)
            .collect()
    }

    #[test]
    fn pipelines_lists_and_quotes() {
        assert_eq!(
            texts("cargo test -q 2>&1 | tail -n 5 && echo 'a b'\nls"),
            ["cargo test -q", "tail -n 5", "echo a b", "ls"]
        );
        assert_eq!(texts("g\"i\"t push"), ["git push"]);
        assert_eq!(texts("\\git push"), ["git push"]);
        assert_eq!(texts("ls |\n wc -l"), ["ls", "wc -l"]);
    }

    #[test]
    fn redirections_are_kept_apart() {
        let cmds = parse("git push > out.txt 2>/dev/null").unwrap();
        assert_eq!(cmds[0].text(), "git push");
        assert_eq!(cmds[0].redirects.len(), 2);
        assert_eq!(cmds[0].redirects[1].op, "2>");
        assert_eq!(cmds[0].redirects[1].target.text, "/dev/null");
        let cmds = parse("cat <<< 'x' && ls &>log").unwrap();
        assert_eq!(cmds[0].redirects[0].op, "<<<");
        assert_eq!(cmds[1].redirects[0].op, "&>");
    }

    #[test]
    fn expansions_are_dynamic() {
        let cmds = parse("echo $HOME \"$x\" '$y' *.rs ~/a a=b").unwrap();
        let dynamic: Vec<bool> = cmds[0].words.iter().map(|w| w.dynamic).collect();
        assert_eq!(dynamic, [false, true, true, false, true, true, false]);
        let cmds = parse("[ -f x ] && ls").unwrap();
        assert!(cmds[0].words.iter().all(|w| !w.dynamic));
        let cmds = parse("FOO=1 cargo test").unwrap();
        assert_eq!(cmds[0].assignments, ["FOO=1"]);
    }

    #[test]
    fn refuses_what_it_does_not_follow() {
        for bad in [
            "echo $(rm -rf /)",
            "echo `id`",
            "echo \"$(id)\"",
            "(cd /; rm x)",
            "{ ls; }",
            "if true; then ls; fi",
            "echo 'unterminated",
            "diff <(ls) <(ls)",
            "cat <<EOF\nx\nEOF",
            "echo $((1+2))",
            "echo ${x:-$(id)}",
            "",
            "; ls",
            "ls && ",
            "ls |",
            "FOO=1",
            "> x",
            "a=(1 2)",
            "case x in x) ls;; esac",
            "f() { ls; }",
        ] {
            assert!(parse(bad).is_none(), "{bad}");
        }
    }
}
