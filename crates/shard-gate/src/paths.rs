//! Paths as the gate compares them: a tool's `path` argument resolved
//! the way the kernel will resolve it — `~` expanded, relative to the cwd, `.`/`..` and
//! symlinks followed component by component against the real filesystem, a missing tail
//! kept lexically — and the workspace boundary: its roots (the cwd and
//! `[permissions] additional_directories`) and the secret locations no tool may touch
//! unless a rule allows them by name.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Symlinks followed while resolving one path before giving up (as the kernel's ELOOP).
const MAX_LINKS: usize = 40;

/// A `path` argument after resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// Absolute, normalized, symlinks resolved.
    pub abs: PathBuf,
    /// Relative to the cwd when inside it (`.` for the cwd itself): what `path` globs of
    /// rules are matched against, besides the absolute spelling.
    pub rel: Option<String>,
}

impl ResolvedPath {
    /// The spellings rules are matched against: relative (when inside the cwd) and
    /// absolute, each also with a trailing `/` (so a rule on `dir/**` covers `dir`).
    pub fn spellings(&self) -> Vec<String> {
        let mut v = Vec::with_capacity(4);
        let mut add = |s: String| {
            let slash = format!("{}/", s.trim_end_matches('/'));
            v.push(s);
            v.push(slash);
        };
        if let Some(r) = &self.rel {
            add(r.clone());
        }
        add(self.abs.to_string_lossy().into_owned());
        v
    }

    /// How the path is shown: relative inside the cwd, else absolute.
    pub fn shown(&self) -> String {
        self.rel
            .clone()
            .unwrap_or_else(|| self.abs.to_string_lossy().into_owned())
    }
}

/// Resolves `path` (absolute) against the real filesystem: each component is looked up,
/// a symlink is replaced by its target (relative targets against the link's directory),
/// `..` goes to the real parent, and components that do not exist are kept as written.
pub fn real(path: &Path) -> PathBuf {
    real_from(PathBuf::from("/"), path)
}

/// [`real`] for `path` relative to `base`, a directory already resolved (absolute, no
/// symlinks): the walk starts there instead of at `/`. An absolute `path` starts at `/`.
pub fn real_from(base: PathBuf, path: &Path) -> PathBuf {
    let mut out = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        base
    };
    // Components still to walk, last first.
    let mut todo: Vec<OsString> = Vec::new();
    push_components(&mut todo, path);
    let mut links = 0;
    let mut exists = true;
    while let Some(c) = todo.pop() {
        if c == "." {
            continue;
        }
        if c == ".." {
            out.pop();
            continue;
        }
        let candidate = out.join(&c);
        if exists {
            match std::fs::symlink_metadata(&candidate) {
                Ok(m) if m.file_type().is_symlink() && links < MAX_LINKS => {
                    links += 1;
                    if let Ok(target) = std::fs::read_link(&candidate) {
                        if target.is_absolute() {
                            out = PathBuf::from("/");
                        }
                        push_components(&mut todo, &target);
                        continue;
                    }
                }
                Ok(_) => {}
                Err(_) => exists = false,
            }
        }
        out = candidate;
    }
    out
}

/// Pushes `path`'s components onto `todo` so that they pop in order.
fn push_components(todo: &mut Vec<OsString>, path: &Path) {
    let comps: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            Component::CurDir => Some(".".into()),
            Component::RootDir | Component::Prefix(_) => None,
        })
        .collect();
    todo.extend(comps.into_iter().rev());
}

/// Well-known credential locations under the home directory.
const HOME_SECRETS: &[&str] = &[
    ".ssh",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".docker/config.json",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".config/gh/hosts.yml",
    ".password-store",
    ".local/share/keyrings",
    ".pgpass",
    ".vault-token",
    ".terraform.d/credentials.tfrc.json",
];

/// The workspace boundary of one Runtime.
#[derive(Debug, Clone)]
pub struct Workspace {
    cwd: PathBuf,
    roots: Vec<PathBuf>,
    home: Option<PathBuf>,
    shard_home: PathBuf,
    /// Readable inside SHARD_HOME: the spill files whose paths tool results name
    /// (`SHARD_HOME/tool-output` until [`Workspace::set_tool_output`] names the session's).
    tool_output: PathBuf,
    secrets: Vec<PathBuf>,
    /// Roots that contain no secret location and lie in none (SHARD_HOME aside): nothing
    /// under them is a secret.
    clean_roots: Vec<PathBuf>,
}

impl Workspace {
    /// The boundary for a Runtime at `cwd` (canonical), with `additional` directories
    /// (resolved against `cwd`), `shard_home`, and the user's home directory.
    pub fn new(
        cwd: &Path,
        additional: &[String],
        shard_home: &Path,
        home: Option<&Path>,
    ) -> Workspace {
        let cwd = real(cwd);
        let home = home.map(real);
        let mut roots = vec![cwd.clone()];
        for a in additional {
            roots.push(resolve_in(&cwd, home.as_deref(), a));
        }
        let shard_home = real(&absolute(&cwd, shard_home));
        let secrets: Vec<PathBuf> = home
            .as_ref()
            .map(|h| HOME_SECRETS.iter().map(|s| h.join(s)).collect())
            .unwrap_or_default();
        let clean_roots = roots
            .iter()
            .filter(|r| {
                let holds = |s: &PathBuf| s.starts_with(r) || r.starts_with(s);
                !secrets.iter().any(holds)
                    && (!shard_home.starts_with(r) || r.starts_with(&shard_home))
            })
            .cloned()
            .collect();
        Workspace {
            tool_output: shard_home.join("tool-output"),
            cwd,
            roots,
            home,
            shard_home,
            secrets,
            clean_roots,
        }
    }

    /// Where this Runtime's tool results spill their full output (inside its session
    /// folder under SHARD_HOME): readable although SHARD_HOME is not.
    pub fn set_tool_output(&mut self, dir: &Path) {
        self.tool_output = real(dir);
    }

    /// The working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The workspace roots (the cwd first).
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Resolves a tool's `path` argument the way the kernel does (a `..` after a symlink
    /// goes to the target's parent).
    pub fn resolve(&self, arg: &str) -> ResolvedPath {
        self.describe(resolve_in(&self.cwd, self.home.as_deref(), arg))
    }

    /// Every file a `path` argument may name: what the tools open (the argument made
    /// absolute and normalized lexically, then resolved) first, and the kernel's reading
    /// ([`Workspace::resolve`]) when it differs — they differ only when a `..` follows a
    /// symlink. The gate checks both, so neither reading slips past a rule.
    pub fn resolve_all(&self, arg: &str) -> Vec<ResolvedPath> {
        let expanded = expand(self.home.as_deref(), arg);
        let opened = self.describe(real(&lexical(&absolute(&self.cwd, &expanded))));
        let kernel = self.resolve(arg);
        if kernel == opened {
            vec![opened]
        } else {
            vec![opened, kernel]
        }
    }

    /// Describes an already absolute, resolved path (a file `grep` or `find` would print).
    pub fn describe(&self, abs: PathBuf) -> ResolvedPath {
        let rel = abs.strip_prefix(&self.cwd).ok().map(|r| {
            if r.as_os_str().is_empty() {
                ".".to_string()
            } else {
                r.to_string_lossy().into_owned()
            }
        });
        ResolvedPath { abs, rel }
    }

    /// True for the spill files under `SHARD_HOME/tool-output` that tool results name.
    pub fn is_tool_output(&self, p: &ResolvedPath) -> bool {
        p.abs.starts_with(&self.tool_output)
    }

    /// True when the path lies in a root that holds no secret location (nothing there can
    /// be a secret).
    pub fn in_clean_root(&self, abs: &Path) -> bool {
        self.clean_roots.iter().any(|r| abs.starts_with(r))
    }

    /// True when the path lies in one of the workspace roots.
    pub fn inside(&self, p: &ResolvedPath) -> bool {
        self.roots.iter().any(|r| p.abs.starts_with(r))
    }

    /// Why the path is a secret location, when it is one: SHARD_HOME (but a workspace
    /// root inside it and the tool-output spill files), a credential location under the
    /// home directory, or a `.env` file outside the workspace.
    pub fn secret(&self, p: &ResolvedPath) -> Option<String> {
        let abs = &p.abs;
        // Most paths a search walks are in a root that holds no secret location.
        if self.in_clean_root(abs) {
            return None;
        }
        if abs.starts_with(&self.shard_home)
            && !abs.starts_with(&self.tool_output)
            && !self
                .roots
                .iter()
                .any(|r| r.starts_with(&self.shard_home) && abs.starts_with(r))
        {
            return Some(format!(
                "{} is inside SHARD_HOME (Shard's configuration, grants and sessions)",
                abs.display()
            ));
        }
        if let Some(s) = self.secrets.iter().find(|s| abs.starts_with(s)) {
            return Some(format!("{} is a credential location", s.display()));
        }
        let name = abs.file_name().map(|n| n.to_string_lossy().into_owned());
        if let Some(n) = name
            && (n == ".env" || n.starts_with(".env."))
            && !self.inside(p)
        {
            return Some(format!(
                "{} is an environment file outside the workspace",
                abs.display()
            ));
        }
        None
    }
}

fn absolute(cwd: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    }
}

/// `~` expansion, then relative to `cwd`, then [`real`].
fn resolve_in(cwd: &Path, home: Option<&Path>, arg: &str) -> PathBuf {
    real(&absolute(cwd, &expand(home, arg)))
}

/// `~` and `~/…` expanded with `home`.
fn expand(home: Option<&Path>, arg: &str) -> PathBuf {
    match (arg, home) {
        ("~", Some(h)) => h.to_path_buf(),
        (a, Some(h)) if a.starts_with("~/") => h.join(&a[2..]),
        (a, _) => PathBuf::from(a),
    }
}

/// Removes `.` and resolves `..` by text (as the tools do before opening a path).
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_dots_and_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let root = real(dir.path());
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::create_dir_all(root.join("secrets")).unwrap();
        std::os::unix::fs::symlink(root.join("secrets"), root.join("a/link")).unwrap();
        std::os::unix::fs::symlink("../secrets", root.join("a/rel")).unwrap();
        let ws = Workspace::new(&root, &[], &root.join("home-of-shard"), None);
        for (arg, want) in [
            ("a/../secrets/key.txt", "secrets/key.txt"),
            ("./secrets/key.txt", "secrets/key.txt"),
            ("a/link/key.txt", "secrets/key.txt"),
            ("a/rel/key.txt", "secrets/key.txt"),
            ("a/link/../x", "x"),
            ("out/../escape.txt", "escape.txt"),
            ("missing/./x/../y", "missing/y"),
        ] {
            assert_eq!(ws.resolve(arg).rel.as_deref(), Some(want), "{arg}");
        }
        let abs = format!("{}/a/b/../../secrets/k", root.display());
        assert_eq!(ws.resolve(&abs).rel.as_deref(), Some("secrets/k"));
        assert!(ws.resolve("../elsewhere").rel.is_none());
        assert!(!ws.inside(&ws.resolve("../elsewhere")));
    }

    #[test]
    fn symlink_loops_end() {
        let dir = tempfile::tempdir().unwrap();
        let root = real(dir.path());
        std::os::unix::fs::symlink(root.join("l2"), root.join("l1")).unwrap();
        std::os::unix::fs::symlink(root.join("l1"), root.join("l2")).unwrap();
        let _ = real(&root.join("l1/x"));
    }

    #[test]
    fn secrets() {
        let dir = tempfile::tempdir().unwrap();
        let root = real(dir.path());
        let home = root.join("home");
        let cwd = home.join("project");
        std::fs::create_dir_all(&cwd).unwrap();
        let shard = home.join(".shard");
        let ws = Workspace::new(&cwd, &[], &shard, Some(&home));
        for bad in [
            "~/.ssh/id_ed25519",
            "~/.aws/credentials",
            "~/.config/gcloud/x",
            "~/.netrc",
            "~/.docker/config.json",
            "../.env",
            "~/.shard/config.toml",
            "~/.shard/grants/x.json",
        ] {
            assert!(ws.secret(&ws.resolve(bad)).is_some(), "{bad}");
        }
        for good in [
            ".env",
            "src/main.rs",
            "~/.shard/tool-output/a.log",
            "~/notes.txt",
        ] {
            assert!(ws.secret(&ws.resolve(good)).is_none(), "{good}");
        }
    }
}
