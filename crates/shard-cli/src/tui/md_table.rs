//! Markdown tables (`| a | b |` rows under a `|---|---|` delimiter) drawn as aligned
//! columns. A finished message is rendered whole, so its columns are sized from every
//! row; while a table is still streaming each row is drawn on its own (cells separated,
//! not yet aligned) and the message is redrawn aligned once complete.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

use super::markdown::inline;
use super::theme::Theme;

/// The cells of a table row, or None when the line is not one (it must hold a `|`).
pub fn cells(line: &str) -> Option<Vec<String>> {
    let t = line.trim();
    if !t.contains('|') {
        return None;
    }
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = t.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cur.push('|');
                chars.next();
            }
            '|' => out.push(std::mem::take(&mut cur).trim().to_string()),
            _ => cur.push(c),
        }
    }
    out.push(cur.trim().to_string());
    Some(out)
}

/// Whether the line is a delimiter row: `|---|:---:|`.
pub fn is_delimiter(line: &str) -> bool {
    cells(line).is_some_and(|cs| {
        !cs.is_empty()
            && cs.iter().all(|c| {
                let c = c.trim_start_matches(':').trim_end_matches(':');
                !c.is_empty() && c.chars().all(|ch| ch == '-')
            })
    })
}

/// Whether a table starts at `lines[i]`: a row, then a delimiter of as many cells.
pub fn starts_at(lines: &[&str], i: usize) -> bool {
    match (lines.get(i).and_then(|l| cells(l)), lines.get(i + 1)) {
        (Some(head), Some(next)) => {
            is_delimiter(next) && cells(next).is_some_and(|d| d.len() == head.len())
        }
        _ => false,
    }
}

/// Draws the table starting at `lines[i]`; returns how many source lines it took.
pub fn render(lines: &[&str], i: usize, theme: &Theme, out: &mut Vec<Line<'static>>) -> usize {
    let Some(head) = cells(lines[i]) else {
        return 0;
    };
    let n = head.len();
    let mut rows = vec![head];
    let mut used = 2;
    while let Some(row) = lines.get(i + used).and_then(|l| cells(l)) {
        rows.push(row);
        used += 1;
    }
    let mut widths = vec![0usize; n];
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(plain(c, theme).width());
        }
    }
    for (r, row) in rows.iter().enumerate() {
        let base = if r == 0 {
            theme.bold()
        } else {
            Style::default()
        };
        let mut spans = Vec::new();
        for (k, w) in widths.iter().enumerate() {
            if k > 0 {
                spans.push(Span::styled(" │ ", theme.dim()));
            }
            let cell = row.get(k).map(String::as_str).unwrap_or("");
            let pad = w.saturating_sub(plain(cell, theme).width());
            spans.extend(inline(cell, base, theme));
            if k + 1 < n && pad > 0 {
                spans.push(Span::raw(" ".repeat(pad)));
            }
        }
        out.push(Line::from(spans));
        if r == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
            out.push(Line::styled(rule.join("─┼─"), theme.dim()));
        }
    }
    used
}

/// One row while streaming: its cells separated, the delimiter as a rule.
pub fn row_alone(line: &str, theme: &Theme) -> Option<Line<'static>> {
    if !line.trim_start().starts_with('|') {
        return None;
    }
    if is_delimiter(line) {
        return Some(Line::styled("─".repeat(20), theme.dim()));
    }
    let cs = cells(line)?;
    let mut spans = Vec::new();
    for (k, c) in cs.iter().enumerate() {
        if k > 0 {
            spans.push(Span::styled(" │ ", theme.dim()));
        }
        spans.extend(inline(c, Style::default(), theme));
    }
    Some(Line::from(spans))
}

fn plain(cell: &str, theme: &Theme) -> String {
    inline(cell, Style::default(), theme)
        .iter()
        .map(|s| s.content.as_ref())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_is_aligned() {
        let src = [
            "| name | n |",
            "|---|--:|",
            "| `alpha` | 1 |",
            "| b | 200 |",
            "after",
        ];
        let mut out = Vec::new();
        let used = render(&src, 0, &Theme::plain(), &mut out);
        assert_eq!(used, 4);
        let text: Vec<String> = out.iter().map(|l| l.to_string()).collect();
        assert_eq!(
            text,
            vec!["name  │ n", "──────┼────", "alpha │ 1", "b     │ 200"]
        );
    }

    #[test]
    fn pipes_in_prose_are_not_a_table() {
        assert!(!starts_at(&["a | b", "more text"], 0));
        assert!(starts_at(&["a | b", "--- | ---"], 0));
        assert_eq!(cells("| a \\| b | c |").unwrap(), vec!["a | b", "c"]);
    }
}
