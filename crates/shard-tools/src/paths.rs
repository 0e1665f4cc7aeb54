//! Path resolution shared by the tools: relative to the agent's cwd, absolute accepted,
//! `~` expanded, and shown back the way the model should write it next time.

use std::path::{Component, Path, PathBuf};

/// Resolves a path argument against `cwd`; the result is absolute and lexically
/// normalized (no `.` or `..` components), so display and prefix checks are reliable.
pub fn resolve(cwd: &Path, arg: &str) -> PathBuf {
    let expanded = expand_tilde(arg);
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    };
    normalize(&joined)
}

fn expand_tilde(arg: &str) -> PathBuf {
    let home = || std::env::var_os("HOME").map(PathBuf::from);
    if arg == "~" {
        if let Some(h) = home() {
            return h;
        }
    } else if let Some(rest) = arg.strip_prefix("~/")
        && let Some(h) = home()
    {
        return h.join(rest);
    }
    PathBuf::from(arg)
}

/// Removes `.` and resolves `..` lexically.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for comp in path.components() {
        match comp {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push(comp);
                }
            }
            other => out.push(other),
        }
    }
    if out.as_os_str().is_empty() {
        // A relative cwd of "." must not normalize to an empty path.
        out.push(".");
    }
    out
}

/// How a path is shown to the model: relative to `cwd` when inside it (`.` for the cwd
/// itself), absolute otherwise.
pub fn display(cwd: &Path, path: &Path) -> String {
    match path.strip_prefix(cwd) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => path.to_string_lossy().into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_and_displays() {
        let cwd = Path::new("/repo");
        assert_eq!(
            resolve(cwd, "src/lib.rs"),
            PathBuf::from("/repo/src/lib.rs")
        );
        assert_eq!(resolve(cwd, "./a/../b"), PathBuf::from("/repo/b"));
        assert_eq!(resolve(cwd, "/etc/hosts"), PathBuf::from("/etc/hosts"));
        assert_eq!(resolve(Path::new("."), "."), PathBuf::from("."));
        assert_eq!(resolve(Path::new("a"), ".."), PathBuf::from("."));
        assert_eq!(display(cwd, Path::new("/repo/src/lib.rs")), "src/lib.rs");
        assert_eq!(display(cwd, Path::new("/repo")), ".");
        assert_eq!(display(cwd, Path::new("/repository/x")), "/repository/x");
        assert_eq!(display(cwd, Path::new("/etc/hosts")), "/etc/hosts");
    }

    #[test]
    fn expands_tilde() {
        if let Some(home) = std::env::var_os("HOME") {
            let home = PathBuf::from(home);
            assert_eq!(resolve(Path::new("/x"), "~/a"), normalize(&home.join("a")));
            assert_eq!(resolve(Path::new("/x"), "~"), normalize(&home));
        }
        assert_eq!(resolve(Path::new("/x"), "~user"), PathBuf::from("/x/~user"));
    }
}
