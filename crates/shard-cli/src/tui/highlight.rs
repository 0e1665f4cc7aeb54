//! Code highlighting with syntect's grammars (its default Sublime syntax set, parsed by the
//! pure-Rust `fancy-regex` engine, so no C library and a short build). Scopes map onto the
//! client's own [`Theme`] rather than a syntect colour theme, so `NO_COLOR` and the
//! terminal's palette hold for code as for everything else.
//!
//! Loading the syntax set costs milliseconds, more than the whole first paint may take, so
//! it is never loaded on the start-up path: [`preload`] loads it on a background thread
//! once the client is up, and the first code block waits for that load only if it comes
//! before the load finished (docs/performance.md, "Code highlighting").

use std::sync::OnceLock;

use ratatui::style::Style;
use ratatui::text::Span;
use syntect::parsing::{ParseState, Scope, ScopeStack, SyntaxSet};

use super::theme::Theme;

static SYNTAXES: OnceLock<SyntaxSet> = OnceLock::new();

fn syntaxes() -> &'static SyntaxSet {
    SYNTAXES.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// Starts loading the syntax set off the start-up path (no-op when already loaded).
pub fn preload() {
    if SYNTAXES.get().is_some() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("syntax-load".into())
        .spawn(|| {
            syntaxes();
            warm_up();
        });
    if let Err(e) = spawned {
        // Not fatal: the first code block loads it instead.
        tracing::debug!(error = %e, "could not start the syntax loader");
    }
}

/// Languages whose grammars are exercised once on the loader thread: syntect compiles a
/// grammar's regexes on first use (tens of milliseconds), and that cost must not land in
/// the frame that first shows a code block of the language.
const WARM_UP: &[(&str, &str)] = &[
    ("rust", "fn main() { let x: u8 = 1; } // c"),
    ("python", "def f(x): return \"s\" # c"),
    ("js", "const f = (x) => `s${x}`; // c"),
    ("go", "func main() { x := 1 } // c"),
    ("sh", "for f in *; do echo \"$f\"; done # c"),
    ("json", "{\"a\": [1, true, null]}"),
    ("yaml", "a: [b, 1] # c"),
    ("c", "int main(void) { return 0; } /* c */"),
    ("cpp", "auto x = std::vector<int>{}; // c"),
    ("java", "class A { void f() {} } // c"),
    ("diff", "@@ -1 +1 @@\n-a\n+b"),
    ("html", "<a href=\"x\">y</a>"),
    ("css", "a { color: red; }"),
    ("md", "# h\n*a* `b`"),
];

fn warm_up() {
    // Parsing does not depend on the colours; any theme exercises the grammar.
    let theme = Theme::from_env();
    for (lang, sample) in WARM_UP {
        let mut code = Code::new(lang, &theme);
        for line in sample.lines() {
            code.line(line, &theme);
        }
    }
}

/// The highlighting state of one code block: lines must be fed in order, because a
/// construct (a block comment, a multi-line string) carries from one line to the next.
#[derive(Debug, Clone)]
pub struct Code {
    /// `None` for a language the syntax set does not know: plain text.
    state: Option<(ParseState, ScopeStack)>,
}

impl Code {
    /// A block in `lang` (a name or a file extension: `rust`, `rs`, `Python`, `sh`…);
    /// plain under a colourless theme, which never loads the grammars.
    pub fn new(lang: &str, theme: &Theme) -> Code {
        let lang = lang.trim();
        if lang.is_empty() || !theme.coloured_output() {
            return Code { state: None };
        }
        let ss = syntaxes();
        let syntax = ss
            .find_syntax_by_token(lang)
            .or_else(|| ss.find_syntax_by_token(&lang.to_ascii_lowercase()));
        Code {
            state: syntax.map(|s| (ParseState::new(s), ScopeStack::new())),
        }
    }

    /// Highlights the next line (without its newline).
    pub fn line(&mut self, line: &str, theme: &Theme) -> Vec<Span<'static>> {
        let Some((parse, stack)) = &mut self.state else {
            return plain(line);
        };
        let with_nl = format!("{line}\n");
        let ops = match parse.parse_line(&with_nl, syntaxes()) {
            Ok(ops) => ops,
            Err(e) => {
                // A grammar the regex engine cannot run: the rest of the block is plain.
                tracing::debug!(error = %e, "highlighting stopped");
                self.state = None;
                return plain(line);
            }
        };
        let mut out = Spans::default();
        let mut last = 0;
        for (pos, op) in ops {
            let pos = pos.min(line.len());
            if pos > last {
                out.push(&line[last..pos], style_of(stack, theme));
                last = pos;
            }
            if stack.apply(&op).is_err() {
                self.state = None;
                out.push(&line[last..], Style::default());
                return out.0;
            }
        }
        if last < line.len() {
            out.push(&line[last..], style_of(stack, theme));
        }
        out.0
    }
}

/// Spans with neighbours of the same style merged.
#[derive(Default)]
struct Spans(Vec<Span<'static>>);

impl Spans {
    fn push(&mut self, text: &str, style: Style) {
        if text.is_empty() {
            return;
        }
        if let Some(prev) = self.0.last_mut()
            && prev.style == style
        {
            prev.content.to_mut().push_str(text);
            return;
        }
        self.0.push(Span::styled(text.to_string(), style));
    }
}

fn plain(line: &str) -> Vec<Span<'static>> {
    if line.is_empty() {
        Vec::new()
    } else {
        vec![Span::raw(line.to_string())]
    }
}

/// The scope families the client colours, most specific first in each match.
struct Families {
    comment: Scope,
    string: Scope,
    constant: Scope,
    keyword: Scope,
    storage: Scope,
    function: Scope,
    type_name: Scope,
    support: Scope,
}

fn families() -> &'static Option<Families> {
    static F: OnceLock<Option<Families>> = OnceLock::new();
    F.get_or_init(|| {
        let s = |n: &str| Scope::new(n).ok();
        Some(Families {
            comment: s("comment")?,
            string: s("string")?,
            constant: s("constant")?,
            keyword: s("keyword")?,
            storage: s("storage")?,
            function: s("entity.name.function")?,
            type_name: s("entity.name.type")?,
            support: s("support")?,
        })
    })
}

/// The style of the innermost scope the client colours.
fn style_of(stack: &ScopeStack, theme: &Theme) -> Style {
    let Some(f) = families() else {
        return Style::default();
    };
    for scope in stack.as_slice().iter().rev() {
        let is = |family: &Scope| family.is_prefix_of(*scope);
        if is(&f.comment) {
            return theme.dim();
        }
        if is(&f.string) {
            return theme.string();
        }
        if is(&f.constant) {
            return theme.code();
        }
        if is(&f.keyword) || is(&f.storage) {
            return theme.keyword();
        }
        if is(&f.function) || is(&f.type_name) || is(&f.support) {
            return theme.name();
        }
    }
    Style::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn styled(spans: &[Span<'_>]) -> Vec<(String, Style)> {
        spans
            .iter()
            .map(|s| (s.content.to_string(), s.style))
            .collect()
    }

    #[test]
    fn rust_keywords_strings_and_comments_are_coloured() {
        let t = Theme::coloured();
        let spans = Code::new("rust", &t).line("let s = \"x\"; // c", &t);
        let got = styled(&spans);
        let text: String = got.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(text, "let s = \"x\"; // c");
        assert!(got.contains(&("let".into(), t.keyword())), "{got:?}");
        assert!(
            got.iter()
                .any(|(s, st)| s.contains("\"x\"") && *st == t.string()),
            "{got:?}"
        );
        assert!(
            got.iter()
                .any(|(s, st)| s.contains("// c") && *st == t.dim()),
            "{got:?}"
        );
    }

    #[test]
    fn state_carries_across_lines() {
        let t = Theme::coloured();
        let mut c = Code::new("rs", &t);
        c.line("/* a block", &t);
        let spans = c.line("still comment */ let x = 1;", &t);
        let got = styled(&spans);
        assert_eq!(got[0].1, t.dim(), "{got:?}");
        assert!(got.contains(&("let".into(), t.keyword())), "{got:?}");
    }

    #[test]
    fn every_warmed_up_language_has_a_grammar() {
        let missing: Vec<&str> = WARM_UP
            .iter()
            .map(|(lang, _)| *lang)
            .filter(|lang| Code::new(lang, &Theme::coloured()).state.is_none())
            .collect();
        assert!(missing.is_empty(), "no grammar for {missing:?}");
        warm_up();
    }

    #[test]
    fn unknown_languages_and_no_colour_stay_plain() {
        let t = Theme::coloured();
        let spans = Code::new("no-such-language", &t).line("let x = 1;", &t);
        assert_eq!(
            styled(&spans),
            vec![("let x = 1;".into(), Style::default())]
        );
        let spans =
            Code::new("python", &Theme::plain()).line("def f(): return 'x'", &Theme::plain());
        assert!(spans.iter().all(|s| s.style.fg.is_none()), "{spans:?}");
    }
}
