//! A small streaming-friendly markdown renderer: headings, lists, quotes, fenced code
//! blocks, tables (super::md_table), inline `code`, **bold** and *italic*. It reads line by line, so a message
//! half-streamed renders the same as its prefix of the finished one, and an unclosed
//! fence simply renders as code until it closes.
//!
//! Code is highlighted with syntect's grammars (`super::highlight`), one parse state per
//! fence, so a construct spanning lines (a block comment, a raw string) stays coloured.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::highlight::Code;
use super::md_table;
use super::theme::Theme;

/// Renders markdown `text` into unwrapped lines.
pub fn render(text: &str, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let mut r = Renderer::default();
    let lines: Vec<&str> = text.split('\n').collect();
    let mut i = 0;
    while i < lines.len() {
        // A whole text knows every row of a table: draw it aligned.
        if r.fence.is_none() && md_table::starts_at(&lines, i) {
            i += md_table::render(&lines, i, theme, &mut out);
            continue;
        }
        r.line(lines[i], theme, &mut out);
        i += 1;
    }
    out
}

/// A line-by-line renderer: its only state is whether a code fence is open, so a
/// streaming message renders its finished lines once and only its last line per frame.
#[derive(Debug, Clone, Default)]
pub struct Renderer {
    /// The open fence's highlighting state.
    fence: Option<Code>,
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
                    self.fence = Some(Code::new(&lang, theme));
                }
            }
            return;
        }
        if let Some(code) = &mut self.fence {
            let mut spans = vec![Span::styled("│ ", theme.dim())];
            spans.extend(code.line(raw, theme));
            out.push(Line::from(spans));
            return;
        }
        if let Some(row) = md_table::row_alone(raw, theme) {
            out.push(row);
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
pub(super) fn inline(text: &str, base: Style, theme: &Theme) -> Vec<Span<'static>> {
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
    fn fenced_code_is_highlighted_by_its_language() {
        let t = Theme::coloured();
        let out = render("```rust\nlet s = \"x\";\n```", &t);
        let code = &out[1];
        assert_eq!(code.to_string(), "│ let s = \"x\";");
        assert!(
            code.spans
                .iter()
                .any(|s| s.content == "let" && s.style == t.keyword()),
            "{code:?}"
        );
    }
}
