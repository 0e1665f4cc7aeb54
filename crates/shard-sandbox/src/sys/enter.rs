//! Entering the sandbox between `fork` and `exec` (the per-call path), and the steps of
//! it that the zygote (`super::zygote`) runs once per Runtime or once per call.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use libc::{c_int, c_long, c_uint, c_void};

use super::gitview::{GitView, OpenViews, mount_views};
use super::mounts::{mount_proc, set_up_mounts};
use super::writeback::write_back;

/// The most workspace roots and cover bind sources one plan may clone (a fixed array in
/// the child, which must not allocate).
pub const MAX_CLONES: usize = 32;

/// A mount that hides a path in the sandbox's mount namespace.
#[derive(Debug)]
pub enum Cover {
    /// An empty tmpfs over `target`.
    Tmpfs {
        /// The hidden path.
        target: CString,
    },
    /// `source` (cloned before any cover) bind-mounted over `target`.
    Bind {
        /// What is shown instead.
        source: CString,
        /// The hidden path.
        target: CString,
    },
}

/// A workspace root (or a folder meant to stay visible) that lies under a cover, mounted
/// back at its own path.
#[derive(Debug)]
pub struct Reattach {
    /// The root.
    pub path: CString,
    /// Skipped, not fatal, while it does not exist (a folder meant to stay visible, a
    /// file git trusts).
    pub optional: bool,
    /// Mounted read-only: a folder meant to stay visible (a mount beneath a writable
    /// folder would otherwise be writable to Landlock), a file git trusts inside a root.
    pub read_only: bool,
    /// Directories to create under the cover, outermost first, so `path` exists.
    pub mkdirs: Vec<CString>,
}

/// Everything the child needs, prepared in the parent.
#[derive(Debug)]
pub struct Plan {
    /// `unshare` flags; 0 runs without namespaces.
    pub ns_flags: c_int,
    /// `/proc/self/uid_map` content.
    pub uid_map: Vec<u8>,
    /// `/proc/self/gid_map` content.
    pub gid_map: Vec<u8>,
    /// Make the mounts private and apply covers (needs a mount namespace).
    pub covers: Vec<Cover>,
    /// Roots put back after the covers.
    pub reattach: Vec<Reattach>,
    /// Git dirs shown through a view of each call's own, outer first
    /// (`super::gitview`).
    pub git: Vec<GitView>,
    /// Mount a fresh `/proc` for the new PID namespace.
    pub proc_mount: bool,
    /// Landlock ruleset to enforce.
    pub landlock: Option<OwnedFd>,
    /// Highest capability number (`/proc/sys/kernel/cap_last_cap`).
    pub last_cap: c_int,
}

/// Where the setup stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Stage {
    /// `unshare` of the namespaces.
    Namespaces = 1,
    /// Writing the user namespace maps.
    IdMaps = 2,
    /// Forking the namespace's first process.
    Fork = 3,
    /// Making the mounts private.
    MountPrivate = 4,
    /// Hiding paths.
    Covers = 5,
    /// Mounting workspace roots back.
    Reattach = 6,
    /// Mounting `/proc`.
    Proc = 7,
    /// Entering the working directory.
    Chdir = 8,
    /// Enforcing Landlock.
    Landlock = 9,
    /// Dropping capabilities.
    Capabilities = 10,
    /// Starting the command (`exec`, or the zygote's fork of the call).
    Exec = 11,
}

impl Stage {
    /// The stage a byte names (as sent through a pipe or socket).
    pub fn from_u8(b: u8) -> Option<Stage> {
        use Stage::*;
        [
            Namespaces,
            IdMaps,
            Fork,
            MountPrivate,
            Covers,
            Reattach,
            Proc,
            Chdir,
            Landlock,
            Capabilities,
            Exec,
        ]
        .into_iter()
        .find(|s| *s as u8 == b)
    }
}

/// A failed setup step and its errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// The step.
    pub stage: Stage,
    /// The errno.
    pub errno: i32,
}

/// The calling thread's errno.
pub fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// `Err` with the stage and errno when a system call returned a negative value.
pub fn check(r: c_long, stage: Stage) -> Result<(), Failure> {
    if r < 0 {
        Err(Failure {
            stage,
            errno: errno(),
        })
    } else {
        Ok(())
    }
}

/// Writes `data` to `path`. Child-safe: open/write/close only.
///
/// # Safety
/// Async-signal-safe; `path` is a valid C string.
unsafe fn write_file(path: &std::ffi::CStr, data: &[u8]) -> c_long {
    // SAFETY: see the function contract; the buffer is live for the call.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return -1;
        }
        let n = libc::write(fd, data.as_ptr() as *const c_void, data.len());
        let saved = errno();
        libc::close(fd);
        if n < 0 || n as usize != data.len() {
            *libc::__errno_location() = saved;
            return -1;
        }
        0
    }
}

/// The intermediate process: it stays outside the PID namespace, holds the lifeline, waits
/// for the namespace's first process, writes the git views back (every process of the
/// call is gone by then) and exits with the first process's status. Killing it (the
/// Runtime's `killpg`, or its own parent-death signal) kills that process through its
/// parent-death signal, and with it the whole PID namespace.
///
/// # Safety
/// Runs in a forked child; async-signal-safe calls only.
unsafe fn intermediate(child: libc::pid_t, keep: RawFd, views: &OpenViews) -> ! {
    // SAFETY: plain system calls on integers and stack variables.
    unsafe {
        // Close everything else (the output pipe, std's exec-status pipe) so that readers
        // see EOF as soon as the sandboxed process tree is gone.
        let mut kept = [-1; 1 + 3 * super::gitview::MAX_GIT_VIEWS];
        kept[0] = keep;
        kept[1..].copy_from_slice(&views.fds());
        close_all_but(&kept);
        let status = wait_status_of(child, child);
        write_back(views);
        exit_with(status)
    }
}

/// Closes every descriptor but those in `keep` (-1 entries are ignored).
///
/// # Safety
/// Async-signal-safe; any other descriptor of the process is gone afterwards.
unsafe fn close_all_but(keep: &[RawFd]) {
    let mut next: c_uint = 0;
    loop {
        let low = keep
            .iter()
            .filter_map(|&fd| c_uint::try_from(fd).ok())
            .filter(|&fd| fd >= next)
            .min();
        let Some(low) = low else {
            // SAFETY: a plain system call on integers.
            unsafe { libc::syscall(libc::SYS_close_range, next, c_uint::MAX, 0u32) };
            return;
        };
        if low > next {
            // SAFETY: as above.
            unsafe { libc::syscall(libc::SYS_close_range, next, low - 1, 0u32) };
        }
        next = low + 1;
    }
}

/// Enters the sandbox. Returns in the process that goes on to `exec`; the intermediate
/// process never returns.
///
/// # Safety
/// Must run in a freshly forked child, before `exec`: it forks, changes namespaces,
/// mounts and credentials of the calling process, and calls only async-signal-safe
/// functions.
pub unsafe fn enter(plan: &Plan, cwd: &std::ffi::CStr) -> Result<(), Failure> {
    // SAFETY: the function contract; every pointer passed below is a live C string,
    // stack variable or descriptor prepared by the parent.
    unsafe {
        let mut views = OpenViews::none();
        if plan.ns_flags != 0 {
            unshare_user(plan, plan.ns_flags)?;
        }
        if plan.ns_flags & libc::CLONE_NEWNS != 0 {
            // Before the intermediate forks: it shares this mount namespace and writes
            // the git views back when the call has ended.
            set_up_mounts(plan)?;
            if plan.ns_flags & libc::CLONE_NEWPID != 0 {
                views = mount_views(&plan.git)?;
                views.remember();
            }
        }
        if plan.ns_flags & libc::CLONE_NEWPID != 0 {
            let mut lifeline: [c_int; 2] = [-1, -1];
            check(
                libc::pipe2(lifeline.as_mut_ptr(), libc::O_CLOEXEC) as c_long,
                Stage::Fork,
            )?;
            let pid = libc::fork();
            check(pid as c_long, Stage::Fork)?;
            if pid > 0 {
                libc::close(lifeline[0]);
                libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
                intermediate(pid, lifeline[1], &views);
            }
            libc::close(lifeline[1]);
            // The real git dirs must not stay open in the sandbox.
            views.close();
            tie_to_parent(lifeline[0])?;
        }
        if plan.ns_flags & libc::CLONE_NEWNS != 0 {
            if plan.proc_mount {
                mount_proc()?;
            }
            // The old working directory may now lie under a cover or a moved mount.
            check(libc::chdir(cwd.as_ptr()) as c_long, Stage::Chdir)?;
        }
        confine(
            plan.ns_flags & libc::CLONE_NEWUSER != 0,
            plan.last_cap,
            plan.landlock.as_ref().map(|fd| fd.as_raw_fd()),
        )?;
        if plan.ns_flags & libc::CLONE_NEWPID != 0 {
            // This process is the namespace's init. The command runs as its child, an
            // ordinary process that dies of SIGTERM like any other (init ignores it).
            // Init is a copy of the Runtime's memory (keys included): non-dumpable, so
            // the command cannot read /proc/1/mem or /proc/1/environ. The command's
            // `exec` makes the command itself dumpable again.
            check(
                libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) as c_long,
                Stage::Fork,
            )?;
            let pid = libc::fork();
            check(pid as c_long, Stage::Fork)?;
            if pid > 0 {
                init(pid);
            }
        }
        Ok(())
    }
}

/// `unshare(flags)` and, for a new user namespace, the uid and gid maps.
///
/// # Safety
/// Async-signal-safe; changes the calling process's namespaces.
pub unsafe fn unshare_user(plan: &Plan, flags: c_int) -> Result<(), Failure> {
    // SAFETY: plain system calls on live C strings and buffers.
    unsafe {
        check(libc::unshare(flags) as c_long, Stage::Namespaces)?;
        if flags & libc::CLONE_NEWUSER != 0 {
            // Absent on old kernels; then gid_map needs no "deny" first.
            let _ = write_file(c"/proc/self/setgroups", b"deny");
            check(
                write_file(c"/proc/self/uid_map", &plan.uid_map),
                Stage::IdMaps,
            )?;
            check(
                write_file(c"/proc/self/gid_map", &plan.gid_map),
                Stage::IdMaps,
            )?;
        }
        Ok(())
    }
}

/// Arms SIGKILL for when the parent dies and checks that the parent is still `parent`
/// (it may have died before the signal was armed): a process never outlives its spawner.
///
/// # Safety
/// Async-signal-safe: `prctl` and `getppid` only.
pub unsafe fn arm_parent_death(parent: u32) -> io::Result<()> {
    // SAFETY: plain system calls on integers.
    unsafe {
        if libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        ) == -1
        {
            return Err(io::Error::last_os_error());
        }
        if libc::getppid() as u32 != parent {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        Ok(())
    }
}

/// Waits (`waitpid(wait_for)`, so `-1` also reaps every other child on the way) until
/// `command` ends, then exits with its status as a shell would report it.
///
/// # Safety
/// Async-signal-safe: `waitpid` and `_exit` only.
pub unsafe fn exit_with_status_of(wait_for: libc::pid_t, command: libc::pid_t) -> ! {
    // SAFETY: plain system calls on integers and a stack variable.
    unsafe { exit_with(wait_status_of(wait_for, command)) }
}

/// Waits as [`exit_with_status_of`] and returns `command`'s wait status (exits with 127
/// when waiting fails).
///
/// # Safety
/// Async-signal-safe: `waitpid` and `_exit` only.
unsafe fn wait_status_of(wait_for: libc::pid_t, command: libc::pid_t) -> c_int {
    // SAFETY: plain system calls on integers and a stack variable.
    unsafe {
        let mut status: c_int = 0;
        loop {
            let r = libc::waitpid(wait_for, &mut status, 0);
            if r == command {
                return status;
            }
            if r < 0 && errno() != libc::EINTR {
                libc::_exit(127);
            }
        }
    }
}

/// Exits with a wait status as a shell would report it.
///
/// # Safety
/// Async-signal-safe: `_exit` only.
unsafe fn exit_with(status: c_int) -> ! {
    // SAFETY: a plain system call.
    unsafe {
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        libc::_exit(128 + libc::WTERMSIG(status));
    }
}

/// Arms SIGKILL for when the parent dies, then checks through `lifeline` (a pipe whose
/// write end only the parent holds) that the parent did not die before that.
///
/// # Safety
/// Async-signal-safe; `lifeline` is an open read end.
pub unsafe fn tie_to_parent(lifeline: RawFd) -> Result<(), Failure> {
    // SAFETY: plain system calls on an integer and a stack variable.
    unsafe {
        check(
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) as c_long,
            Stage::Fork,
        )?;
        // The parent may have died before the signal was armed: its end of the
        // lifeline is then closed and the pipe reads as hung up.
        let mut pfd = libc::pollfd {
            fd: lifeline,
            events: libc::POLLIN,
            revents: 0,
        };
        if libc::poll(&mut pfd, 1, 0) != 0 {
            libc::_exit(137);
        }
        Ok(())
    }
}

/// Gives up every way out for the calling process and what it `exec`s: with
/// `drop_caps` (a user namespace) an empty capability bounding set and securebits so
/// that `exec` grants no capability back; then `no_new_privs` and the Landlock ruleset.
///
/// # Safety
/// Async-signal-safe; `landlock` is an open ruleset descriptor.
pub unsafe fn confine(
    drop_caps: bool,
    last_cap: c_int,
    landlock: Option<RawFd>,
) -> Result<(), Failure> {
    // SAFETY: plain system calls on integers.
    unsafe {
        if drop_caps {
            // Full capabilities in the new user namespace would let the command undo the
            // covers; an empty bounding set and NOROOT mean `exec` grants none back.
            for cap in 0..=last_cap {
                check(
                    libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) as c_long,
                    Stage::Capabilities,
                )?;
            }
            let bits = libc::SECBIT_NOROOT
                | libc::SECBIT_NOROOT_LOCKED
                | libc::SECBIT_NO_CAP_AMBIENT_RAISE
                | libc::SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
            check(
                libc::prctl(libc::PR_SET_SECUREBITS, bits as libc::c_ulong, 0, 0, 0) as c_long,
                Stage::Capabilities,
            )?;
        }
        if let Some(ruleset) = landlock {
            check(
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) as c_long,
                Stage::Landlock,
            )?;
            check(
                libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32),
                Stage::Landlock,
            )?;
        }
        Ok(())
    }
}

/// The PID namespace's init: reaps every orphan, and exits with the command's status
/// when the command ends, whereupon the kernel kills whatever is left in the namespace.
///
/// # Safety
/// Runs in a forked child; async-signal-safe calls only.
unsafe fn init(command: libc::pid_t) -> ! {
    // SAFETY: plain system calls on integers and a stack variable.
    unsafe {
        // Readers of the output pipe and of std's exec-status pipe must not wait on us.
        libc::syscall(libc::SYS_close_range, 0u32, c_uint::MAX, 0u32);
        exit_with_status_of(-1, command)
    }
}
