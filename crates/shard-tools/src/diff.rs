//! Unified-diff hunks for `diff` renders (docs/protocol.md §11), computed with `similar`.

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

/// Most characters a [`unified`] text carries: it travels in one permission request.
pub const MAX_UNIFIED_CHARS: usize = 256 * 1024;

/// The unified diff text turning `old` into `new` for `path`, as `diff -u` prints it;
/// `old` is `None` for a file that does not exist yet (`--- /dev/null`). Long diffs end
/// with a line saying what was left out.
pub fn unified(path: &str, old: Option<&str>, new: &str) -> String {
    let (hunks, mut cut) = hunks(old.unwrap_or(""), new);
    let from = if old.is_some() {
        format!("a/{path}")
    } else {
        "/dev/null".to_string()
    };
    let mut out = format!("--- {from}\n+++ b/{path}\n");
    'outer: for h in &hunks {
        out.push_str(&format!(
            "@@ -{},{} +{},{} @@\n",
            h.old_start, h.old_lines, h.new_start, h.new_lines
        ));
        for l in &h.lines {
            if out.len() + l.len() + 1 > MAX_UNIFIED_CHARS {
                cut = true;
                break 'outer;
            }
            out.push_str(l);
            out.push('\n');
        }
    }
    if hunks.is_empty() {
        out.push_str("(no change)\n");
    }
    if cut {
        out.push_str("… (the diff is longer; the rest is not shown)\n");
    }
    out
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
    fn unified_text_names_new_files_and_marks_lines() {
        let text = unified("n.txt", None, "one\ntwo\n");
        assert_eq!(
            text,
            "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n"
        );
        let text = unified("n.txt", Some("one\ntwo\n"), "one\nTWO\n");
        assert_eq!(
            text,
            "--- a/n.txt\n+++ b/n.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n"
        );
        assert!(unified("n.txt", Some("a\n"), "a\n").ends_with("(no change)\n"));
    }

    #[test]
    fn unified_text_is_bounded() {
        let big = "x".repeat(1000) + "\n";
        let text = unified("b", None, &big.repeat(1000));
        assert!(text.len() <= MAX_UNIFIED_CHARS + 100, "{}", text.len());
        assert!(text.ends_with("the rest is not shown)\n"));
    }

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
