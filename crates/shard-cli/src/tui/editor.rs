//! The input editor: multi-line text with a cursor, and the prompt history of this
//! project, kept in `SHARD_HOME/history/<hash of the directory>` (owner-only, one JSON
//! string a line, the last 500 kept) so Up recalls yesterday's prompts in the same
//! repository and not another's.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

const HISTORY_MAX: usize = 500;

/// Multi-line input with history.
#[derive(Debug, Default)]
pub struct Editor {
    /// The text.
    pub text: String,
    /// Byte offset of the cursor.
    pub cursor: usize,
    history: Vec<String>,
    /// Position while browsing history (`history.len()` = the draft).
    browse: usize,
    draft: String,
    file: Option<PathBuf>,
}

impl Editor {
    /// An editor with the history of `cwd` loaded from `shard_home`.
    pub fn with_history(shard_home: &Path, cwd: &Path) -> Editor {
        let hash = Sha256::digest(cwd.as_os_str().as_encoded_bytes());
        let name: String = hash.iter().take(12).map(|b| format!("{b:02x}")).collect();
        let file = shard_home.join("history").join(name);
        let history: Vec<String> = std::fs::read_to_string(&file)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        Editor {
            browse: history.len(),
            history,
            file: Some(file),
            ..Editor::default()
        }
    }

    /// Inserts text at the cursor.
    pub fn insert(&mut self, s: &str) {
        self.text.insert_str(self.cursor, s);
        self.cursor += s.len();
    }

    /// Deletes the character before the cursor.
    pub fn backspace(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
            self.text.remove(self.cursor);
        }
    }

    /// Deletes the character under the cursor.
    pub fn delete(&mut self) {
        if self.cursor < self.text.len() {
            self.text.remove(self.cursor);
        }
    }

    /// Moves left one character.
    pub fn left(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
        }
    }

    /// Moves right one character.
    pub fn right(&mut self) {
        if let Some(c) = self.text[self.cursor..].chars().next() {
            self.cursor += c.len_utf8();
        }
    }

    /// Start of the current line.
    pub fn home(&mut self) {
        self.cursor = self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1);
    }

    /// End of the current line.
    pub fn end(&mut self) {
        self.cursor = self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i);
    }

    /// Deletes the word before the cursor (Ctrl+W).
    pub fn delete_word(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end();
        let start = trimmed.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// The cursor is on the first line (Up browses history there).
    pub fn on_first_line(&self) -> bool {
        !self.text[..self.cursor].contains('\n')
    }

    /// The cursor is on the last line.
    pub fn on_last_line(&self) -> bool {
        !self.text[self.cursor..].contains('\n')
    }

    /// Moves up a line, keeping the column when it can.
    pub fn up(&mut self) {
        let line_start = self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1);
        if line_start == 0 {
            return;
        }
        let col = self.text[line_start..self.cursor].chars().count();
        let prev_start = self.text[..line_start - 1].rfind('\n').map_or(0, |i| i + 1);
        let prev = &self.text[prev_start..line_start - 1];
        self.cursor = prev_start + prev.chars().take(col).map(char::len_utf8).sum::<usize>();
    }

    /// Moves down a line.
    pub fn down(&mut self) {
        let Some(nl) = self.text[self.cursor..].find('\n') else {
            return;
        };
        let line_start = self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1);
        let col = self.text[line_start..self.cursor].chars().count();
        let next_start = self.cursor + nl + 1;
        let next_end = self.text[next_start..]
            .find('\n')
            .map_or(self.text.len(), |i| next_start + i);
        let next = &self.text[next_start..next_end];
        self.cursor = next_start + next.chars().take(col).map(char::len_utf8).sum::<usize>();
    }

    /// Older history entry.
    pub fn history_prev(&mut self) {
        if self.browse == 0 {
            return;
        }
        if self.browse == self.history.len() {
            self.draft = self.text.clone();
        }
        self.browse -= 1;
        self.set(self.history[self.browse].clone());
    }

    /// Newer history entry, then the draft.
    pub fn history_next(&mut self) {
        if self.browse >= self.history.len() {
            return;
        }
        self.browse += 1;
        let t = if self.browse == self.history.len() {
            std::mem::take(&mut self.draft)
        } else {
            self.history[self.browse].clone()
        };
        self.set(t);
    }

    /// Replaces the text, cursor at the end.
    pub fn set(&mut self, text: String) {
        self.cursor = text.len();
        self.text = text;
    }

    /// Takes the text out, recording it in the history.
    pub fn take(&mut self) -> String {
        let text = std::mem::take(&mut self.text);
        self.cursor = 0;
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
            self.persist(&text);
        }
        self.browse = self.history.len();
        text
    }

    fn persist(&mut self, entry: &str) {
        let Some(file) = &self.file else { return };
        let Some(dir) = file.parent() else { return };
        if shard_session::records::ensure_private_dir(dir).is_err() {
            return;
        }
        if self.history.len() > HISTORY_MAX + HISTORY_MAX / 5 {
            // Rewrite now and then rather than on every prompt.
            let keep = self.history.split_off(self.history.len() - HISTORY_MAX);
            self.history = keep;
            let body: String = self
                .history
                .iter()
                .filter_map(|h| serde_json::to_string(h).ok())
                .map(|l| l + "\n")
                .collect();
            let tmp = file.with_extension("tmp");
            let written = std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)
                .and_then(|mut f| f.write_all(body.as_bytes()));
            if written.is_ok() {
                let _ = std::fs::rename(&tmp, file);
            }
            return;
        }
        let Ok(line) = serde_json::to_string(entry) else {
            return;
        };
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(file)
        {
            let _ = writeln!(f, "{line}");
        }
    }

    /// Row and column (in cells) of the cursor, for placing the terminal cursor.
    pub fn cursor_row_col(&self) -> (usize, usize) {
        let before = &self.text[..self.cursor];
        let row = before.matches('\n').count();
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = unicode_width::UnicodeWidthStr::width(&before[line_start..]);
        (row, col)
    }

    /// The word being typed before the cursor (for completion).
    pub fn current_word(&self) -> (usize, &str) {
        let before = &self.text[..self.cursor];
        let start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        (start, &before[start..])
    }

    /// Replaces the text from byte `start` to the cursor.
    pub fn replace_word_from(&mut self, start: usize, with: &str) {
        self.text.replace_range(start..self.cursor, with);
        self.cursor = start + with.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_and_moves() {
        let mut e = Editor::default();
        e.insert("ab\ncd");
        e.up();
        assert_eq!(e.cursor, 2);
        e.backspace();
        assert_eq!(e.text, "a\ncd");
        e.down();
        assert_eq!(e.cursor_row_col(), (1, 1));
        e.delete_word();
        assert_eq!(e.text, "a\nd");
    }

    #[test]
    fn history_persists_per_project() {
        let home = tempfile::tempdir().expect("tempdir");
        let mut e = Editor::with_history(home.path(), Path::new("/p/one"));
        e.insert("first");
        assert_eq!(e.take(), "first");
        e.insert("draft");
        e.history_prev();
        assert_eq!(e.text, "first");
        e.history_next();
        assert_eq!(e.text, "draft");
        let again = Editor::with_history(home.path(), Path::new("/p/one"));
        assert_eq!(again.history, vec!["first".to_string()]);
        let other = Editor::with_history(home.path(), Path::new("/p/two"));
        assert!(other.history.is_empty());
    }
}
