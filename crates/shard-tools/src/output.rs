//! Bounded output: what the model sees stays within the limits (head and tail with a
//! marker), while the full output of a process is spilled to a private file.

use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};

use tokio::io::AsyncWriteExt;

/// The saved log stops growing here, so a runaway command cannot fill the disk.
pub const SAVED_OUTPUT_MAX: u64 = 256 * 1024 * 1024;

/// Most saved logs kept in one output folder (one per session); the oldest go first.
pub const SPILL_MAX_FILES: usize = 64;

/// Most bytes of saved logs kept in one output folder, counting room for the new log to
/// reach [`SAVED_OUTPUT_MAX`]; the oldest go first.
pub const SPILL_MAX_BYTES: u64 = 1024 * 1024 * 1024;

/// Collects a stream of output bytes within a memory bound.
///
/// Everything is kept in memory until the stream exceeds the limits; from then on the
/// head stays in memory, the tail is a bounded ring, and every byte goes to a file in
/// `output_dir` (created 0700, file 0600).
#[derive(Debug)]
pub struct OutputCollector {
    max_bytes: usize,
    max_lines: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total_bytes: u64,
    total_lines: u64,
    spilled: bool,
    spill: Option<Spill>,
    spill_error: Option<String>,
    output_dir: PathBuf,
    prefix: &'static str,
}

#[derive(Debug)]
struct Spill {
    path: PathBuf,
    file: tokio::fs::File,
    written: u64,
}

/// The collected output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectedOutput {
    /// What the model sees.
    pub text: String,
    /// True when `text` lacks part of the output.
    pub truncated: bool,
    /// Where the full output was saved, when it was cut.
    pub saved_to: Option<PathBuf>,
    /// Total bytes seen.
    pub total_bytes: u64,
}

impl OutputCollector {
    /// A collector for the given limits; `prefix` names the saved file (`bash-…`).
    pub fn new(
        max_bytes: usize,
        max_lines: usize,
        output_dir: &Path,
        prefix: &'static str,
    ) -> Self {
        OutputCollector {
            max_bytes: max_bytes.max(64),
            max_lines: max_lines.max(2),
            head: Vec::new(),
            tail: VecDeque::new(),
            total_bytes: 0,
            total_lines: 0,
            spilled: false,
            spill: None,
            spill_error: None,
            output_dir: output_dir.to_path_buf(),
            prefix,
        }
    }

    /// Total bytes received so far.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// Adds a chunk of output.
    pub async fn push(&mut self, chunk: &[u8]) {
        self.total_bytes += chunk.len() as u64;
        self.total_lines += memchr_count(chunk);
        if !self.spilled {
            self.head.extend_from_slice(chunk);
            if self.head.len() > self.max_bytes || line_count(&self.head) > self.max_lines as u64 {
                self.spilled = true;
                let all = std::mem::take(&mut self.head);
                self.start_spill(&all).await;
                self.push_tail(&all);
                let keep = all.len().min(self.max_bytes);
                self.head = all;
                self.head.truncate(keep);
            }
            return;
        }
        self.push_tail(chunk);
        self.write_spill(chunk).await;
    }

    fn push_tail(&mut self, chunk: &[u8]) {
        let cap = self.max_bytes;
        let chunk = if chunk.len() > cap {
            &chunk[chunk.len() - cap..]
        } else {
            chunk
        };
        self.tail.extend(chunk.iter().copied());
        if self.tail.len() > cap {
            let excess = self.tail.len() - cap;
            self.tail.drain(..excess);
        }
    }

    async fn start_spill(&mut self, initial: &[u8]) {
        let dir = self.output_dir.clone();
        let prefix = self.prefix;
        let created = tokio::task::spawn_blocking(move || create_private_file(&dir, prefix)).await;
        match created {
            Ok(Ok((path, file))) => {
                self.spill = Some(Spill {
                    path,
                    file: tokio::fs::File::from_std(file),
                    written: 0,
                });
                self.write_spill(initial).await;
            }
            Ok(Err(err)) => self.spill_error = Some(err.to_string()),
            Err(err) => self.spill_error = Some(err.to_string()),
        }
    }

    async fn write_spill(&mut self, chunk: &[u8]) {
        let Some(spill) = &mut self.spill else { return };
        let room = SAVED_OUTPUT_MAX.saturating_sub(spill.written);
        let n = (chunk.len() as u64).min(room) as usize;
        if n == 0 {
            return;
        }
        if let Err(err) = spill.file.write_all(&chunk[..n]).await {
            tracing::warn!(path = %spill.path.display(), %err, "saving tool output failed");
            self.spill_error = Some(err.to_string());
            self.spill = None;
            return;
        }
        spill.written += n as u64;
    }

    /// Ends the stream and builds what the model sees.
    pub async fn finish(mut self, display_path: impl Fn(&Path) -> String) -> CollectedOutput {
        if !self.spilled {
            return CollectedOutput {
                text: String::from_utf8_lossy(&self.head).into_owned(),
                truncated: false,
                saved_to: None,
                total_bytes: self.total_bytes,
            };
        }
        if let Some(spill) = &mut self.spill
            && let Err(err) = spill.file.flush().await
        {
            self.spill_error = Some(err.to_string());
        }
        let half_bytes = self.max_bytes / 2;
        let half_lines = self.max_lines / 2;
        let head = head_part(&self.head, half_bytes, half_lines);
        let tail_vec: Vec<u8> = self.tail.iter().copied().collect();
        let tail = tail_part(&tail_vec, half_bytes, half_lines);
        let shown_lines = memchr_count(head) + memchr_count(tail);
        let cut_lines = (self.total_lines + 1).saturating_sub(shown_lines + 1);
        let cut_bytes = self
            .total_bytes
            .saturating_sub((head.len() + tail.len()) as u64);
        let saved = match (&self.spill, &self.spill_error) {
            (Some(spill), _) => {
                let capped = if spill.written < self.total_bytes {
                    format!(" (only its first {} bytes)", spill.written)
                } else {
                    String::new()
                };
                format!("full output saved to {}{capped}", display_path(&spill.path))
            }
            (None, Some(err)) => format!("full output could not be saved: {err}"),
            (None, None) => "full output was not saved".to_string(),
        };
        let mut text = String::from_utf8_lossy(head).into_owned();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!(
            "[... {cut_lines} lines ({cut_bytes} bytes) cut of {} lines ({} bytes) in total; {saved} ...]\n",
            self.total_lines, self.total_bytes
        ));
        text.push_str(&String::from_utf8_lossy(tail));
        CollectedOutput {
            text,
            truncated: true,
            saved_to: self.spill.map(|s| s.path),
            total_bytes: self.total_bytes,
        }
    }
}

/// Creates `dir` (0700) and a fresh 0600 file in it, first removing the oldest saved
/// logs beyond the folder's bounds.
fn create_private_file(dir: &Path, prefix: &str) -> io::Result<(PathBuf, std::fs::File)> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    prune_saved(dir, SPILL_MAX_FILES - 1, SPILL_MAX_BYTES - SAVED_OUTPUT_MAX);
    let named = tempfile::Builder::new()
        .prefix(&format!("{prefix}-"))
        .suffix(".log")
        .tempfile_in(dir)?;
    let (file, path) = named.keep().map_err(|e| e.error)?;
    Ok((path, file))
}

/// Removes the oldest `*.log` files of `dir` until at most `max_files` remain and they
/// hold at most `max_bytes`. Best effort: a file that cannot be removed is skipped.
fn prune_saved(dir: &Path, max_files: usize, max_bytes: u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut logs: Vec<(std::time::SystemTime, u64, PathBuf)> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            meta.is_file().then(|| {
                let when = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
                (when, meta.len(), e.path())
            })
        })
        .collect();
    logs.sort();
    let mut count = logs.len();
    let mut bytes: u64 = logs.iter().map(|l| l.1).sum();
    for (_, len, path) in logs {
        if count <= max_files && bytes <= max_bytes {
            break;
        }
        match std::fs::remove_file(&path) {
            Ok(()) => {
                count -= 1;
                bytes = bytes.saturating_sub(len);
            }
            Err(err) => {
                tracing::debug!(path = %path.display(), %err, "cannot remove an old saved log")
            }
        }
    }
}

fn memchr_count(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}

/// Lines in `bytes`, counting an unterminated last line.
fn line_count(bytes: &[u8]) -> u64 {
    let n = memchr_count(bytes);
    if bytes.last().is_some_and(|&b| b != b'\n') {
        n + 1
    } else {
        n
    }
}

/// The first whole lines within the budgets (a single overlong first line is cut).
fn head_part(bytes: &[u8], max_bytes: usize, max_lines: usize) -> &[u8] {
    let mut end = 0;
    let mut lines = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if i >= max_bytes || lines >= max_lines {
            break;
        }
        if b == b'\n' {
            lines += 1;
            end = i + 1;
        }
    }
    if end == 0 {
        end = bytes.len().min(max_bytes);
    }
    &bytes[..end]
}

/// The last whole lines within the budgets (a single overlong last line is cut).
fn tail_part(bytes: &[u8], max_bytes: usize, max_lines: usize) -> &[u8] {
    let floor = bytes.len().saturating_sub(max_bytes);
    // The final newline ends the last line; it does not start an empty one.
    let body_end = if bytes.last() == Some(&b'\n') {
        bytes.len() - 1
    } else {
        bytes.len()
    };
    let mut lines = 0;
    let mut i = body_end;
    while i > floor {
        i -= 1;
        if bytes[i] == b'\n' {
            lines += 1;
            if lines >= max_lines {
                return &bytes[i + 1..];
            }
        }
    }
    if floor == 0 || bytes[floor - 1] == b'\n' {
        return &bytes[floor..];
    }
    // Start at the first whole line inside the byte budget, if there is one.
    match bytes[floor..body_end].iter().position(|&b| b == b'\n') {
        Some(p) => &bytes[floor + p + 1..],
        None => &bytes[floor..],
    }
}

/// Tracks the output budget while a result is formatted, so that only what is shown gets
/// formatted at all.
#[derive(Debug, Clone)]
pub struct Budget {
    bytes_left: usize,
    lines_left: usize,
    exhausted: bool,
}

impl Budget {
    /// A budget of `max_bytes` and `max_lines`.
    pub fn new(max_bytes: usize, max_lines: usize) -> Self {
        Budget {
            bytes_left: max_bytes,
            lines_left: max_lines,
            exhausted: false,
        }
    }

    /// Takes one line of `bytes` bytes; false (and exhausted from then on) when it does not fit.
    pub fn take(&mut self, bytes: usize) -> bool {
        if self.exhausted || bytes > self.bytes_left || self.lines_left == 0 {
            self.exhausted = true;
            return false;
        }
        self.bytes_left -= bytes;
        self.lines_left -= 1;
        true
    }

    /// True once something did not fit.
    pub fn exhausted(&self) -> bool {
        self.exhausted
    }
}

/// Caps a finished text to the limits, keeping the head, for tools whose output has
/// no file to spill to (the model narrows its query instead).
pub fn cap_text(text: String, max_bytes: usize, max_lines: usize) -> (String, bool) {
    let bytes = text.as_bytes();
    if bytes.len() <= max_bytes && line_count(bytes) <= max_lines as u64 {
        return (text, false);
    }
    let head = head_part(bytes, max_bytes, max_lines);
    let mut out = String::from_utf8_lossy(head).into_owned();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    (out, true)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn head_and_tail_keep_whole_lines() {
        let text = b"a\nbb\nccc\ndddd\n";
        assert_eq!(head_part(text, 100, 2), b"a\nbb\n");
        assert_eq!(head_part(text, 6, 10), b"a\nbb\n");
        assert_eq!(tail_part(text, 100, 2), b"ccc\ndddd\n");
        assert_eq!(tail_part(text, 9, 10), b"ccc\ndddd\n");
        assert_eq!(tail_part(text, 8, 10), b"dddd\n");
        assert_eq!(tail_part(b"xxxxxxxx", 3, 10), b"xxx");
        assert_eq!(tail_part(text, 100, 10), text);
    }

    #[tokio::test]
    async fn small_output_is_kept_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = OutputCollector::new(1000, 10, dir.path(), "t");
        c.push(b"hello\n").await;
        let out = c.finish(|p| p.display().to_string()).await;
        assert_eq!(out.text, "hello\n");
        assert!(!out.truncated);
        assert!(out.saved_to.is_none());
    }

    #[tokio::test]
    async fn large_output_is_cut_and_saved() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let out_dir = dir.path().join("out");
        let mut c = OutputCollector::new(1000, 20, &out_dir, "t");
        let mut all = String::new();
        for i in 0..500 {
            let line = format!("line {i}\n");
            all.push_str(&line);
            c.push(line.as_bytes()).await;
        }
        let out = c.finish(|p| p.display().to_string()).await;
        assert!(out.truncated);
        assert!(out.text.starts_with("line 0\nline 1\n"));
        assert!(out.text.ends_with("line 499\n"));
        assert!(out.text.contains("lines"));
        assert!(out.text.lines().count() <= 22, "{}", out.text);
        let saved = out.saved_to.unwrap();
        assert!(out.text.contains(&saved.display().to_string()));
        assert_eq!(std::fs::read_to_string(&saved).unwrap(), all);
        let mode = std::fs::metadata(&saved).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let mode = std::fs::metadata(&out_dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }

    #[test]
    fn old_saved_logs_are_removed_first() {
        let dir = tempfile::tempdir().unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(100);
        for i in 0..5 {
            let p = dir.path().join(format!("bash-{i}.log"));
            std::fs::write(&p, vec![b'x'; 10]).unwrap();
            let f = std::fs::File::options().write(true).open(&p).unwrap();
            f.set_modified(old + std::time::Duration::from_secs(i))
                .unwrap();
        }
        std::fs::write(dir.path().join("keep.txt"), "not a log").unwrap();
        // By count: the two oldest go.
        prune_saved(dir.path(), 3, u64::MAX);
        let left = |d: &Path| {
            let mut v: Vec<String> = std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        assert_eq!(
            left(dir.path()),
            ["bash-2.log", "bash-3.log", "bash-4.log", "keep.txt"]
        );
        // By bytes: 30 bytes held, 15 allowed, so two more go.
        prune_saved(dir.path(), 100, 15);
        assert_eq!(left(dir.path()), ["bash-4.log", "keep.txt"]);
    }

    #[test]
    fn cap_text_keeps_head() {
        let (t, cut) = cap_text("a\nb\nc\n".into(), 100, 2);
        assert_eq!(t, "a\nb\n");
        assert!(cut);
        let (t, cut) = cap_text("a\nb\n".into(), 100, 2);
        assert_eq!(t, "a\nb\n");
        assert!(!cut);
    }
}
