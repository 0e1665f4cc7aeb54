//! Writing a call's git views back (docs/sandbox.md, "Git dirs: read-only by
//! allow-list"): once every process of the call is gone, the allow-listed names are
//! copied from each view's upper layer into the real git dir, and nothing else.
//! Allocation-free system calls: on the per-call path this runs in a fork of a threaded
//! process.
#![allow(unsafe_code)]

use std::ffi::CStr;

use libc::{c_int, c_long, c_uint};

use super::enter::errno;
use super::gitview::{Open, OpenViews, ROOT_FILES, STATE_DIRS};

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
            for (name, before) in ROOT_FILES.iter().zip(o.before.iter()) {
                sync_file(o.upper, o.real, name, before);
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

/// What identifies one version of a file: git replaces a file by renaming a new one over
/// it, so any write changes the inode, and one in place changes the times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileId {
    dev: u64,
    ino: u64,
    size: i64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

/// The version of `name` in `dir`, or None when there is none (or it cannot be read).
///
/// # Safety
/// Async-signal-safe; `dir` is an open directory.
pub(super) unsafe fn file_id(dir: c_int, name: &CStr) -> Option<FileId> {
    // SAFETY: a system call on a live buffer and an open descriptor.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) < 0 {
            return None;
        }
        Some(FileId {
            dev: st.st_dev,
            ino: st.st_ino,
            size: st.st_size,
            mtime: (st.st_mtime, st.st_mtime_nsec),
            ctime: (st.st_ctime, st.st_ctime_nsec),
        })
    }
}

/// Writes back the root file `name` when the call changed or removed it, and only while
/// the real one is still the version the call started from (`before`): what a `git`
/// outside wrote during the call is never overwritten.
///
/// # Safety
/// Async-signal-safe; the descriptors are open directories.
unsafe fn sync_file(upper: c_int, real: c_int, name: &CStr, before: &Option<FileId>) {
    // SAFETY: system calls on live buffers and open descriptors.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstatat(upper, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) < 0 {
            return;
        }
        if is_whiteout(&st) {
            let Some((lock, _)) = lock_name(name) else {
                return;
            };
            let lock = lock.as_ptr().cast::<libc::c_char>();
            let fd = take_lock(real, lock, 0o600);
            if fd < 0 {
                return;
            }
            libc::close(fd);
            if file_id(real, name) == *before {
                libc::unlinkat(real, name.as_ptr(), 0);
            }
            libc::unlinkat(real, lock, 0);
        } else if st.st_mode & libc::S_IFMT == libc::S_IFREG {
            copy(upper, name, real, Some(before));
        }
    }
}

/// `name.lock`, NUL-terminated, and its length; None for a name too long.
fn lock_name(name: &CStr) -> Option<([u8; 272], usize)> {
    let bytes = name.to_bytes();
    let mut lock = [0u8; 272];
    if bytes.len() + 6 > lock.len() {
        return None;
    }
    lock[..bytes.len()].copy_from_slice(bytes);
    lock[bytes.len()..bytes.len() + 5].copy_from_slice(b".lock");
    Some((lock, bytes.len() + 5))
}

/// Creates the lock file `lock` in `dir` exclusively, as git does; a lock a `git` outside
/// holds is waited for up to a second (as git waits for `packed-refs`). -1 when not taken.
///
/// # Safety
/// Async-signal-safe; `lock` is a NUL-terminated name.
unsafe fn take_lock(dir: c_int, lock: *const libc::c_char, mode: c_uint) -> c_int {
    // SAFETY: system calls on live buffers and an open descriptor.
    unsafe {
        for _ in 0..100 {
            let fd = libc::openat(
                dir,
                lock,
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                mode,
            );
            if fd >= 0 || errno() != libc::EEXIST {
                return fd;
            }
            let pause = libc::timespec {
                tv_sec: 0,
                tv_nsec: 10_000_000,
            };
            libc::nanosleep(&pause, std::ptr::null_mut());
        }
        -1
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
                    copy(upper, name, real, None);
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
/// `name.lock` (see [`take_lock`]), then renamed into place, with the source's times.
/// With `expect`, only while the real file is still that version (checked under the lock).
///
/// # Safety
/// Async-signal-safe; the descriptors are open directories.
unsafe fn copy(from: c_int, name: &CStr, to: c_int, expect: Option<&Option<FileId>>) {
    let Some((lock, _)) = lock_name(name) else {
        return;
    };
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
        let dst = take_lock(to, lock, (st.st_mode & 0o666) as c_uint);
        if dst < 0 {
            libc::close(src);
            return;
        }
        let mut ok = expect.is_none_or(|before| file_id(to, name) == *before);
        while ok {
            let n: c_long = libc::sendfile(dst, src, std::ptr::null_mut(), 1 << 30) as c_long;
            if n == 0 {
                break;
            }
            if n < 0 && errno() != libc::EINTR {
                ok = false;
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
