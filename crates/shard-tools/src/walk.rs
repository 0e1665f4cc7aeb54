//! Shared walker setup for `grep` and `find`: ripgrep's defaults (hidden files skipped,
//! `.gitignore`, `.ignore` and git excludes honoured) also outside a git repository.

use std::path::Path;

use ignore::WalkBuilder;

use crate::tool::PathFilter;

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

/// Prunes the walk to what `filter` lets `tool` show: a hidden directory is not entered.
/// `root` is made real once, so each entry costs no system call unless it is a symlink.
pub fn filter(builder: &mut WalkBuilder, root: &Path, tool: &'static str, filter: &PathFilter) {
    if !filter.is_active() {
        return;
    }
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let root = root.to_path_buf();
    let filter = filter.clone();
    builder.filter_entry(move |e| {
        let rel = e.path().strip_prefix(&root).unwrap_or(e.path());
        let abs = real_root.join(rel);
        let link = e.file_type().is_some_and(|t| t.is_symlink());
        filter.allows(tool, &abs, link)
    });
}

/// Orders paths like their components would (`src/a` before `src-x/a`) while comparing
/// raw bytes, which is much cheaper than `Path`'s component-wise comparison.
pub fn cmp_paths(a: &Path, b: &Path) -> std::cmp::Ordering {
    use std::os::unix::ffi::OsStrExt;
    let key = |c: &u8| if *c == b'/' { 0 } else { *c };
    a.as_os_str()
        .as_bytes()
        .iter()
        .map(key)
        .cmp(b.as_os_str().as_bytes().iter().map(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_sort_by_components() {
        let mut v = vec![
            Path::new("src-x/a"),
            Path::new("src/b"),
            Path::new("src/a/c"),
            Path::new("a"),
        ];
        v.sort_by(|a, b| cmp_paths(a, b));
        assert_eq!(
            v,
            [
                Path::new("a"),
                Path::new("src/a/c"),
                Path::new("src/b"),
                Path::new("src-x/a")
            ]
        );
    }
}
