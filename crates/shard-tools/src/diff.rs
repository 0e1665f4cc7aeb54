//! Unified-diff hunks for `diff` renders (ARCHITECTURE §4.5), computed with `similar`.

use std::time::Duration;

use shard_protocol::types::Hunk;
use similar::{ChangeTag, TextDiff};

/// Context lines around each change.
const CONTEXT: usize = 3;
/// A render carries at most this many hunk lines; renders are for people, and a huge
/// rewrite would otherwise bloat every event and the transcript.
pub const MAX_RENDER_LINES: usize = 4000;
/// Diffing gives up refining after this long (the result stays a correct, coarser diff).
const DIFF_TIMEOUT: Duration = Duration::from_secs(2);

/// Hunks turning `old` into `new`, and whether some were left out to respect
/// [`MAX_RENDER_LINES`].
pub fn hunks(old: &str, new: &str) -> (Vec<Hunk>, bool) {
    // A BOM is invisible to people; showing it would make an untouched first line look changed.
    let old = old.strip_prefix('\u{feff}').unwrap_or(old);
    let new = new.strip_prefix('\u{feff}').unwrap_or(new);
    let diff = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new);
    let mut out = Vec::new();
    let mut total = 0usize;
    for group in diff.grouped_ops(CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        let mut lines = Vec::new();
        for op in &group {
            for change in diff.iter_changes(op) {
                let prefix = match change.tag() {
                    ChangeTag::Equal => ' ',
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                };
                let value = change.value();
                let value = value.strip_suffix('\n').unwrap_or(value);
                let value = value.strip_suffix('\r').unwrap_or(value);
                lines.push(format!("{prefix}{value}"));
            }
        }
        if total + lines.len() > MAX_RENDER_LINES && !out.is_empty() {
            return (out, true);
        }
        total += lines.len();
        out.push(Hunk {
            old_start: start_of(&old_range),
            old_lines: old_range.len() as u64,
            new_start: start_of(&new_range),
            new_lines: new_range.len() as u64,
            lines,
        });
    }
    (out, false)
}

/// Unified-diff convention: 1-based first line, or the line before an empty range.
fn start_of(range: &std::ops::Range<usize>) -> u64 {
    if range.is_empty() {
        range.start as u64
    } else {
        range.start as u64 + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_hunk_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\n";
        let (h, cut) = hunks(old, new);
        assert!(!cut);
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].old_start, 2);
        assert_eq!(h[0].old_lines, 7);
        assert_eq!(h[0].new_lines, 7);
        assert_eq!(
            h[0].lines,
            vec![" b", " c", " d", "-e", "+E", " f", " g", " h"]
                .into_iter()
                .map(String::from)
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn new_file_hunk() {
        let (h, _) = hunks("", "x\r\ny\r\n");
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].old_start, 0);
        assert_eq!(h[0].old_lines, 0);
        assert_eq!(h[0].new_start, 1);
        assert_eq!(h[0].lines, vec!["+x".to_string(), "+y".to_string()]);
    }
}
