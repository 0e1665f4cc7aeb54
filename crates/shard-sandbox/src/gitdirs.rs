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
//! **Git dirs by allow-list.** A git dir holds much that git trusts: `config`, `hooks/`,
//! `commondir`, other worktrees' `worktrees/*/`, submodules' `modules/*/config` and
//! hooks, `info/`, and whatever a future git reads. Code in the sandbox that never names
//! `.git` (a build, an MCP server, a hook) could plant any of them for the person's next
//! `git`. So every git dir of a writable root (its `.git` directory, a linked worktree's
//! own git dir and verified common dir, and the submodule git dirs under `modules/`) is
//! shown to each call through an overlay whose writes are dropped when the call ends,
//! except for an allow-list (`crate::sys::gitview`): `objects/`, `refs/` and `logs/` are
//! mounted through writable, and the root files a commit, fetch, merge, stash or rebase
//! rewrites are copied back into the real git dir once every process of the call is gone.

use std::path::{Path, PathBuf};

use crate::sys::{LOUD, THROUGH};

/// Paths of one root to protect.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Protection {
    /// Files that become read-only (a linked worktree's `.git` file).
    pub read_only: Vec<PathBuf>,
    /// Git dirs shown through a view, outer first.
    pub views: Vec<PathBuf>,
}

/// How deep submodules of submodules are followed.
const MAX_SUBMODULE_DEPTH: usize = 4;

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

/// What to protect in the repository at `root` (canonical): see the module comment.
/// `common` is the root's verified common dir, when it is a linked worktree.
pub(crate) fn protection(root: &Path, common: Option<&Path>) -> Protection {
    let mut p = Protection::default();
    let dot_git = root.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
        return p;
    };
    if meta.is_dir() {
        p.views.push(dot_git);
    } else if meta.is_file() {
        p.read_only.push(dot_git);
        if let (Some(common), Some(own)) = (common, linked_git_dir(root)) {
            p.views.push(common.to_path_buf());
            p.views.push(own);
        }
    }
    let mut submodules = Vec::new();
    for g in &p.views {
        find_submodules(g, 0, &mut submodules);
    }
    p.views.extend(submodules);
    p.views.sort_by_key(|v| v.components().count());
    p.views.dedup();
    p
}

/// The submodule git dirs under `git_dir/modules` (a submodule's name may hold slashes,
/// so every directory that looks like a git dir counts), and theirs in turn.
fn find_submodules(git_dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let path = entry.path();
            if is_git_dir(&path) {
                out.push(path.clone());
                find_submodules(&path, depth + 1, out);
            } else if depth < MAX_SUBMODULE_DEPTH {
                walk(&path, depth + 1, out);
            }
        }
    }
    if depth <= MAX_SUBMODULE_DEPTH {
        walk(&git_dir.join("modules"), depth, out);
    }
}

/// Does `dir` look like a git dir (a `HEAD` file, `objects/` and `refs/`)?
fn is_git_dir(dir: &Path) -> bool {
    dir.join("HEAD").is_file() && dir.join("objects").is_dir() && dir.join("refs").is_dir()
}

/// The parts of the git dir `dir` mounted through writable and read-only on top (those
/// that exist). A missing `logs/` is created (git would create it at the first commit),
/// so that reflogs written in the sandbox are kept.
pub(crate) fn view_parts(dir: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let logs = dir.join("logs");
    if std::fs::symlink_metadata(&logs).is_err()
        && let Err(err) = std::fs::create_dir(&logs)
    {
        tracing::debug!(path = %logs.display(), %err, "cannot create the logs directory");
    }
    let real_dir = |p: &PathBuf| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
    let through = THROUGH
        .iter()
        .map(|n| dir.join(n))
        .filter(real_dir)
        .collect();
    let read_only = LOUD
        .iter()
        .map(|n| dir.join(n))
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| !m.is_symlink()))
        .collect();
    (through, read_only)
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
    fn every_git_dir_of_a_root_gets_a_view_in_both_layouts() {
        let d = tempfile::tempdir().unwrap();
        let d = std::fs::canonicalize(d.path()).unwrap();
        let (common, wt) = linked(&d);
        let sub = common.join("modules/lib/inner");
        for p in ["objects", "refs"] {
            std::fs::create_dir_all(sub.join(p)).unwrap();
        }
        std::fs::write(sub.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        let p = protection(&d.join("repo"), None);
        assert_eq!(p.views, vec![common.clone(), sub.clone()]);
        assert!(p.read_only.is_empty());
        let p = protection(&wt, Some(&common));
        assert_eq!(
            p.views,
            vec![common.clone(), common.join("worktrees/w"), sub.clone()]
        );
        assert_eq!(p.read_only, vec![wt.join(".git")]);
        // Without a verified common dir only the `.git` file itself.
        assert_eq!(protection(&wt, None).read_only, vec![wt.join(".git")]);
        assert!(protection(&wt, None).views.is_empty());
        assert_eq!(protection(&d, None), Protection::default());
    }

    #[test]
    fn a_view_binds_what_exists_and_creates_logs() {
        let d = tempfile::tempdir().unwrap();
        let d = std::fs::canonicalize(d.path()).unwrap();
        let (common, _) = linked(&d);
        let (through, read_only) = view_parts(&common);
        assert_eq!(
            through,
            vec![
                common.join("objects"),
                common.join("refs"),
                common.join("logs")
            ]
        );
        assert_eq!(read_only, vec![common.join("config")]);
        let (through, read_only) = view_parts(&common.join("worktrees/w"));
        assert_eq!(through, vec![common.join("worktrees/w/logs")]);
        assert_eq!(
            read_only,
            vec![
                common.join("worktrees/w/commondir"),
                common.join("worktrees/w/gitdir")
            ]
        );
    }
}
