//! What git prints for the daemon, read: `worktree list --porcelain`, `status
//! --porcelain=v2`, `rev-list --count`. Kept apart from the builder of git runs (git.rs).

use std::path::PathBuf;

/// One entry of `git worktree list --porcelain`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct WorktreeEntry {
    pub path: PathBuf,
    pub head: Option<String>,
    /// `refs/heads/…`, absent when detached.
    pub branch: Option<String>,
    pub bare: bool,
    pub locked: bool,
    pub prunable: bool,
}

/// Parses `git worktree list --porcelain` (the first entry is the main worktree).
pub(crate) fn parse_worktrees(text: &str) -> Vec<WorktreeEntry> {
    let mut out = Vec::new();
    let mut cur: Option<WorktreeEntry> = None;
    for line in text.lines() {
        if let Some(p) = line.strip_prefix("worktree ") {
            if let Some(e) = cur.take() {
                out.push(e);
            }
            cur = Some(WorktreeEntry {
                path: PathBuf::from(p),
                ..Default::default()
            });
            continue;
        }
        let Some(e) = cur.as_mut() else { continue };
        let (key, value) = line.split_once(' ').unwrap_or((line, ""));
        match key {
            "HEAD" => e.head = Some(value.to_string()),
            "branch" => e.branch = Some(value.to_string()),
            "bare" => e.bare = true,
            "locked" => e.locked = true,
            "prunable" => e.prunable = true,
            _ => {}
        }
    }
    if let Some(e) = cur {
        out.push(e);
    }
    out
}

/// What `git status --porcelain=v2 --branch -z` says about a worktree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct StatusSummary {
    /// `branch.head`: the checked-out branch's short name, `None` when detached.
    pub head_branch: Option<String>,
    /// `branch.oid`: the commit HEAD points at (`None` before the first commit).
    pub head_oid: Option<String>,
    /// Changed tracked entries plus untracked files (ignored ones are not listed).
    pub dirty: u64,
}

/// Parses `git status --porcelain=v2 --branch -z --untracked-files=all --no-renames`.
pub(crate) fn parse_status(text: &str) -> StatusSummary {
    let mut s = StatusSummary::default();
    for rec in text.split('\0').filter(|r| !r.is_empty()) {
        if let Some(h) = rec.strip_prefix("# branch.head ") {
            if h != "(detached)" {
                s.head_branch = Some(h.to_string());
            }
        } else if let Some(o) = rec.strip_prefix("# branch.oid ") {
            if o != "(initial)" {
                s.head_oid = Some(o.to_string());
            }
        } else if rec.starts_with('#') {
        } else if rec.starts_with("1 ")
            || rec.starts_with("2 ")
            || rec.starts_with("u ")
            || rec.starts_with("? ")
        {
            s.dirty += 1;
        }
    }
    s
}

/// Parses `git rev-list --left-right --count A...B` into (left, right).
pub(crate) fn parse_counts(text: &str) -> Option<(u64, u64)> {
    let mut it = text.split_whitespace();
    let a = it.next()?.parse().ok()?;
    let b = it.next()?.parse().ok()?;
    Some((a, b))
}

/// `refs/heads/x` → `x`, other refs unchanged.
pub(crate) fn short_ref(r: &str) -> &str {
    r.strip_prefix("refs/heads/").unwrap_or(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worktree_list_is_parsed_with_flags() {
        let text = "worktree /r\nHEAD aaa\nbranch refs/heads/main\n\nworktree /w/1\nHEAD bbb\ndetached\nlocked reason\n\nworktree /w/2\nHEAD ccc\nbranch refs/heads/x\nprunable gitdir file points to non-existent location\n\n";
        let v = parse_worktrees(text);
        assert_eq!(v.len(), 3);
        assert_eq!(v[0].branch.as_deref(), Some("refs/heads/main"));
        assert!(v[1].locked && v[1].branch.is_none());
        assert!(v[2].prunable);
        assert_eq!(v[2].path, PathBuf::from("/w/2"));
    }

    #[test]
    fn status_counts_tracked_and_untracked_but_not_headers() {
        let text = "# branch.oid abc\x00# branch.head feature\x001 .M N... 100644 100644 100644 a a f.txt\x00? new.txt\x00u UU N... 1 2 3 4 a b c d c.txt\x00";
        let s = parse_status(text);
        assert_eq!(s.head_branch.as_deref(), Some("feature"));
        assert_eq!(s.head_oid.as_deref(), Some("abc"));
        assert_eq!(s.dirty, 3);
        let d = parse_status("# branch.oid (initial)\x00# branch.head (detached)\x00");
        assert_eq!(d, StatusSummary::default());
    }

    #[test]
    fn counts_and_refs() {
        assert_eq!(parse_counts("3\t5\n"), Some((3, 5)));
        assert_eq!(parse_counts("x"), None);
        assert_eq!(short_ref("refs/heads/a/b"), "a/b");
        assert_eq!(short_ref("refs/remotes/o/m"), "refs/remotes/o/m");
    }
}
