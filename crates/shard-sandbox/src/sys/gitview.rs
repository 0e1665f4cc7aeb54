//! Git dirs by allow-list (docs/sandbox.md, "Git dirs"): each call sees every protected
//! git dir through an overlay of its own whose upper layer lives on a private tmpfs, with
//! `objects/`, `refs/` and `logs/` mounted through writable and a few trusted entries
//! mounted read-only on top. When the call has ended (every process of it is gone), the
//! allow-listed names are copied from the upper layer back into the real git dir;
//! everything else written there is dropped with the tmpfs.
//!
//! Everything here runs between `fork` and `exec` or in a call's init: system calls on
//! data prepared by the parent, fixed-size arrays, no allocation.
#![allow(unsafe_code)]

use std::ffi::{CStr, CString};

use libc::{c_int, c_long, c_uint};

use super::enter::{
    AT_RECURSIVE, Failure, OPEN_TREE_CLONE, Stage, errno, move_mount, set_read_only,
};

/// Files at a git dir's root that git rewrites in a commit, fetch, merge, stash or
/// rebase: the only root files written back.
pub const ROOT_FILES: &[&CStr] = &[
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
struct Open {
    /// The real git dir (`O_PATH`), opened before the view covered it.
    real: c_int,
    /// The view's upper layer (`O_PATH`); -1 when the view fell back to read-only.
    upper: c_int,
    /// The view itself (the overlay's mount); -1 as `upper`.
    merged: c_int,
}

const CLOSED: Open = Open {
    real: -1,
    upper: -1,
    merged: -1,
};

/// The views of one call, open until written back.
#[derive(Debug)]
pub struct OpenViews {
    n: usize,
    v: [Open; MAX_GIT_VIEWS],
}

impl OpenViews {
    /// No views.
    pub const fn none() -> OpenViews {
        OpenViews {
            n: 0,
            v: [CLOSED; MAX_GIT_VIEWS],
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
                libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            );
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
        let dir_flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
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

/// # Safety
/// Async-signal-safe; the descriptors are open directories.
unsafe fn overlay_mount(lower: c_int, upper: c_int, work: c_int) -> Option<c_int> {
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

/// Copies the allow-listed names of every view from its upper layer back into the real
/// git dir: changed files, removed files (whiteouts), and the state directories. Call
/// only once every process that could write the views is gone; closes the descriptors.
///
/// # Safety
/// Async-signal-safe.
pub unsafe fn write_back(views: &OpenViews) {
    // SAFETY: plain system calls on descriptors of `views` and stack buffers.
    unsafe {
        for o in &views.v[..views.n] {
            if o.real < 0 || o.upper < 0 || o.merged < 0 {
                continue;
            }
            for name in ROOT_FILES {
                sync_file(o.upper, o.real, name);
            }
            for dir in STATE_DIRS {
                sync_dir(o, dir);
            }
        }
        views.close();
    }
}

fn is_whiteout(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFCHR && st.st_rdev == 0
}

/// # Safety
/// Async-signal-safe; the descriptors are open directories.
unsafe fn sync_file(upper: c_int, real: c_int, name: &CStr) {
    // SAFETY: system calls on live buffers and open descriptors.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstatat(upper, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) < 0 {
            return;
        }
        if is_whiteout(&st) {
            libc::unlinkat(real, name.as_ptr(), 0);
        } else if st.st_mode & libc::S_IFMT == libc::S_IFREG {
            copy(upper, name, real);
        }
    }
}

/// Makes the real state directory `dir` what the view shows, one level deep.
///
/// # Safety
/// Async-signal-safe.
unsafe fn sync_dir(o: &Open, dir: &CStr) {
    // SAFETY: system calls on live buffers and open descriptors.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstatat(o.upper, dir.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) < 0 {
            // Untouched by the call.
            return;
        }
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        let shown = libc::openat(o.merged, dir.as_ptr(), flags);
        if shown < 0 {
            remove_flat(o.real, dir);
            return;
        }
        if libc::mkdirat(o.real, dir.as_ptr(), 0o777) < 0 && errno() != libc::EEXIST {
            libc::close(shown);
            return;
        }
        let real = libc::openat(o.real, dir.as_ptr(), flags);
        let upper = libc::openat(o.upper, dir.as_ptr(), flags);
        if real >= 0 && upper >= 0 {
            // What the call wrote lies in the upper layer.
            each_entry(upper, |name| {
                let mut st: libc::stat = std::mem::zeroed();
                if libc::fstatat(upper, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) == 0
                    && st.st_mode & libc::S_IFMT == libc::S_IFREG
                {
                    copy(upper, name, real);
                }
                false
            });
            // What the view no longer shows goes (a whiteout, or an opaque directory).
            each_entry(real, |name| {
                let mut st: libc::stat = std::mem::zeroed();
                if libc::fstatat(shown, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) < 0
                    && errno() == libc::ENOENT
                {
                    libc::unlinkat(real, name.as_ptr(), 0);
                }
                false
            });
        }
        for fd in [shown, real, upper] {
            if fd >= 0 {
                libc::close(fd);
            }
        }
    }
}

/// Removes the real directory `dir` and the files in it (a subdirectory keeps it).
///
/// # Safety
/// Async-signal-safe.
unsafe fn remove_flat(parent: c_int, dir: &CStr) {
    // SAFETY: system calls on live buffers and open descriptors.
    unsafe {
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        let fd = libc::openat(parent, dir.as_ptr(), flags);
        if fd < 0 {
            return;
        }
        // Entries are removed while the directory is read: read again until a pass
        // removes nothing.
        for _ in 0..64 {
            libc::lseek(fd, 0, libc::SEEK_SET);
            let mut removed = false;
            each_entry(fd, |name| {
                removed |= libc::unlinkat(fd, name.as_ptr(), 0) == 0;
                false
            });
            if !removed {
                break;
            }
        }
        libc::close(fd);
        libc::unlinkat(parent, dir.as_ptr(), libc::AT_REMOVEDIR);
    }
}

/// Calls `f` with each name in the directory `fd` but `.` and `..`, until it returns true.
///
/// # Safety
/// Async-signal-safe; `fd` is a directory opened for reading.
unsafe fn each_entry(fd: c_int, mut f: impl FnMut(&CStr) -> bool) {
    // u64 for the records' alignment.
    let mut buf = [0u64; 512];
    loop {
        // SAFETY: the kernel writes at most the buffer's length.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                fd,
                buf.as_mut_ptr(),
                std::mem::size_of_val(&buf),
            )
        };
        if n <= 0 {
            return;
        }
        // SAFETY: the first `n` bytes were written by the kernel.
        let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), n as usize) };
        let mut off = 0;
        // linux_dirent64: ino (8), off (8), reclen (2), type (1), name (NUL-terminated).
        while off + 19 < bytes.len() {
            let reclen = u16::from_ne_bytes([bytes[off + 16], bytes[off + 17]]) as usize;
            if reclen == 0 || off + reclen > bytes.len() {
                return;
            }
            if let Ok(name) = CStr::from_bytes_until_nul(&bytes[off + 19..off + reclen])
                && name != c"."
                && name != c".."
                && f(name)
            {
                return;
            }
            off += reclen;
        }
    }
}

/// Copies the regular file `name` from `from` into `to` the way git writes it: into
/// `name.lock` (created exclusively, so a lock held by a `git` outside is waited for
/// and then respected), then renamed into place, with the source's times.
///
/// # Safety
/// Async-signal-safe; the descriptors are open directories.
unsafe fn copy(from: c_int, name: &CStr, to: c_int) {
    let bytes = name.to_bytes();
    let mut lock = [0u8; 272];
    if bytes.len() + 6 > lock.len() {
        return;
    }
    lock[..bytes.len()].copy_from_slice(bytes);
    lock[bytes.len()..bytes.len() + 5].copy_from_slice(b".lock");
    // SAFETY: system calls on live buffers and open descriptors; `lock` is NUL-terminated.
    unsafe {
        let src = libc::openat(
            from,
            name.as_ptr(),
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        );
        if src < 0 {
            return;
        }
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(src, &mut st) < 0 || st.st_mode & libc::S_IFMT != libc::S_IFREG {
            libc::close(src);
            return;
        }
        let lock = lock.as_ptr().cast::<libc::c_char>();
        let mut dst = -1;
        // A `git` outside holds the lock: wait up to a second, as git waits for
        // `packed-refs`.
        for _ in 0..100 {
            dst = libc::openat(
                to,
                lock,
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                (st.st_mode & 0o666) as c_uint,
            );
            if dst >= 0 || errno() != libc::EEXIST {
                break;
            }
            let pause = libc::timespec {
                tv_sec: 0,
                tv_nsec: 10_000_000,
            };
            libc::nanosleep(&pause, std::ptr::null_mut());
        }
        if dst < 0 {
            libc::close(src);
            return;
        }
        let mut ok = true;
        loop {
            let n: c_long = libc::sendfile(dst, src, std::ptr::null_mut(), 1 << 30) as c_long;
            if n == 0 {
                break;
            }
            if n < 0 && errno() != libc::EINTR {
                ok = false;
                break;
            }
        }
        let times = [st.st_atim(), st.st_mtim()];
        libc::futimens(dst, times.as_ptr());
        ok &= libc::close(dst) == 0;
        libc::close(src);
        if !ok || libc::renameat(to, lock, to, name.as_ptr()) < 0 {
            libc::unlinkat(to, lock, 0);
        }
    }
}

trait StatTimes {
    fn st_atim(&self) -> libc::timespec;
    fn st_mtim(&self) -> libc::timespec;
}

impl StatTimes for libc::stat {
    fn st_atim(&self) -> libc::timespec {
        libc::timespec {
            tv_sec: self.st_atime,
            tv_nsec: self.st_atime_nsec,
        }
    }
    fn st_mtim(&self) -> libc::timespec {
        libc::timespec {
            tv_sec: self.st_mtime,
            tv_nsec: self.st_mtime_nsec,
        }
    }
}
