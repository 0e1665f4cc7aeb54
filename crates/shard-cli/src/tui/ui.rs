//! Drawing one frame: the conversation, the completion hints, the dialog or the input,
//! and the status line.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::app::App;
use super::conversation;
use super::slash;
use super::status;

const MAX_INPUT_ROWS: usize = 8;

/// Draws the whole client.
pub fn draw(f: &mut Frame<'_>, app: &mut App) {
    let area = f.area();
    let width = area.width;
    let theme = app.theme;
    let hints: Vec<Line<'static>> = if app.dialog.is_none() && !app.observer {
        hint_lines(app, width)
    } else {
        Vec::new()
    };
    // A dialog may take three quarters of the screen (a diff wants room); the input half.
    let max_bottom = match &app.dialog {
        Some(_) => (area.height.saturating_sub(3) as usize * 3 / 4).max(1),
        None => area.height.saturating_sub(3) as usize / 2 + 1,
    };
    let bottom: Vec<Line<'static>> = match &app.dialog {
        Some(d) => {
            let mut v = Vec::new();
            for l in d.lines(&theme, app.observer, width.max(10) as usize, max_bottom) {
                conversation::wrap(l, width.max(10) as usize, &mut v);
            }
            v
        }
        None => input_lines(app),
    };
    let bottom_rows = bottom.len().min(max_bottom) as u16;
    let [conv, sep, hint_area, input_area, status_area] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(1),
        Constraint::Length(hints.len() as u16),
        Constraint::Length(bottom_rows.max(1)),
        Constraint::Length(1),
    ])
    .areas(area);

    let height = conv.height as usize;
    // One screen less a line of overlap, so reading on keeps the context.
    app.page_rows = height.saturating_sub(1).max(1);
    let want = height + app.scroll;
    let (lines, top) = conversation::tail_lines(
        &app.view,
        &app.notes,
        &mut app.cache,
        &theme,
        app.opts,
        width,
        want,
    );
    if top && lines.len() < want {
        app.scroll = lines.len().saturating_sub(height);
        if app.scroll > 0 || lines.len() < height {
            app.want_older();
        }
    }
    let end = lines.len().saturating_sub(app.scroll);
    let start = end.saturating_sub(height);
    let visible: Vec<Line<'static>> = lines[start..end].to_vec();
    f.render_widget(Paragraph::new(visible), conv);

    let sep_text = if app.scroll > 0 {
        format!(
            "── ↑ {} lines above the bottom (Ctrl+End follows) ",
            app.scroll
        )
    } else {
        String::new()
    };
    let sep_line = Line::from(vec![
        Span::styled(sep_text.clone(), theme.dim()),
        Span::styled(
            "─".repeat((width as usize).saturating_sub(sep_text.chars().count())),
            theme.dim(),
        ),
    ]);
    f.render_widget(Paragraph::new(sep_line), sep);
    f.render_widget(Paragraph::new(hints), hint_area);
    let skip = bottom.len().saturating_sub(bottom_rows as usize);
    f.render_widget(Paragraph::new(bottom[skip..].to_vec()), input_area);
    f.render_widget(Paragraph::new(status::line(app, width)), status_area);

    if app.dialog.is_none() && !app.observer {
        let (row, col) = app.editor.cursor_row_col();
        let row = row.saturating_sub(
            app.editor
                .text
                .matches('\n')
                .count()
                .saturating_sub(MAX_INPUT_ROWS - 1),
        );
        let x = (input_area.x + 2 + col as u16).min(area.width.saturating_sub(1));
        let y = (input_area.y + row as u16).min(input_area.bottom().saturating_sub(1));
        f.set_cursor_position(Position::new(x, y));
    }
}

fn input_lines(app: &App) -> Vec<Line<'static>> {
    let theme = app.theme;
    if app.observer {
        return vec![Line::styled(
            "observing: read-only (attach without --observer to answer or prompt)",
            theme.dim(),
        )];
    }
    let mut v: Vec<Line<'static>> = app
        .editor
        .text
        .split('\n')
        .enumerate()
        .map(|(i, l)| {
            let mark = if i == 0 { "› " } else { "  " };
            Line::from(vec![
                Span::styled(mark, theme.user()),
                Span::raw(l.to_string()),
            ])
        })
        .collect();
    if app.editor.text.is_empty() {
        let hint = match (app.working(), app.opts.expand_tools) {
            (true, _) => "Enter queues a follow-up · Ctrl/Alt+Enter steers · Esc aborts",
            (false, false) => "type a prompt · /help · Ctrl+O full tool output",
            (false, true) => "type a prompt · /help · Ctrl+O short tool output",
        };
        v = vec![Line::from(vec![
            Span::styled("› ", theme.user()),
            Span::styled(hint, theme.dim()),
        ])];
    }
    let n = v.len();
    v.split_off(n.saturating_sub(MAX_INPUT_ROWS))
}

fn hint_lines(app: &mut App, width: u16) -> Vec<Line<'static>> {
    if app.editor.text.is_empty() {
        return Vec::new();
    }
    let Some((_, c)) = slash::candidates(app) else {
        return Vec::new();
    };
    let theme = app.theme;
    let mut line = String::new();
    for cand in c.iter().take(12) {
        if line.chars().count() + cand.chars().count() + 2 > width as usize {
            break;
        }
        line.push_str(cand);
        line.push_str("  ");
    }
    if line.is_empty() {
        return Vec::new();
    }
    if c.len() == 1
        && let Some((_, help)) = slash::COMMANDS.iter().find(|(n, _)| *n == c[0])
    {
        line.push_str(help);
    }
    vec![Line::styled(line, theme.dim())]
}
