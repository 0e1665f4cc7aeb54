//! A linked git worktree (a daemon workspace, docs/workspaces.md, or one the user made)
//! keeps its index, refs and objects in the main repository's common git dir, outside
//! the worktree. Tools run with writes confined to the workspace roots, so without that
//! directory `git commit` in the worktree could not work. An ordinary checkout's `.git`
//! is inside its root and already writable; this gives a linked worktree the same, and no
//! more (its own checkout's files stay read-only).

use std::path::{Path, PathBuf};

/// The common git dir of the linked worktree at `cwd`, when `cwd/.git` is a `gitdir:`
/// file whose git dir names one (`commondir`). `None` for anything else.
pub(super) fn common_dir(cwd: &Path) -> Option<PathBuf> {
    let link = cwd.join(".git");
    if !std::fs::symlink_metadata(&link).ok()?.is_file() {
        return None;
    }
    let text = std::fs::read_to_string(&link).ok()?;
    let gitdir = text.lines().next()?.strip_prefix("gitdir: ")?.trim();
    let gitdir = cwd.join(gitdir);
    let common = std::fs::read_to_string(gitdir.join("commondir")).ok()?;
    let common = gitdir.join(common.trim());
    let common = std::fs::canonicalize(common).ok()?;
    // A git dir has objects and refs; anything else is not what we were told it is.
    (common.join("objects").is_dir() && common.join("refs").is_dir()).then_some(common)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_common_dir_of_a_linked_worktree_only() {
        let d = tempfile::tempdir().unwrap();
        let common = d.path().join("repo/.git");
        let wt_gitdir = common.join("worktrees/w");
        std::fs::create_dir_all(common.join("objects")).unwrap();
        std::fs::create_dir_all(common.join("refs")).unwrap();
        std::fs::create_dir_all(&wt_gitdir).unwrap();
        std::fs::write(wt_gitdir.join("commondir"), "../..\n").unwrap();
        let wt = d.path().join("w");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", wt_gitdir.display()),
        )
        .unwrap();
        assert_eq!(
            common_dir(&wt),
            Some(std::fs::canonicalize(&common).unwrap())
        );
        // An ordinary checkout (a `.git` directory) and no git at all: nothing added.
        assert_eq!(common_dir(&d.path().join("repo")), None);
        assert_eq!(common_dir(d.path()), None);
        std::fs::write(wt.join(".git"), "gitdir: /nowhere\n").unwrap();
        assert_eq!(common_dir(&wt), None);
    }
}
