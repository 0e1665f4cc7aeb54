//! What an approval of a project's `.mcp.json` pins besides the file itself: the
//! project's files its servers run. The agent's sandbox may write the project, so a
//! server whose code changed after approval needs approval again, as a changed
//! `.mcp.json` does.
//!
//! Pinned, each with its path and content:
//! - a file a word of `command` or `args` names (or the value of a `--flag=value`), as a
//!   path from the server's working directory;
//! - every file beneath a directory such a word names (a package run as a folder:
//!   `node ./srv`, `python srv/`);
//! - the module an interpreter finds by name, `-m pkg.mod` / `-mpkg.mod` (Python puts the
//!   working directory first on its search path): `pkg.py`, or the whole top-level
//!   package folder `pkg/`, since a module imports its package's other files.
//!
//! Only paths inside the project root count. A folder holds at most [`MAX_TREE_FILES`]
//! files read whole and [`MAX_TREE_BYTES`] bytes; past either, the remaining files are
//! pinned by length and modification time (a write still changes the hash). Python's
//! byte-code caches (`__pycache__`, `*.pyc`) and `.git` are left out: running the server
//! rewrites them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::ServerConfig;

/// Files of one pinned folder whose content is hashed; the rest by length and time.
pub const MAX_TREE_FILES: usize = 2_000;
/// Bytes of one pinned folder read for its hash; the rest by length and time.
pub const MAX_TREE_BYTES: u64 = 64 * 1024 * 1024;
/// Entries looked at in one folder walk at all: a bound on the time an approval takes.
const MAX_TREE_ENTRIES: usize = 100_000;

/// The files inside the project that the servers run (see the module comment), with
/// what their pin records: the content, or for files past a folder's bounds a line of
/// length and modification time.
pub fn pinned_files(
    servers: &BTreeMap<String, ServerConfig>,
    cwd: &Path,
    root: &Path,
) -> Vec<(PathBuf, Vec<u8>)> {
    let Ok(root) = std::fs::canonicalize(root) else {
        return Vec::new();
    };
    let mut pins = Pins::default();
    for cfg in servers.values().filter(|c| !c.disabled) {
        let base = cfg
            .cwd
            .as_deref()
            .map(|c| cwd.join(c))
            .unwrap_or_else(|| cwd.to_path_buf());
        let words: Vec<&str> = cfg
            .command
            .iter()
            .chain(cfg.args.iter())
            .map(String::as_str)
            .collect();
        for (i, word) in words.iter().enumerate() {
            let value = word.rsplit_once('=').map_or(*word, |(_, v)| v);
            for candidate in [*word, value] {
                pins.add_path(&root, &base.join(candidate), candidate);
            }
            if let Some(module) = python_module(word, words.get(i + 1).copied()) {
                pins.add_module(&root, &base, module);
            }
        }
    }
    let mut out = pins.files;
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0);
    out
}

/// The module a `-m` option names: `-m pkg.mod` (the next word) or `-mpkg.mod`.
fn python_module<'a>(word: &'a str, next: Option<&'a str>) -> Option<&'a str> {
    let module = match word {
        "-m" => next?,
        w if w.starts_with("-m") && w.len() > 2 && !w.starts_with("--") => &w[2..],
        _ => return None,
    };
    let valid = !module.is_empty()
        && module
            .split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_alphanumeric() || c == '_'));
    valid.then_some(module)
}

#[derive(Default)]
struct Pins {
    files: Vec<(PathBuf, Vec<u8>)>,
}

impl Pins {
    /// Pins `path` if it is a file or folder inside the project.
    fn add_path(&mut self, root: &Path, path: &Path, as_written: &str) {
        if as_written.is_empty() || as_written.contains("${") {
            return;
        }
        let Ok(real) = std::fs::canonicalize(path) else {
            return;
        };
        if !real.starts_with(root) {
            return;
        }
        if real.is_file() {
            self.add_file(&real);
        } else if real.is_dir() && real != root {
            self.add_tree(root, &real);
        }
    }

    /// Pins the module `pkg.mod` as Python would find it from `base`.
    fn add_module(&mut self, root: &Path, base: &Path, module: &str) {
        let mut parts = module.split('.');
        let Some(top) = parts.next() else { return };
        let package = base.join(top);
        if package.is_dir() {
            self.add_path(root, &package, top);
        } else {
            self.add_path(root, &base.join(format!("{top}.py")), top);
        }
    }

    fn add_file(&mut self, real: &Path) {
        if self.files.iter().any(|(p, _)| p == real) {
            return;
        }
        // Unreadable: pinned as empty; it changes the hash once readable.
        let content = std::fs::read(real).unwrap_or_default();
        self.files.push((real.to_path_buf(), content));
    }

    /// Every file beneath `dir` (symbolic links followed only to files inside the
    /// project), within the bounds of the module comment.
    fn add_tree(&mut self, root: &Path, dir: &Path) {
        let mut stack = vec![dir.to_path_buf()];
        let (mut files, mut bytes, mut seen) = (0usize, 0u64, 0usize);
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
            entries.sort_by_key(|e| e.file_name());
            for entry in entries {
                seen += 1;
                if seen > MAX_TREE_ENTRIES {
                    // Too many to look at: the folder itself changes the hash when a
                    // name is added or removed at its top.
                    self.files.push((dir.join("\0truncated"), Vec::new()));
                    return;
                }
                let name = entry.file_name();
                let name = name.to_string_lossy();
                if name == "__pycache__" || name == ".git" || name.ends_with(".pyc") {
                    continue;
                }
                let path = entry.path();
                let Ok(meta) = std::fs::metadata(&path) else {
                    continue;
                };
                if meta.is_dir() {
                    if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_symlink()) {
                        stack.push(path);
                    }
                    continue;
                }
                let Ok(real) = std::fs::canonicalize(&path) else {
                    continue;
                };
                if !real.starts_with(root) || self.files.iter().any(|(p, _)| *p == real) {
                    continue;
                }
                if files < MAX_TREE_FILES && bytes + meta.len() <= MAX_TREE_BYTES {
                    files += 1;
                    bytes += meta.len();
                    self.add_file(&real);
                } else {
                    let mtime = meta
                        .modified()
                        .ok()
                        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                        .map_or(0, |d| d.as_nanos());
                    let stamp = format!("len {} mtime {mtime}", meta.len()).into_bytes();
                    self.files.push((real, stamp));
                }
            }
        }
    }
}

/// What an approval records: the hash of the file alone when its servers name no file
/// of the project, else of the file and every pinned file's path and content.
pub fn approval_hash(file: &[u8], pinned: &[(PathBuf, Vec<u8>)]) -> String {
    if pinned.is_empty() {
        return crate::approval::sha256_hex(file);
    }
    let mut all = file.to_vec();
    for (path, content) in pinned {
        all.push(0);
        all.extend_from_slice(path.as_os_str().as_encoded_bytes());
        all.push(0);
        all.extend_from_slice(crate::approval::sha256_hex(content).as_bytes());
    }
    crate::approval::sha256_hex(&all)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn server(command: &str, args: &[&str]) -> BTreeMap<String, ServerConfig> {
        let cfg = ServerConfig {
            command: Some(command.into()),
            args: args.iter().map(|a| a.to_string()).collect(),
            ..Default::default()
        };
        [("s".to_string(), cfg)].into()
    }

    fn hash(servers: &BTreeMap<String, ServerConfig>, root: &Path) -> String {
        approval_hash(b"{}", &pinned_files(servers, root, root))
    }

    /// A module found by the interpreter's search, a folder run as a package, and the
    /// files a pinned package imports: a change to any of them is a new approval.
    #[test]
    fn attack_modules_and_packages_found_by_search_are_pinned() {
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(d.path()).unwrap();
        std::fs::create_dir_all(root.join("pkg/sub")).unwrap();
        std::fs::write(root.join("pkg/__init__.py"), "").unwrap();
        std::fs::write(root.join("pkg/server.py"), "import pkg.sub.util\n").unwrap();
        std::fs::write(root.join("pkg/sub/util.py"), "x = 1\n").unwrap();
        std::fs::write(root.join("single.py"), "print(1)\n").unwrap();
        std::fs::create_dir_all(root.join("srv")).unwrap();
        std::fs::write(root.join("srv/index.js"), "require('./lib')\n").unwrap();
        std::fs::write(root.join("srv/lib.js"), "1\n").unwrap();
        let cases: Vec<(BTreeMap<String, ServerConfig>, &str)> = vec![
            (server("python3", &["-m", "pkg.server"]), "pkg/sub/util.py"),
            (server("python3", &["-mpkg.server"]), "pkg/sub/util.py"),
            (
                server("uv", &["run", "python", "-m", "pkg"]),
                "pkg/__init__.py",
            ),
            (server("python3", &["-u", "-m", "single"]), "single.py"),
            (server("node", &["./srv"]), "srv/lib.js"),
            (server("node", &["--import=srv"]), "srv/lib.js"),
        ];
        for (servers, changed) in cases {
            let before = hash(&servers, &root);
            assert_eq!(before, hash(&servers, &root), "stable");
            let path = root.join(changed);
            let old = std::fs::read(&path).unwrap();
            std::fs::write(&path, b"import os; os.system('evil')\n").unwrap();
            assert_ne!(before, hash(&servers, &root), "{changed} unpinned");
            std::fs::write(&path, &old).unwrap();
            // A file added to a pinned package is a change too.
            if changed.contains('/') {
                let added = path.with_file_name("added.py");
                std::fs::write(&added, "evil = 1\n").unwrap();
                assert_ne!(before, hash(&servers, &root), "{changed}: an added file");
                std::fs::remove_file(&added).unwrap();
            }
            assert_eq!(before, hash(&servers, &root), "restored");
        }
        // Byte-code caches that running the server writes change nothing.
        let servers = server("python3", &["-m", "pkg.server"]);
        let before = hash(&servers, &root);
        std::fs::create_dir_all(root.join("pkg/__pycache__")).unwrap();
        std::fs::write(root.join("pkg/__pycache__/server.cpython-311.pyc"), "x").unwrap();
        assert_eq!(before, hash(&servers, &root));
        // Paths outside the project and the project root itself pin nothing.
        assert!(pinned_files(&server("python3", &["-m", "os"]), &root, &root).is_empty());
        assert!(pinned_files(&server("node", &["."]), &root, &root).is_empty());
        assert!(pinned_files(&server("node", &["/usr"]), &root, &root).is_empty());
    }

    #[test]
    fn module_options_are_read_in_both_spellings() {
        assert_eq!(python_module("-m", Some("a.b")), Some("a.b"));
        assert_eq!(python_module("-ma_b", None), Some("a_b"));
        assert_eq!(python_module("-m", Some("../x")), None);
        assert_eq!(python_module("--module", Some("x")), None);
        assert_eq!(python_module("-m", None), None);
    }
}
