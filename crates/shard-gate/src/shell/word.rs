//! One word as bash reads it: quote removal for `'…'`, `"…"`, `$'…'` (its escapes
//! decoded), `$"…"` and backslashes, and which parts make the value unknown until bash
//! runs (see [`super::Word::dynamic`]).

use super::Parser;

/// A word being read.
#[derive(Default)]
pub(super) struct WordBuf {
    pub(super) text: String,
    pub(super) dynamic: bool,
    started: bool,
    /// Any part of the word was quoted (so it is not a keyword or a descriptor number).
    pub(super) quoted: bool,
    /// `NAME=…` / `NAME+=…` with the name and `=` unquoted: bash reads it as an
    /// assignment before the command, whatever follows the `=` (quoted or not).
    pub(super) assignment: bool,
    /// Everything so far was unquoted literal text (an assignment's name must be).
    plain: bool,
    /// The last character added was an unquoted `=` or `:` (a `~` after it is expanded
    /// in words that look like assignments).
    after_separator: bool,
    /// Where the first unquoted `{` is in `text`: a later `,` or `..` makes a brace
    /// expansion.
    brace: Option<usize>,
}

impl WordBuf {
    /// Adds unquoted literal text.
    fn literal(&mut self, c: char) {
        if self.plain && c == '=' && !self.assignment && is_name(&self.text) {
            self.assignment = true;
        }
        self.after_separator = matches!(c, '=' | ':');
        self.text.push(c);
    }

    /// Adds quoted text (or an expansion's spelling).
    fn quoted_text(&mut self, s: &str) {
        self.plain = false;
        self.after_separator = false;
        self.text.push_str(s);
    }
}

/// `NAME` or `NAME+` (what may precede `=` in an assignment).
fn is_name(text: &str) -> bool {
    let name = text.strip_suffix('+').unwrap_or(text);
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Parser {
    /// Reads one word; `None` for syntax this parser does not follow.
    pub(super) fn word(&mut self) -> Option<WordBuf> {
        let mut w = WordBuf {
            plain: true,
            ..WordBuf::default()
        };
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')' => break,
                '`' => return None,
                '\'' => {
                    w.quoted = true;
                    self.i += 1;
                    let mut s = String::new();
                    loop {
                        match self.raw()? {
                            '\'' => break,
                            other => s.push(other),
                        }
                        self.i += 1;
                    }
                    self.i += 1;
                    w.quoted_text(&s);
                }
                '"' => {
                    w.quoted = true;
                    self.i += 1;
                    self.double_quoted(&mut w)?;
                }
                '\\' => {
                    // Not a line continuation (`peek` removed those): an escape.
                    w.quoted = true;
                    let n = self.raw_next()?;
                    self.i += 2;
                    w.quoted_text(n.encode_utf8(&mut [0; 4]));
                }
                '$' => self.dollar(&mut w, false)?,
                '*' | '?' | '[' => {
                    // `?(`, `*(`… are extended globs; `(` ends the word and is refused.
                    w.dynamic = true;
                    w.literal(c);
                    self.i += 1;
                }
                '{' | '}' if !w.started && w.text.is_empty() && self.lone_brace() => {
                    // A `{`/`}` word on its own is a group.
                    return None;
                }
                '{' => {
                    w.brace.get_or_insert(w.text.len());
                    w.literal(c);
                    self.i += 1;
                }
                '~' => {
                    // Tilde expansion: at the start of a word, and after an unquoted `=`
                    // or `:` (bash expands those in any word that looks like an
                    // assignment; this counts every word, which only asks more often).
                    if !w.started || w.after_separator {
                        w.dynamic = true;
                    }
                    w.literal(c);
                    self.i += 1;
                }
                other => {
                    w.literal(other);
                    self.i += 1;
                }
            }
            w.started = true;
        }
        if !w.started {
            return None;
        }
        // `a{b,c}`, `{1..3}`: a brace expansion makes several words.
        if let Some(at) = w.brace {
            let after = &w.text[at..];
            if after.contains(',') || after.contains("..") {
                w.dynamic = true;
            }
        }
        // A lone `[` (the `test` command) is never a pattern.
        if w.text == "[" && !w.quoted {
            w.dynamic = false;
        }
        Some(w)
    }

    /// True when the `{` or `}` at the current position is a word of its own.
    fn lone_brace(&mut self) -> bool {
        self.peek_next()
            .is_none_or(|n| matches!(n, ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>'))
    }

    /// Reads the inside of `"…"` after the opening quote, through the closing one.
    fn double_quoted(&mut self, w: &mut WordBuf) -> Option<()> {
        loop {
            match self.peek()? {
                '"' => {
                    self.i += 1;
                    return Some(());
                }
                '`' => return None,
                '$' => self.dollar(w, true)?,
                '\\' => {
                    // Inside double quotes a backslash escapes only `$`, `` ` ``, `"`,
                    // `\` (and a newline, removed by `peek`); before anything else it
                    // stays.
                    let n = self.raw_next()?;
                    self.i += 2;
                    if matches!(n, '$' | '`' | '"' | '\\') {
                        w.quoted_text(n.encode_utf8(&mut [0; 4]));
                    } else {
                        w.quoted_text(&format!("\\{n}"));
                    }
                }
                other => {
                    self.i += 1;
                    w.quoted_text(other.encode_utf8(&mut [0; 4]));
                }
            }
        }
    }

    /// At a `$`: a parameter expansion marks the word dynamic; `$(`, `$((`, `$[` and
    /// `${…}` holding anything but plain text are refused. Outside double quotes, `$'…'`
    /// is ANSI-C quoting (decoded) and `$"…"` a string translated with the locale at run
    /// time (dynamic).
    fn dollar(&mut self, w: &mut WordBuf, in_double_quotes: bool) -> Option<()> {
        match self.peek_next() {
            Some('(' | '[') => None,
            Some('{') => {
                self.skip_pair();
                let mut s = String::from("${");
                loop {
                    let c = self.peek()?;
                    self.i += 1;
                    s.push(c);
                    match c {
                        '}' => break,
                        '$' | '`' | '(' | '\'' | '"' | '\\' | '{' => return None,
                        _ => {}
                    }
                }
                w.quoted_text(&s);
                w.dynamic = true;
                Some(())
            }
            Some('\'') if !in_double_quotes => {
                self.skip_pair();
                w.quoted = true;
                let (s, known) = self.ansi_c()?;
                w.quoted_text(&s);
                w.dynamic |= !known;
                Some(())
            }
            Some('"') if !in_double_quotes => {
                self.skip_pair();
                w.quoted = true;
                self.double_quoted(w)?;
                w.dynamic = true;
                Some(())
            }
            Some(n) if n.is_ascii_alphanumeric() || "_?#@*$!-".contains(n) => {
                self.i += 1;
                let mut s = String::from("$");
                self.peek();
                if n.is_ascii_alphabetic() || n == '_' {
                    while let Some(c) = self.peek() {
                        if c.is_ascii_alphanumeric() || c == '_' {
                            s.push(c);
                            self.i += 1;
                        } else {
                            break;
                        }
                    }
                } else {
                    s.push(n);
                    self.i += 1;
                }
                w.quoted_text(&s);
                w.dynamic = true;
                Some(())
            }
            _ => {
                // A lone `$` is literal.
                self.i += 1;
                if in_double_quotes {
                    w.quoted_text("$");
                } else {
                    w.literal('$');
                }
                Some(())
            }
        }
    }

    /// Reads the inside of `$'…'` after the opening quote, through the closing one, with
    /// its escapes decoded as bash does. The flag is false when the value is not known
    /// here: a NUL (bash ends the word there), a byte that is not ASCII (its character
    /// depends on the locale), a control-character escape.
    fn ansi_c(&mut self) -> Option<(String, bool)> {
        let mut s = String::new();
        let mut known = true;
        loop {
            let c = self.raw()?;
            self.i += 1;
            match c {
                '\'' => return Some((s, known)),
                '\\' => {
                    let n = self.raw()?;
                    self.i += 1;
                    let simple = match n {
                        'a' => Some('\x07'),
                        'b' => Some('\x08'),
                        'e' | 'E' => Some('\x1b'),
                        'f' => Some('\x0c'),
                        'n' => Some('\n'),
                        'r' => Some('\r'),
                        't' => Some('\t'),
                        'v' => Some('\x0b'),
                        '\\' | '\'' | '"' | '?' => Some(n),
                        _ => None,
                    };
                    if let Some(ch) = simple {
                        s.push(ch);
                        continue;
                    }
                    let value = match n {
                        '0'..='7' => {
                            self.i -= 1;
                            self.digits(8, 3)
                        }
                        'x' => self.digits(16, 2),
                        'u' => self.digits(16, 4),
                        'U' => self.digits(16, 8),
                        'c' => {
                            // `\cX`: a control character; not decoded here.
                            known = false;
                            s.push('\\');
                            s.push('c');
                            continue;
                        }
                        _ => {
                            // An unknown escape is kept as written.
                            s.push('\\');
                            s.push(n);
                            continue;
                        }
                    };
                    match value {
                        // `\x`, `\u` without digits stay as written.
                        None => {
                            s.push('\\');
                            s.push(n);
                        }
                        Some(v) => match char::from_u32(v) {
                            Some(ch) if v != 0 && v < 0x80 => s.push(ch),
                            _ => {
                                known = false;
                                s.push('\u{fffd}');
                            }
                        },
                    }
                }
                other => s.push(other),
            }
        }
    }

    /// Consumes the `$` at the current position and the character after it (through
    /// any line continuation between them).
    fn skip_pair(&mut self) {
        self.i += 1;
        self.peek();
        self.i += 1;
    }

    /// Up to `max` digits in `radix` at the current position, as written.
    fn digits(&mut self, radix: u32, max: usize) -> Option<u32> {
        let mut value: Option<u32> = None;
        for _ in 0..max {
            let Some(d) = self.raw().and_then(|c| c.to_digit(radix)) else {
                break;
            };
            value = Some(value.unwrap_or(0).saturating_mul(radix).saturating_add(d));
            self.i += 1;
        }
        value
    }
}
