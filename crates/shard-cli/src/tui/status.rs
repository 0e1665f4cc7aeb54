//! The status line: spinner and elapsed time while the model works, then mode, model,
//! tokens, cost, context use and the connection. Segments are dropped from the least
//! useful end when the terminal is narrow, so it always fits in one row.

use ratatui::text::{Line, Span};
use shard_client::sanitize::strip;

use super::app::{App, Connection};

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// `12.3k`, `1.2M`.
pub fn short(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// The status line for `width` columns.
pub fn line(app: &App, width: u16) -> Line<'static> {
    let t = &app.theme;
    let v = &app.view;
    let mut left: Vec<Span<'static>> = Vec::new();
    if let Some(start) = app.turn_started {
        let ms = start.elapsed().as_millis();
        let frame = SPINNER[(ms / 80) as usize % SPINNER.len()];
        let what = v
            .status
            .map(|s| match s {
                shard_protocol::types::AgentStatus::WaitingForPermission => "waiting for you",
                shard_protocol::types::AgentStatus::WaitingForUi => "waiting for you",
                shard_protocol::types::AgentStatus::Compacting => "compacting",
                _ => "working",
            })
            .unwrap_or("working");
        left.push(Span::styled(
            format!("{frame} {what} {:.1}s ", ms as f64 / 1000.0),
            t.accent(),
        ));
    } else if app.quit_armed.is_some() {
        left.push(Span::styled("Ctrl+C again to quit ", t.error()));
    }
    let mut segs: Vec<String> = Vec::new();
    segs.push(v.mode.clone().unwrap_or_else(|| "?".into()));
    let mut model_seg = None;
    if let Some(m) = &v.model {
        model_seg = Some((segs.len(), strip(&m.model)));
        segs.push(strip(&m.id));
    }
    let u = &v.usage;
    if u.calls > 0 {
        segs.push(format!(
            "↑{} ↓{}",
            short(u.input + u.cache_read + u.cache_write),
            short(u.output)
        ));
        if let Some(c) = u.cost {
            segs.push(format!("${c:.4}"));
        }
    }
    if let Some(ctx) = u.context_tokens {
        match v.model.as_ref().and_then(|m| m.context_window) {
            Some(w) if w > 0 => segs.push(format!("ctx {}%", ctx * 100 / w)),
            _ => segs.push(format!("ctx {}", short(ctx))),
        }
    }
    segs.push(match &app.connection {
        Connection::Connecting => "connecting".into(),
        Connection::Daemon(id) => format!("daemon {id}"),
        Connection::Direct => "direct".into(),
        Connection::Closed(why) => format!("disconnected: {}", strip(why)),
    });
    if app.observer {
        segs.push("observer".into());
    }
    if let Some(d) = &v.status_detail {
        segs.insert(0, strip(d));
    }
    let used: usize = left.iter().map(|s| s.width()).sum();
    let budget = (width as usize).saturating_sub(used);
    let fits = |segs: &[String]| {
        segs.iter().map(|s| s.chars().count()).sum::<usize>() + 3 * segs.len().saturating_sub(1)
            <= budget
    };
    // Narrow: the model without its provider first, then drop from the middle, keeping
    // the mode (first) and the connection (last).
    if !fits(&segs)
        && let Some((i, short)) = model_seg
    {
        let i = i + usize::from(v.status_detail.is_some());
        if let Some(s) = segs.get_mut(i) {
            *s = short;
        }
    }
    while segs.len() > 2 && !fits(&segs) {
        segs.remove(segs.len() - 2);
    }
    let mut text = segs.join(" · ");
    if text.chars().count() > budget {
        text = text.chars().take(budget).collect();
    }
    left.push(Span::styled(text, t.dim()));
    Line::from(left)
}
