//! Shared walker setup for `grep` and `find`: ripgrep's defaults (hidden files skipped,
//! `.gitignore`, `.ignore` and git excludes honoured) also outside a git repository.

use std::path::Path;

use ignore::WalkBuilder;

/// Walker threads: the machine's parallelism, capped as ripgrep caps it.
pub fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .min(12)
}

/// A walker over `root` with the tools' defaults.
pub fn builder(root: &Path) -> WalkBuilder {
    let mut b = WalkBuilder::new(root);
    b.hidden(true)
        .ignore(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        .parents(true)
        // The model expects .gitignore to count even in a directory that is not (yet) a repository.
        .require_git(false)
        .follow_links(false)
        .threads(threads());
    b
}
