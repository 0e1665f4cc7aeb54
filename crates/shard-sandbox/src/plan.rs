//! Turns a [`SandboxSpec`] into a [`sys::Plan`]: paths, maps, the Landlock ruleset, all
//! prepared once, then probed and narrowed to what the kernel allows.

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::sys::{self, Cover, Plan, Reattach, Stage, ll};
use crate::{Applied, Feature, SandboxConfig, SandboxError, SandboxSpec};

/// Device files a command may write to (never block devices).
const WRITABLE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/random",
    "/dev/urandom",
    "/dev/ptmx",
    "/dev/pts",
];

/// The prepared sandbox of a Runtime.
#[derive(Debug)]
pub(crate) struct Prepared {
    plan: Arc<Plan>,
    /// Value of `TMPDIR` inside the sandbox.
    tmpdir: PathBuf,
    /// The zygote, when the plan has every namespace and a program can serve as one.
    zygote: Arc<crate::zygote::client::Slot>,
}

impl Prepared {
    /// The zygote's program, when the zygote can do this plan's work.
    fn zygote_program(&self) -> Option<&'static PathBuf> {
        let all = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID;
        if self.plan.ns_flags & all != all {
            return None;
        }
        crate::zygote::program()
    }

    pub(crate) fn prewarm(&self) {
        if let Some(program) = self.zygote_program() {
            self.zygote.prewarm(program, &self.plan, &self.tmpdir);
        }
    }

    pub(crate) fn zygote(&self, wait: std::time::Duration) -> Option<crate::zygote::Zygote> {
        let program = self.zygote_program()?;
        let client = self.zygote.get(program, &self.plan, &self.tmpdir, wait)?;
        Some(crate::zygote::Zygote::new(client, self.zygote.clone()))
    }

    pub(crate) fn does_anything(&self) -> bool {
        self.plan.ns_flags != 0 || self.plan.landlock.is_some()
    }

    pub(crate) fn apply(
        &self,
        cmd: &mut std::process::Command,
        cwd: &Path,
    ) -> Result<Option<Applied>, SandboxError> {
        if !self.does_anything() {
            return Ok(None);
        }
        let cwd = cstring(cwd)?;
        cmd.env("TMPDIR", &self.tmpdir);
        sys::install(cmd, Some((self.plan.clone(), cwd)));
        Ok(Some(Applied {
            contained: self.plan.ns_flags & libc::CLONE_NEWPID != 0,
        }))
    }
}

fn cstring(p: &Path) -> Result<CString, SandboxError> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| SandboxError::Config(format!("{} contains a NUL byte", p.display())))
}

fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> SandboxError {
    let what = what.into();
    move |source| SandboxError::Io { what, source }
}

fn open_path(p: &Path) -> std::io::Result<OwnedFd> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_CLOEXEC)
        .open(p)?;
    Ok(OwnedFd::from(f))
}

/// Is `inner` equal to or beneath `outer` (both absolute and normalised)?
fn within(inner: &Path, outer: &Path) -> bool {
    inner.starts_with(outer)
}

/// Builds the plan, probes it and drops what the kernel refuses.
pub(crate) fn prepare(
    config: &SandboxConfig,
    spec: &SandboxSpec,
) -> Result<(Prepared, Vec<(Feature, String)>), SandboxError> {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let roots: Vec<PathBuf> = spec.workspace_roots.iter().map(|p| canon(p)).collect();
    let hidden: Vec<PathBuf> = spec
        .hidden
        .iter()
        .filter(|p| p.exists())
        .map(|p| canon(p))
        .filter(|h| !roots.contains(h))
        .collect();
    let temp_parent = spec.temp_parent.clone().unwrap_or_else(std::env::temp_dir);
    let temp = tempfile::Builder::new()
        .prefix(&format!("{TEMP_PREFIX}{}-", std::process::id()))
        .tempdir_in(&temp_parent)
        .map_err(io_err(format!(
            "creating a private temp dir in {}",
            temp_parent.display()
        )))?;
    // Not removed on exit: unlinking on a `discard` file system can take tens of ms, paid
    // by every Runtime's exit. The next Runtime sweeps it (and those of killed Runtimes).
    let temp_path = canon(&temp.keep());
    sweep_in_background(temp_parent.clone());
    let mut missing = Vec::new();

    // Covers: hidden paths first, then /tmp replaced by the private dir — unless a
    // workspace root is /tmp itself or holds it.
    let slash_tmp = canon(Path::new("/tmp"));
    let mut cover_targets: Vec<PathBuf> = hidden.clone();
    let mut covers: Vec<Cover> = hidden
        .iter()
        .map(|h| cstring(h).map(|target| Cover::Tmpfs { target }))
        .collect::<Result<_, _>>()?;
    if let Some(runtime_dir) = user_runtime_dir()
        && !roots.iter().any(|r| within(&runtime_dir, r))
    {
        covers.push(Cover::Tmpfs {
            target: cstring(&runtime_dir)?,
        });
        cover_targets.push(runtime_dir);
    }
    let cover_tmp = within(&temp_path, &slash_tmp) && !roots.iter().any(|r| within(&slash_tmp, r));
    let tmpdir = if cover_tmp {
        covers.push(Cover::Bind {
            source: cstring(&temp_path)?,
            target: cstring(&slash_tmp)?,
        });
        cover_targets.push(slash_tmp.clone());
        PathBuf::from("/tmp")
    } else {
        temp_path.clone()
    };
    let mut writable: Vec<PathBuf> = roots.clone();
    writable.extend(config.allow_write.iter().map(|p| canon(p)));
    let (commons, protected, git_dirs) = git_protection(&writable);
    writable.extend(commons);
    let mut reattach = Vec::new();
    let visible: Vec<PathBuf> = spec.visible.iter().map(|p| canon(p)).collect();
    let entries = writable
        .iter()
        .map(|p| (p, false))
        .chain(visible.iter().map(|p| (p, true)));
    for (root, optional) in entries {
        let Some(outer) = cover_targets
            .iter()
            .filter(|c| within(root, c))
            .min_by_key(|c| c.components().count())
        else {
            continue;
        };
        let mut mkdirs = Vec::new();
        let mut p = outer.clone();
        for comp in root
            .strip_prefix(outer)
            .unwrap_or(Path::new(""))
            .components()
        {
            p.push(comp);
            mkdirs.push(cstring(&p)?);
        }
        reattach.push(Reattach {
            path: cstring(root)?,
            optional,
            read_only: optional,
            mkdirs,
        });
    }
    // After the roots they lie in (every clone is taken before the first mount, so a
    // later move would hide an earlier one beneath it).
    for path in &protected {
        reattach.push(Reattach {
            path: cstring(path)?,
            optional: true,
            read_only: true,
            mkdirs: Vec::new(),
        });
    }
    let git = git_dirs
        .iter()
        .take(sys::MAX_GIT_VIEWS)
        .map(|dir| {
            let (through, read_only) = crate::gitdirs::view_parts(dir);
            let cstrings = |v: Vec<PathBuf>| -> Result<Vec<CString>, SandboxError> {
                v.iter().map(|p| cstring(p)).collect()
            };
            Ok(sys::GitView {
                dir: cstring(dir)?,
                through: cstrings(through)?,
                read_only: cstrings(read_only)?,
            })
        })
        .collect::<Result<Vec<_>, SandboxError>>()?;
    if git_dirs.len() > sys::MAX_GIT_VIEWS {
        tracing::warn!(
            count = git_dirs.len(),
            "more git dirs than views; the innermost stay read-only"
        );
    }
    let clones = covers
        .iter()
        .filter(|c| matches!(c, Cover::Bind { .. }))
        .count()
        + reattach.len();
    if clones > sys::MAX_CLONES {
        return Err(SandboxError::Config(format!(
            "too many writable roots under hidden paths ({clones}, at most {})",
            sys::MAX_CLONES
        )));
    }

    let mut ns_flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID;
    if !config.network {
        ns_flags |= libc::CLONE_NEWNET;
    }
    let uid = nix::unistd::getuid().as_raw();
    let gid = nix::unistd::getgid().as_raw();

    let abi = sys::landlock_abi();
    let landlock = if abi == 0 {
        missing.push((
            Feature::Landlock,
            "the kernel offers no Landlock; writes are not confined".to_string(),
        ));
        None
    } else {
        if abi < 6 {
            missing.push((Feature::Scopes, format!("Landlock ABI {abi} < 6")));
        }
        let mut wall: Vec<PathBuf> = writable.clone();
        wall.push(temp_path.clone());
        Some(ruleset(abi, config.network, &wall).map_err(io_err("building the Landlock ruleset"))?)
    };

    let last_cap = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(40);
    let mut plan = Plan {
        ns_flags,
        uid_map: format!("{uid} {uid} 1\n").into_bytes(),
        gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        covers,
        reattach,
        git,
        proc_mount: true,
        landlock,
        last_cap,
    };

    let probe_cwd = cstring(
        roots
            .first()
            .map(PathBuf::as_path)
            .unwrap_or(Path::new("/")),
    )?;
    let cache = spec.probe_cache.as_ref().map(|dir| {
        (
            dir.join(PROBE_CACHE),
            probe_key(config, &writable, &protected, &git_dirs),
        )
    });
    let cached = cache.as_ref().is_some_and(|(file, key)| {
        missing.is_empty() && std::fs::read_to_string(file).is_ok_and(|k| k == *key)
    });
    for _ in 0..if cached { 0 } else { 6 } {
        let failure = sys::probe(&plan, &probe_cwd).map_err(io_err("probing the sandbox"))?;
        let Some(f) = failure else { break };
        let why = format!(
            "{:?} failed: {}",
            f.stage,
            std::io::Error::from_raw_os_error(f.errno)
        );
        tracing::debug!(?f, "sandbox probe failed");
        match f.stage {
            Stage::Namespaces if plan.ns_flags & libc::CLONE_NEWNET != 0 => {
                plan.ns_flags &= !libc::CLONE_NEWNET;
                missing.push((Feature::Network, why));
            }
            Stage::Proc => {
                plan.proc_mount = false;
                missing.push((Feature::Proc, why));
            }
            Stage::Landlock => {
                plan.landlock = None;
                missing.push((Feature::Landlock, why));
            }
            _ => {
                plan.ns_flags = 0;
                plan.covers.clear();
                plan.reattach.clear();
                plan.proc_mount = false;
                missing.push((Feature::Namespaces, why));
            }
        }
    }
    if !cached
        && missing.is_empty()
        && let Some((file, key)) = &cache
    {
        remember_probe(file, key);
    }
    Ok((
        Prepared {
            plan: Arc::new(plan),
            zygote: crate::zygote::client::Slot::new(),
            tmpdir: if missing.iter().any(|(f, _)| *f == Feature::Namespaces) {
                temp_path
            } else {
                tmpdir
            },
        },
        missing,
    ))
}

/// File under the probe cache dir remembering a complete sandbox.
const PROBE_CACHE: &str = "sandbox-probe";

/// What a remembered probe is valid for: this boot, user, network setting, build and
/// workspace roots.
fn probe_key(
    config: &SandboxConfig,
    roots: &[PathBuf],
    protected: &[PathBuf],
    git_dirs: &[PathBuf],
) -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let show =
        |v: &[PathBuf]| -> Vec<String> { v.iter().map(|p| p.display().to_string()).collect() };
    format!(
        "complete boot={} uid={} network={} version={} roots={:?} protected={:?} git={:?}\n",
        boot.trim(),
        nix::unistd::getuid().as_raw(),
        config.network,
        env!("CARGO_PKG_VERSION"),
        show(roots),
        show(protected),
        show(git_dirs)
    )
}

/// The verified common git dirs of the writable roots that are linked worktrees (to be
/// made writable), the files to mount read-only (outer first) and the git dirs to show
/// through views (outer first; `gitdirs` says why).
fn git_protection(writable: &[PathBuf]) -> (Vec<PathBuf>, Vec<PathBuf>, Vec<PathBuf>) {
    let mut commons = Vec::new();
    let mut read_only = Vec::new();
    let mut views = Vec::new();
    for root in writable {
        let common = crate::gitdirs::writable_common_dir(root);
        let p = crate::gitdirs::protection(root, common.as_deref());
        read_only.extend(p.read_only);
        views.extend(p.views);
        if let Some(c) = common
            && !writable.iter().any(|w| within(&c, w))
            && !commons.contains(&c)
        {
            commons.push(c);
        }
    }
    let mut all_writable = writable.to_vec();
    all_writable.extend(commons.iter().cloned());
    let inside = |p: &PathBuf| all_writable.iter().any(|w| within(p, w));
    read_only.retain(|p| inside(p));
    views.retain(|p| inside(p));
    read_only.sort_by_key(|p| p.components().count());
    read_only.dedup();
    views.sort_by_key(|p| p.components().count());
    views.dedup();
    (commons, read_only, views)
}

/// Writes the probe cache (0600, atomically); failures only cost a probe next time.
fn remember_probe(file: &Path, key: &str) {
    use std::io::Write;
    let Some(dir) = file.parent() else { return };
    let write = || -> std::io::Result<()> {
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(key.as_bytes())?;
        tmp.persist(file).map_err(|e| e.error)?;
        Ok(())
    };
    if let Err(err) = write() {
        tracing::debug!(%err, "cannot remember the sandbox probe");
    }
}

/// Private temp dirs are named `shard-tmp-<pid of the Runtime>-<random>`.
const TEMP_PREFIX: &str = "shard-tmp-";

/// Removes, on a detached thread, the private temp dirs of Runtimes that are gone (ended or
/// killed), among those this user owns in `parent`.
fn sweep_in_background(parent: PathBuf) {
    let spawned = std::thread::Builder::new()
        .name("shard-tmp-sweep".into())
        .spawn(move || sweep_stale(&parent));
    if let Err(err) = spawned {
        tracing::debug!(%err, "cannot start the temp dir sweep");
    }
}

/// See [`sweep_in_background`].
pub(crate) fn sweep_stale(parent: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let uid = nix::unistd::getuid().as_raw();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(TEMP_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        // EPERM: the process exists (another user's).
        let alive = !matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
            Err(nix::errno::Errno::ESRCH)
        );
        let ours = entry.metadata().is_ok_and(|m| m.is_dir() && m.uid() == uid);
        if !alive && ours {
            let path = entry.path();
            if let Err(err) = std::fs::remove_dir_all(&path) {
                tracing::debug!(path = %path.display(), %err, "cannot remove a stale temp dir");
            }
        }
    }
}

/// `XDG_RUNTIME_DIR` (or `/run/user/UID`): the session bus and user services live there,
/// and talking to them (e.g. `systemd-run --user`) would run code outside the sandbox.
fn user_runtime_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(format!("/run/user/{}", nix::unistd::getuid().as_raw())));
    (dir.is_absolute() && dir.is_dir()).then(|| std::fs::canonicalize(&dir).unwrap_or(dir))
}

fn ruleset(abi: u32, network: bool, writable: &[PathBuf]) -> std::io::Result<OwnedFd> {
    let mut fs = ll::WRITE_FILE
        | ll::REMOVE_DIR
        | ll::REMOVE_FILE
        | ll::MAKE_CHAR
        | ll::MAKE_DIR
        | ll::MAKE_REG
        | ll::MAKE_SOCK
        | ll::MAKE_FIFO
        | ll::MAKE_BLOCK
        | ll::MAKE_SYM;
    if abi >= 2 {
        fs |= ll::REFER;
    }
    if abi >= 3 {
        fs |= ll::TRUNCATE;
    }
    let net = if !network && abi >= 4 {
        ll::NET_BIND_TCP | ll::NET_CONNECT_TCP
    } else {
        0
    };
    let scoped = if abi >= 6 {
        ll::SCOPE_ABSTRACT_UNIX_SOCKET | ll::SCOPE_SIGNAL
    } else {
        0
    };
    let rs = sys::landlock_ruleset(fs, net, scoped, abi)?;
    for dir in writable {
        match open_path(dir) {
            Ok(fd) => {
                let rights = if dir.is_dir() {
                    fs
                } else {
                    fs & ll::FILE_RIGHTS
                };
                sys::landlock_allow(&rs, &fd, rights)?;
            }
            Err(err) => tracing::debug!(path = %dir.display(), %err, "writable root not found"),
        }
    }
    for dev in WRITABLE_DEVICES {
        let path = Path::new(dev);
        if let Ok(fd) = open_path(path) {
            let rights = (ll::WRITE_FILE | ll::TRUNCATE) & fs;
            sys::landlock_allow(&rs, &fd, rights)?;
        }
    }
    Ok(rs)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn stale_temp_dirs_of_gone_runtimes_are_swept() {
        let parent = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let gone = parent.path().join(format!("{TEMP_PREFIX}{dead}-abc"));
        let live = parent
            .path()
            .join(format!("{TEMP_PREFIX}{}-def", std::process::id()));
        let other = parent.path().join("unrelated");
        for d in [&gone, &live, &other] {
            std::fs::create_dir_all(d.join("sub")).unwrap();
        }
        sweep_stale(parent.path());
        assert!(!gone.exists());
        assert!(live.exists());
        assert!(other.exists());
    }
}
