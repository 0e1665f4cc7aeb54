//! What the sandbox must know about the git repositories at its writable roots.
//!
//! **Writable common dirs.** A linked worktree (a daemon workspace, or one the user made
//! with `git worktree add`) keeps its index, refs and objects in the main repository's
//! common git dir, outside the worktree; without it `git commit` could not work in the
//! sandbox. The worktree's `.git` file and the `commondir` it leads to are written by
//! whoever can write the worktree, the agent included, so a forged pair could name any
//! repository. A common dir is made writable only when git's own back-link verifies:
//! the worktree's git dir is `<common>/worktrees/<name>` and its `gitdir` file names
//! this worktree's `.git`. Only `git worktree add` (run by the user or the daemon)
//! writes that link into a repository the agent cannot already write.
//!
//! **Files git trusts.** A repository's config and hooks name programs that the user's
//! next `git` runs outside any sandbox. They are mounted read-only over themselves, and
//! the git dirs holding them are mounted over themselves (writable) so that they cannot
//! be renamed away and replaced; the index, objects, refs and logs stay writable, so
//! agents commit as usual but cannot change config (`git -c` works per command).

use std::path::{Path, PathBuf};

/// Paths of one root to protect, in mount order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Protection {
    /// Directories that stay writable but cannot be renamed or removed.
    pub pinned: Vec<PathBuf>,
    /// Files and directories that become read-only.
    pub read_only: Vec<PathBuf>,
}

/// The git dir a `.git` file (`gitdir: …`) at `root` points to, as written (not checked).
fn linked_git_dir(root: &Path) -> Option<PathBuf> {
    let link = root.join(".git");
    if !std::fs::symlink_metadata(&link).ok()?.is_file() {
        return None;
    }
    let text = std::fs::read_to_string(&link).ok()?;
    let gitdir = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    std::fs::canonicalize(root.join(gitdir)).ok()
}

/// The common git dir of the linked worktree at `root`, when git's back-link verifies
/// (see the module comment); `None` for anything else.
pub(crate) fn writable_common_dir(root: &Path) -> Option<PathBuf> {
    let git_dir = linked_git_dir(root)?;
    let common = std::fs::read_to_string(git_dir.join("commondir")).ok()?;
    let common = std::fs::canonicalize(git_dir.join(common.trim())).ok()?;
    // A git dir has objects and refs; anything else is not what we were told it is.
    if !(common.join("objects").is_dir() && common.join("refs").is_dir()) {
        return None;
    }
    if git_dir.parent()? != common.join("worktrees") {
        return None;
    }
    let back = std::fs::read_to_string(git_dir.join("gitdir")).ok()?;
    let back = std::fs::canonicalize(git_dir.join(back.trim())).ok()?;
    let own = std::fs::canonicalize(root.join(".git")).ok()?;
    (back == own).then_some(common)
}

/// Files git trusts in the repository at `root` (canonical): see the module comment.
/// `common` is the root's verified common dir, when it is a linked worktree. A missing
/// hooks directory is created (empty, as `git init` makes it), so that it cannot be
/// created writable later.
pub(crate) fn protection(root: &Path, common: Option<&Path>) -> Protection {
    let mut p = Protection::default();
    let dot_git = root.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
        return p;
    };
    let mut git_dirs = Vec::new();
    if meta.is_dir() {
        git_dirs.push(dot_git);
    } else if meta.is_file() {
        p.read_only.push(dot_git);
        if let (Some(common), Some(own)) = (common, linked_git_dir(root)) {
            p.pinned.push(own.clone());
            for f in ["commondir", "gitdir", "config.worktree"] {
                p.read_only.push(own.join(f));
            }
            git_dirs.push(common.to_path_buf());
        }
    }
    for g in git_dirs {
        let hooks = g.join("hooks");
        if !hooks.exists()
            && let Err(err) = std::fs::create_dir(&hooks)
        {
            tracing::debug!(path = %hooks.display(), %err, "cannot create the hooks directory");
        }
        p.pinned.push(g.clone());
        for f in ["config", "config.worktree", "hooks"] {
            p.read_only.push(g.join(f));
        }
    }
    p.read_only.retain(|f| std::fs::symlink_metadata(f).is_ok());
    p
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// A main repository's git dir at `d/repo/.git` and a linked worktree `d/w` whose
    /// back-link names it.
    fn linked(d: &Path) -> (PathBuf, PathBuf) {
        let common = d.join("repo/.git");
        let wt_gitdir = common.join("worktrees/w");
        std::fs::create_dir_all(common.join("objects")).unwrap();
        std::fs::create_dir_all(common.join("refs")).unwrap();
        std::fs::create_dir_all(&wt_gitdir).unwrap();
        std::fs::write(common.join("config"), "").unwrap();
        std::fs::write(wt_gitdir.join("commondir"), "../..\n").unwrap();
        let wt = d.join("w");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", wt_gitdir.display()),
        )
        .unwrap();
        std::fs::write(
            wt_gitdir.join("gitdir"),
            format!("{}\n", wt.join(".git").display()),
        )
        .unwrap();
        (std::fs::canonicalize(&common).unwrap(), wt)
    }

    #[test]
    fn the_common_dir_of_a_linked_worktree_needs_its_back_link() {
        let d = tempfile::tempdir().unwrap();
        let d = std::fs::canonicalize(d.path()).unwrap();
        let (common, wt) = linked(&d);
        assert_eq!(writable_common_dir(&wt), Some(common.clone()));
        // An ordinary checkout (a `.git` directory) and no git at all: nothing added.
        assert_eq!(writable_common_dir(&d.join("repo")), None);
        assert_eq!(writable_common_dir(&d), None);
        // The back-link names another worktree: refused.
        std::fs::write(common.join("worktrees/w/gitdir"), "/elsewhere/.git\n").unwrap();
        assert_eq!(writable_common_dir(&wt), None);
        std::fs::write(wt.join(".git"), "gitdir: /nowhere\n").unwrap();
        assert_eq!(writable_common_dir(&wt), None);
    }

    #[test]
    fn a_forged_git_file_cannot_name_another_repository() {
        let d = tempfile::tempdir().unwrap();
        let d = std::fs::canonicalize(d.path()).unwrap();
        let (other, _) = linked(&d);
        // The agent's own checkout: a `.git` file leading to a git dir it wrote, whose
        // `commondir` names the other repository.
        let ws = d.join("ws");
        let forged = ws.join("forged");
        std::fs::create_dir_all(&forged).unwrap();
        std::fs::write(ws.join(".git"), "gitdir: forged\n").unwrap();
        std::fs::write(forged.join("commondir"), format!("{}\n", other.display())).unwrap();
        std::fs::write(
            forged.join("gitdir"),
            format!("{}\n", ws.join(".git").display()),
        )
        .unwrap();
        assert_eq!(writable_common_dir(&ws), None);
        // Pointing at a real worktree of the other repository: its back-link names that
        // worktree, not this one.
        std::fs::write(
            ws.join(".git"),
            format!("gitdir: {}\n", other.join("worktrees/w").display()),
        )
        .unwrap();
        assert_eq!(writable_common_dir(&ws), None);
    }

    #[test]
    fn config_and_hooks_are_protected_in_both_layouts() {
        let d = tempfile::tempdir().unwrap();
        let d = std::fs::canonicalize(d.path()).unwrap();
        let (common, wt) = linked(&d);
        let p = protection(&d.join("repo"), None);
        assert_eq!(p.pinned, vec![common.clone()]);
        assert_eq!(
            p.read_only,
            vec![common.join("config"), common.join("hooks")],
            "the hooks directory is created"
        );
        let p = protection(&wt, Some(&common));
        assert_eq!(p.pinned, vec![common.join("worktrees/w"), common.clone()]);
        assert!(p.read_only.contains(&wt.join(".git")));
        assert!(p.read_only.contains(&common.join("worktrees/w/commondir")));
        assert!(p.read_only.contains(&common.join("config")));
        // Without a verified common dir only the `.git` file itself.
        assert_eq!(protection(&wt, None).read_only, vec![wt.join(".git")]);
        assert_eq!(protection(&d, None), Protection::default());
    }
}
