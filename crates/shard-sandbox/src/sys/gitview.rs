//! Git dirs by allow-list (docs/sandbox.md, "Git dirs"): each call sees every protected
//! git dir through an overlay of its own whose upper layer lives on a private tmpfs, with
//! `objects/`, `refs/` and `logs/` mounted through writable and a few trusted entries
//! mounted read-only on top. When the call has ended (every process of it is gone), the
//! allow-listed names are copied from the upper layer back into the real git dir;
//! everything else written there is dropped with the tmpfs (`super::writeback`).
//!
//! Everything here runs between `fork` and `exec` or in a call's init: system calls on
//! data prepared by the parent, fixed-size arrays, no allocation.
#![allow(unsafe_code)]

use std::ffi::{CStr, CString};

use libc::{c_int, c_uint};

use super::enter::{Failure, Stage, errno};
use super::mounts::{AT_RECURSIVE, OPEN_TREE_CLONE, move_mount, set_read_only};
use super::writeback::{FileId, file_id};

/// Files at a git dir's root that git rewrites in a commit, fetch, merge, stash or
/// rebase: the only root files written back.
pub const ROOT_FILES: [&CStr; 13] = [
    c"index",
    c"HEAD",
    c"ORIG_HEAD",
    c"FETCH_HEAD",
    c"MERGE_HEAD",
    c"MERGE_MSG",
    c"MERGE_MODE",
    c"AUTO_MERGE",
    c"CHERRY_PICK_HEAD",
    c"REVERT_HEAD",
    c"REBASE_HEAD",
    c"COMMIT_EDITMSG",
    c"packed-refs",
];

/// Directories at a git dir's root holding a rebase's, cherry-pick's or revert's state:
/// written back as a whole, one level deep, regular files only.
pub const STATE_DIRS: &[&CStr] = &[c"rebase-merge", c"rebase-apply", c"sequencer"];

/// Subdirectories of a git dir mounted through writable (when they exist).
pub const THROUGH: &[&str] = &["objects", "refs", "logs"];

/// Entries of a git dir mounted read-only over its view (when they exist), so that a
/// write to them fails at once instead of being dropped when the call ends.
pub const LOUD: &[&str] = &[
    "config",
    "config.worktree",
    "hooks",
    "info",
    "commondir",
    "gitdir",
    "locked",
];

/// The most git dirs one call shows through views; further ones stay inside the view of
/// the git dir holding them, where nothing is written back.
pub const MAX_GIT_VIEWS: usize = 8;

const MAX_BINDS: usize = 10;
const _: () = assert!(THROUGH.len() + LOUD.len() <= MAX_BINDS);

/// One git dir to show through a view, prepared in the parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitView {
    /// The git dir (canonical).
    pub dir: CString,
    /// Its subdirectories mounted through writable ([`THROUGH`]).
    pub through: Vec<CString>,
    /// Its entries mounted read-only on top ([`LOUD`]).
    pub read_only: Vec<CString>,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Open {
    /// The real git dir, opened before the view covered it.
    pub(super) real: c_int,
    /// The view's upper layer; -1 when the view fell back to read-only.
    pub(super) upper: c_int,
    /// The view itself (the overlay's mount); -1 as `upper`.
    pub(super) merged: c_int,
    /// The versions of the real [`ROOT_FILES`] when the call started.
    pub(super) before: [Option<FileId>; ROOT_FILES.len()],
}

const CLOSED: Open = Open {
    real: -1,
    upper: -1,
    merged: -1,
    before: [None; ROOT_FILES.len()],
};

/// The views of one call, open until written back.
#[derive(Debug)]
pub struct OpenViews {
    pub(super) n: usize,
    pub(super) v: [Open; MAX_GIT_VIEWS],
}

impl OpenViews {
    /// No views.
    pub const fn none() -> OpenViews {
        OpenViews {
            n: 0,
            v: [CLOSED; MAX_GIT_VIEWS],
        }
    }

    /// Notes the versions of the real root files as the call starts: what a `git`
    /// outside writes after this is not overwritten by the write-back.
    ///
    /// # Safety
    /// Async-signal-safe.
    pub unsafe fn remember(&mut self) {
        for o in &mut self.v[..self.n] {
            if o.real < 0 {
                continue;
            }
            for (name, before) in ROOT_FILES.iter().zip(o.before.iter_mut()) {
                // SAFETY: `o.real` is an open directory.
                *before = unsafe { file_id(o.real, name) };
            }
        }
    }

    /// Every descriptor held (for a process that closes all others).
    pub fn fds(&self) -> [c_int; 3 * MAX_GIT_VIEWS] {
        let mut out = [-1; 3 * MAX_GIT_VIEWS];
        for (i, o) in self.v[..self.n].iter().enumerate() {
            out[3 * i] = o.real;
            out[3 * i + 1] = o.upper;
            out[3 * i + 2] = o.merged;
        }
        out
    }

    /// Closes every descriptor (in processes that do not write back).
    ///
    /// # Safety
    /// Async-signal-safe; the descriptors are this value's.
    pub unsafe fn close(&self) {
        for fd in self.fds() {
            if fd >= 0 {
                // SAFETY: closing our own descriptor.
                unsafe { libc::close(fd) };
            }
        }
    }
}

fn fail(stage: Stage) -> Failure {
    Failure {
        stage,
        errno: errno(),
    }
}

/// Mounts the views of `views` (outer first) in the calling process's mount namespace.
/// A git dir whose overlay cannot be made is mounted read-only as a whole instead.
///
/// # Safety
/// Async-signal-safe; changes the calling process's mount namespace, which must be a
/// private one of the sandbox, with the capabilities to mount.
pub unsafe fn mount_views(views: &[GitView]) -> Result<OpenViews, Failure> {
    let mut out = OpenViews::none();
    let mut binds = [[-1 as c_int; MAX_BINDS]; MAX_GIT_VIEWS];
    let n = views.len().min(MAX_GIT_VIEWS);
    out.n = n;
    // SAFETY: plain system calls on live C strings, stack arrays and descriptors.
    unsafe {
        // Everything real is opened before the first view covers any of it.
        for (i, view) in views[..n].iter().enumerate() {
            out.v[i].real = libc::open(
                view.dir.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            );
            // Gone since the plan was made: nothing to protect. Present but not
            // openable: the call must not run with it unprotected.
            if out.v[i].real < 0 && errno() != libc::ENOENT {
                let f = fail(Stage::Reattach);
                close_binds(&binds);
                out.close();
                return Err(f);
            }
            let paths = view.through.iter().chain(view.read_only.iter());
            for (k, path) in paths.enumerate().take(MAX_BINDS) {
                let fd = libc::syscall(
                    libc::SYS_open_tree,
                    libc::AT_FDCWD,
                    path.as_ptr(),
                    OPEN_TREE_CLONE
                        | AT_RECURSIVE
                        | (libc::O_CLOEXEC | libc::AT_SYMLINK_NOFOLLOW) as c_uint,
                ) as c_int;
                binds[i][k] = fd;
                if fd >= 0 && k >= view.through.len() && set_read_only(fd) < 0 {
                    let f = fail(Stage::Reattach);
                    close_binds(&binds);
                    out.close();
                    return Err(f);
                }
            }
        }
        for (i, view) in views[..n].iter().enumerate() {
            let real = out.v[i].real;
            if real < 0 {
                continue;
            }
            match overlay(view, real) {
                Some((upper, merged)) => {
                    out.v[i].upper = upper;
                    out.v[i].merged = merged;
                }
                None => {
                    // Fail closed: the whole git dir read-only, commits fail with
                    // git's own error.
                    let clone = libc::syscall(
                        libc::SYS_open_tree,
                        real,
                        c"".as_ptr(),
                        OPEN_TREE_CLONE
                            | AT_RECURSIVE
                            | (libc::O_CLOEXEC | libc::AT_EMPTY_PATH) as c_uint,
                    ) as c_int;
                    let moved = clone >= 0
                        && set_read_only(clone) >= 0
                        && move_mount(clone, &view.dir) >= 0;
                    let f = fail(Stage::Reattach);
                    if clone >= 0 {
                        libc::close(clone);
                    }
                    if !moved {
                        close_binds(&binds);
                        out.close();
                        return Err(f);
                    }
                    continue;
                }
            }
            let paths = view.through.iter().chain(view.read_only.iter());
            for (k, path) in paths.enumerate().take(MAX_BINDS) {
                if binds[i][k] >= 0 && move_mount(binds[i][k], path) < 0 {
                    let f = fail(Stage::Reattach);
                    close_binds(&binds);
                    out.close();
                    return Err(f);
                }
            }
        }
        close_binds(&binds);
    }
    Ok(out)
}

/// # Safety
/// Async-signal-safe.
unsafe fn close_binds(binds: &[[c_int; MAX_BINDS]; MAX_GIT_VIEWS]) {
    for fd in binds.iter().flatten().filter(|fd| **fd >= 0) {
        // SAFETY: closing our own descriptor.
        unsafe { libc::close(*fd) };
    }
}

/// An overlay of `real` (lower) with a fresh upper layer on a private tmpfs, mounted at
/// `view.dir`: the upper layer's and the view's descriptors, or None when the kernel
/// refuses a step (nothing is mounted then).
///
/// # Safety
/// Async-signal-safe; as [`mount_views`].
unsafe fn overlay(view: &GitView, real: c_int) -> Option<(c_int, c_int)> {
    // SAFETY: plain system calls on live C strings, stack variables and descriptors.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(real, &mut st) < 0 {
            return None;
        }
        let tmpfs = fs_open(c"tmpfs")?;
        let tm = config(
            tmpfs,
            FSCONFIG_SET_STRING,
            c"mode",
            c"0700".as_ptr().cast(),
            0,
        )
        .and_then(|()| create_and_mount(tmpfs));
        libc::close(tmpfs);
        let tm = tm?;
        let made = libc::mkdirat(tm, c"u".as_ptr(), st.st_mode & 0o7777) == 0
            && libc::mkdirat(tm, c"w".as_ptr(), 0o700) == 0;
        // Not `O_PATH`: `fsconfig` takes those only since Linux 6.15.
        let dir_flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
        let upper = libc::openat(tm, c"u".as_ptr(), dir_flags);
        let work = libc::openat(tm, c"w".as_ptr(), dir_flags);
        let merged = if made && upper >= 0 && work >= 0 {
            overlay_mount(real, upper, work)
        } else {
            None
        };
        // Only now: the overlay must clone its upper layer from a live detached mount
        // (its own clone keeps the tmpfs afterwards).
        libc::close(tm);
        if work >= 0 {
            libc::close(work);
        }
        let merged = merged.filter(|&om| {
            let moved = move_mount(om, &view.dir) >= 0;
            if !moved {
                libc::close(om);
            }
            moved
        });
        match merged {
            Some(om) => Some((upper, om)),
            None => {
                if upper >= 0 {
                    libc::close(upper);
                }
                None
            }
        }
    }
}

/// An overlay of the three directories, by descriptor (Linux 6.13+), else by their
/// `/proc/self/fd` paths (any kernel with the new mount API and `userxattr`).
///
/// # Safety
/// Async-signal-safe; the descriptors are open directories.
pub(super) unsafe fn overlay_mount(lower: c_int, upper: c_int, work: c_int) -> Option<c_int> {
    // SAFETY: see the function contract.
    unsafe { overlay_by_fds(lower, upper, work).or_else(|| overlay_by_paths(lower, upper, work)) }
}

/// # Safety
/// Async-signal-safe; the descriptors are open directories.
unsafe fn overlay_by_fds(lower: c_int, upper: c_int, work: c_int) -> Option<c_int> {
    // SAFETY: plain system calls on static C strings and open descriptors.
    unsafe {
        let of = fs_open(c"overlay")?;
        let null = std::ptr::null();
        let om = config(of, FSCONFIG_SET_FD, c"lowerdir+", null, lower)
            .and_then(|()| config(of, FSCONFIG_SET_FD, c"upperdir", null, upper))
            .and_then(|()| config(of, FSCONFIG_SET_FD, c"workdir", null, work))
            .and_then(|()| config(of, FSCONFIG_SET_FLAG, c"userxattr", null, 0))
            .and_then(|()| create_and_mount(of));
        libc::close(of);
        om
    }
}

/// # Safety
/// Async-signal-safe; the descriptors are open directories and `/proc` is mounted.
pub(super) unsafe fn overlay_by_paths(lower: c_int, upper: c_int, work: c_int) -> Option<c_int> {
    let (lower, upper, work) = (fd_path(lower)?, fd_path(upper)?, fd_path(work)?);
    let s = |p: &[u8; 32]| p.as_ptr().cast::<libc::c_char>();
    // SAFETY: plain system calls on NUL-terminated stack buffers and static C strings.
    unsafe {
        let of = fs_open(c"overlay")?;
        let null = std::ptr::null();
        let om = config(of, FSCONFIG_SET_STRING, c"lowerdir", s(&lower), 0)
            .and_then(|()| config(of, FSCONFIG_SET_STRING, c"upperdir", s(&upper), 0))
            .and_then(|()| config(of, FSCONFIG_SET_STRING, c"workdir", s(&work), 0))
            .and_then(|()| config(of, FSCONFIG_SET_FLAG, c"userxattr", null, 0))
            .and_then(|()| create_and_mount(of));
        libc::close(of);
        om
    }
}

/// `/proc/self/fd/<fd>`, NUL-terminated, without allocating.
fn fd_path(fd: c_int) -> Option<[u8; 32]> {
    let prefix = b"/proc/self/fd/";
    let mut out = [0u8; 32];
    out[..prefix.len()].copy_from_slice(prefix);
    let mut digits = [0u8; 10];
    let mut n = u32::try_from(fd).ok()?;
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for (i, d) in digits[..len].iter().rev().enumerate() {
        out[prefix.len() + i] = *d;
    }
    Some(out)
}

const FSOPEN_CLOEXEC: c_uint = 1;
const FSMOUNT_CLOEXEC: c_uint = 1;
const FSCONFIG_SET_FLAG: c_uint = 0;
const FSCONFIG_SET_STRING: c_uint = 1;
const FSCONFIG_SET_FD: c_uint = 5;
const FSCONFIG_CMD_CREATE: c_uint = 6;
const MOUNT_ATTR_NOSUID: c_uint = 0x2;
const MOUNT_ATTR_NODEV: c_uint = 0x4;

/// # Safety
/// Async-signal-safe.
unsafe fn fs_open(fs: &CStr) -> Option<c_int> {
    // SAFETY: a system call on a static C string.
    let fd = unsafe { libc::syscall(libc::SYS_fsopen, fs.as_ptr(), FSOPEN_CLOEXEC) };
    (fd >= 0).then_some(fd as c_int)
}

/// # Safety
/// Async-signal-safe; `value` is null or a live C string as `cmd` needs.
unsafe fn config(
    fs: c_int,
    cmd: c_uint,
    key: &CStr,
    value: *const libc::c_char,
    aux: c_int,
) -> Option<()> {
    // SAFETY: see the function contract.
    let r = unsafe { libc::syscall(libc::SYS_fsconfig, fs, cmd, key.as_ptr(), value, aux) };
    (r >= 0).then_some(())
}

/// # Safety
/// Async-signal-safe; `fs` is a configured file system context.
unsafe fn create_and_mount(fs: c_int) -> Option<c_int> {
    // SAFETY: system calls on an open descriptor.
    unsafe {
        let null = std::ptr::null::<libc::c_char>();
        if libc::syscall(libc::SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, null, null, 0) < 0 {
            return None;
        }
        let attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
        let m = libc::syscall(libc::SYS_fsmount, fs, FSMOUNT_CLOEXEC, attrs);
        (m >= 0).then_some(m as c_int)
    }
}

#[cfg(test)]
#[path = "gitview_tests.rs"]
mod tests;
