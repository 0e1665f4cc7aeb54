//! A small streaming-friendly markdown renderer: headings, lists, quotes, fenced code
//! blocks, inline `code`, **bold** and *italic*. It reads line by line, so a message
//! half-streamed renders the same as its prefix of the finished one, and an unclosed
//! fence simply renders as code until it closes.
//!
//! Code is highlighted by a token highlighter (keywords, strings, comments, numbers)
//! instead of syntect: syntect's grammars add seconds of build time and tens of
//! milliseconds of start-up, against a 50 ms first-paint budget (docs/decisions.md).

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::theme::Theme;

/// Renders markdown `text` into unwrapped lines.
pub fn render(text: &str, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let mut r = Renderer::default();
    for raw in text.split('\n') {
        r.line(raw, theme, &mut out);
    }
    out
}

/// A line-by-line renderer: its only state is whether a code fence is open, so a
/// streaming message renders its finished lines once and only its last line per frame.
#[derive(Debug, Clone, Default)]
pub struct Renderer {
    fence: Option<String>,
}

impl Renderer {
    /// Renders one source line (without its newline).
    pub fn line(&mut self, raw: &str, theme: &Theme, out: &mut Vec<Line<'static>>) {
        let trimmed = raw.trim_start();
        if let Some(rest) = trimmed.strip_prefix("```") {
            match self.fence {
                Some(_) => {
                    self.fence = None;
                    out.push(Line::from(Span::styled("└─", theme.dim())));
                }
                None => {
                    let lang = rest.trim().to_string();
                    let label = if lang.is_empty() {
                        "┌─".to_string()
                    } else {
                        format!("┌─ {lang}")
                    };
                    out.push(Line::from(Span::styled(label, theme.dim())));
                    self.fence = Some(lang);
                }
            }
            return;
        }
        if let Some(lang) = &self.fence {
            let mut spans = vec![Span::styled("│ ", theme.dim())];
            spans.extend(highlight(raw, lang, theme));
            out.push(Line::from(spans));
            return;
        }
        out.push(block_line(raw, theme));
    }
}

fn block_line(raw: &str, theme: &Theme) -> Line<'static> {
    let trimmed = raw.trim_start();
    let indent = raw.len() - trimmed.len();
    let hashes = trimmed.chars().take_while(|&c| c == '#').count();
    if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
        let text = trimmed[hashes..].trim().to_string();
        let style = if hashes == 1 {
            theme.heading().add_modifier(Modifier::UNDERLINED)
        } else {
            theme.heading()
        };
        return Line::from(Span::styled(text, style));
    }
    if let Some(rest) = trimmed.strip_prefix("> ") {
        let mut spans = vec![Span::styled("▎ ", theme.dim())];
        spans.extend(inline(rest, theme.dim(), theme));
        return Line::from(spans);
    }
    let bullet = ["- ", "* ", "+ "]
        .iter()
        .find_map(|b| trimmed.strip_prefix(b));
    if let Some(rest) = bullet {
        let mut spans = vec![Span::raw(format!("{}• ", " ".repeat(indent)))];
        spans.extend(inline(rest, Style::default(), theme));
        return Line::from(spans);
    }
    let digits = trimmed.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && trimmed[digits..].starts_with(". ") {
        let mut spans = vec![Span::styled(
            format!("{}{} ", " ".repeat(indent), &trimmed[..digits + 1]),
            theme.bold(),
        )];
        spans.extend(inline(&trimmed[digits + 2..], Style::default(), theme));
        return Line::from(spans);
    }
    if trimmed == "---" || trimmed == "***" {
        return Line::from(Span::styled("─".repeat(20), theme.dim()));
    }
    Line::from(inline(raw, Style::default(), theme))
}

/// Inline markup: `code`, **bold**, *italic*.
fn inline(text: &str, base: Style, theme: &Theme) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    let mut cur = String::new();
    let mut bold = false;
    let mut italic = false;
    let style = |bold: bool, italic: bool| {
        let mut s = base;
        if bold {
            s = s.add_modifier(Modifier::BOLD);
        }
        if italic {
            s = s.add_modifier(Modifier::ITALIC);
        }
        s
    };
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '`'
            && let Some(end) = rest[1..].find('`')
        {
            if !cur.is_empty() {
                spans.push(Span::styled(std::mem::take(&mut cur), style(bold, italic)));
            }
            spans.push(Span::styled(rest[1..1 + end].to_string(), theme.code()));
            rest = &rest[end + 2..];
            continue;
        }
        if rest.starts_with("**") {
            if !cur.is_empty() {
                spans.push(Span::styled(std::mem::take(&mut cur), style(bold, italic)));
            }
            bold = !bold;
            rest = &rest[2..];
            continue;
        }
        if c == '*' && (italic || rest[1..].contains('*')) {
            if !cur.is_empty() {
                spans.push(Span::styled(std::mem::take(&mut cur), style(bold, italic)));
            }
            italic = !italic;
            rest = &rest[1..];
            continue;
        }
        cur.push(c);
        rest = &rest[c.len_utf8()..];
    }
    if !cur.is_empty() {
        spans.push(Span::styled(cur, style(bold, italic)));
    }
    spans
}

const KEYWORDS: &[&str] = &[
    "as",
    "async",
    "await",
    "break",
    "case",
    "class",
    "const",
    "continue",
    "def",
    "default",
    "do",
    "elif",
    "else",
    "enum",
    "export",
    "extends",
    "false",
    "fn",
    "for",
    "from",
    "func",
    "function",
    "if",
    "impl",
    "import",
    "in",
    "interface",
    "let",
    "loop",
    "match",
    "mod",
    "mut",
    "new",
    "nil",
    "None",
    "null",
    "package",
    "pub",
    "return",
    "self",
    "Self",
    "static",
    "struct",
    "switch",
    "then",
    "this",
    "trait",
    "true",
    "True",
    "False",
    "try",
    "type",
    "use",
    "var",
    "where",
    "while",
    "with",
    "yield",
    "fi",
    "done",
    "esac",
];

/// Highlights one line of code by tokens (see the module comment for why not syntect).
pub fn highlight(line: &str, lang: &str, theme: &Theme) -> Vec<Span<'static>> {
    let hash_comments = matches!(
        lang,
        "py" | "python" | "sh" | "bash" | "shell" | "toml" | "yaml" | "yml" | "rb" | "ruby"
    );
    let mut spans = Vec::new();
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    let mut plain = String::new();
    let flush = |plain: &mut String, spans: &mut Vec<Span<'static>>| {
        if !plain.is_empty() {
            spans.push(Span::raw(std::mem::take(plain)));
        }
    };
    while i < chars.len() {
        let c = chars[i];
        let rest_starts = |s: &str| chars[i..].iter().take(s.len()).copied().eq(s.chars());
        if rest_starts("//") || (hash_comments && c == '#') {
            flush(&mut plain, &mut spans);
            spans.push(Span::styled(
                chars[i..].iter().collect::<String>(),
                theme.dim(),
            ));
            return spans;
        }
        if c == '"' || c == '\'' {
            flush(&mut plain, &mut spans);
            let mut j = i + 1;
            while j < chars.len() && chars[j] != c {
                if chars[j] == '\\' {
                    j += 1;
                }
                j += 1;
            }
            let end = (j + 1).min(chars.len());
            spans.push(Span::styled(
                chars[i..end].iter().collect::<String>(),
                theme.string(),
            ));
            i = end;
            continue;
        }
        if c.is_alphanumeric() || c == '_' {
            let mut j = i;
            while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                j += 1;
            }
            let word: String = chars[i..j].iter().collect();
            if KEYWORDS.contains(&word.as_str()) {
                flush(&mut plain, &mut spans);
                spans.push(Span::styled(word, theme.keyword()));
            } else if word.chars().all(|c| c.is_ascii_digit()) {
                flush(&mut plain, &mut spans);
                spans.push(Span::styled(word, theme.code()));
            } else {
                plain.push_str(&word);
            }
            i = j;
            continue;
        }
        plain.push(c);
        i += 1;
    }
    flush(&mut plain, &mut spans);
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn blocks_render() {
        let t = Theme::plain();
        let out = render(
            "# Title\n- one\n2. two\n```rust\nfn x() {}\n```\nsome **bold** `c`",
            &t,
        );
        assert_eq!(
            text(&out),
            vec![
                "Title",
                "• one",
                "2. two",
                "┌─ rust",
                "│ fn x() {}",
                "└─",
                "some bold c"
            ]
        );
    }

    #[test]
    fn unclosed_fence_is_code() {
        let out = render("```\nlet a = 1;", &Theme::plain());
        assert_eq!(text(&out), vec!["┌─", "│ let a = 1;"]);
    }

    #[test]
    fn highlighter_marks_keywords_and_strings() {
        let t = Theme::from_env();
        let spans = highlight("let s = \"x\"; // c", "rust", &t);
        let words: Vec<String> = spans.iter().map(|s| s.content.to_string()).collect();
        assert_eq!(words, vec!["let", " s = ", "\"x\"", "; ", "// c"]);
    }
}
