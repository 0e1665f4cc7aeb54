//! Every `unsafe` of the crate: raw Linux system calls for namespaces, mounts, Landlock
//! and capabilities, the code that runs between `fork` and `exec`, and the one-time
//! environment detach at process start.
//!
//! Code that runs in a forked child of a multi-threaded process may only make
//! async-signal-safe calls: everything it touches (paths, maps, file descriptors) is
//! prepared in the parent, and the child allocates nothing, takes no lock and only issues
//! system calls.
#![allow(unsafe_code)]

use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use libc::{c_int, c_long, c_uint, c_void};

/// The most workspace roots and cover bind sources one plan may clone (a fixed array in
/// the child, which must not allocate).
pub const MAX_CLONES: usize = 16;

/// Landlock access rights (uapi `linux/landlock.h`).
pub mod ll {
    /// Execute a file.
    pub const EXECUTE: u64 = 1 << 0;
    /// Open a file for writing.
    pub const WRITE_FILE: u64 = 1 << 1;
    /// Open a file for reading.
    pub const READ_FILE: u64 = 1 << 2;
    /// Remove an empty directory or rename one.
    pub const REMOVE_DIR: u64 = 1 << 4;
    /// Unlink or rename a file.
    pub const REMOVE_FILE: u64 = 1 << 5;
    /// Create a character device.
    pub const MAKE_CHAR: u64 = 1 << 6;
    /// Create a directory.
    pub const MAKE_DIR: u64 = 1 << 7;
    /// Create a regular file.
    pub const MAKE_REG: u64 = 1 << 8;
    /// Create a unix socket.
    pub const MAKE_SOCK: u64 = 1 << 9;
    /// Create a named pipe.
    pub const MAKE_FIFO: u64 = 1 << 10;
    /// Create a block device.
    pub const MAKE_BLOCK: u64 = 1 << 11;
    /// Create a symbolic link.
    pub const MAKE_SYM: u64 = 1 << 12;
    /// Link or rename a file into another directory (ABI 2).
    pub const REFER: u64 = 1 << 13;
    /// Truncate a file (ABI 3).
    pub const TRUNCATE: u64 = 1 << 14;
    /// Bind a TCP port (ABI 4).
    pub const NET_BIND_TCP: u64 = 1 << 0;
    /// Connect a TCP socket (ABI 4).
    pub const NET_CONNECT_TCP: u64 = 1 << 1;
    /// Connecting to abstract unix sockets made outside the domain (ABI 6).
    pub const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
    /// Signalling processes outside the domain (ABI 6).
    pub const SCOPE_SIGNAL: u64 = 1 << 1;
    /// Rights that apply to a file (not only a directory).
    pub const FILE_RIGHTS: u64 = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE;
}

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

const LANDLOCK_CREATE_RULESET_VERSION: c_uint = 1;
const LANDLOCK_RULE_PATH_BENEATH: c_int = 1;
const OPEN_TREE_CLONE: c_uint = 1;
const AT_RECURSIVE: c_uint = 0x8000;
const MOVE_MOUNT_F_EMPTY_PATH: c_uint = 4;

/// The Landlock ABI version the kernel offers; 0 when Landlock is absent or disabled.
pub fn landlock_abi() -> u32 {
    // SAFETY: with a null attribute and size 0 and the VERSION flag, the call only
    // returns a number; no memory is read or written.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if v < 0 { 0 } else { v as u32 }
}

/// Creates a ruleset handling the given rights. `abi` decides the attribute size.
pub fn landlock_ruleset(fs: u64, net: u64, scoped: u64, abi: u32) -> io::Result<OwnedFd> {
    let attr = RulesetAttr {
        handled_access_fs: fs,
        handled_access_net: net,
        scoped,
    };
    let size = match abi {
        0 => return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP)),
        1..=3 => 8,
        4 | 5 => 16,
        _ => std::mem::size_of::<RulesetAttr>(),
    };
    // SAFETY: `attr` is a live, properly laid-out uapi struct of at least `size` bytes.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            size,
            0u32,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor to us; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Adds "`access` is allowed beneath `dir`" to a ruleset.
pub fn landlock_allow(ruleset: &OwnedFd, dir: &OwnedFd, access: u64) -> io::Result<()> {
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd: dir.as_raw_fd(),
    };
    // SAFETY: `attr` is a live packed uapi struct; both descriptors are open.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            LANDLOCK_RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0u32,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

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
    /// A folder meant to stay visible, not a root: mounted read-only (a mount beneath a
    /// writable folder would otherwise be writable to Landlock), and skipped, not fatal,
    /// while it does not exist.
    pub optional: bool,
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
}

impl Stage {
    fn from_u8(b: u8) -> Option<Stage> {
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

fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn check(r: c_long, stage: Stage) -> Result<(), Failure> {
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

/// The intermediate process: it stays outside the namespaces, holds the lifeline, waits
/// for the namespace's first process and exits with its status. Killing it (the
/// Runtime's `killpg`, or its own parent-death signal) kills that process through its
/// parent-death signal, and with it the whole PID namespace.
///
/// # Safety
/// Runs in a forked child; async-signal-safe calls only.
unsafe fn intermediate(child: libc::pid_t, keep: RawFd) -> ! {
    // SAFETY: plain system calls on integers and a stack variable.
    unsafe {
        // Close everything else (the output pipe, std's exec-status pipe) so that readers
        // see EOF as soon as the sandboxed process tree is gone.
        let keep = keep as c_uint;
        if keep > 0 {
            libc::syscall(libc::SYS_close_range, 0u32, keep - 1, 0u32);
        }
        libc::syscall(libc::SYS_close_range, keep + 1, c_uint::MAX, 0u32);
        let mut status: c_int = 0;
        loop {
            let r = libc::waitpid(child, &mut status, 0);
            if r == child {
                break;
            }
            if r < 0 && errno() != libc::EINTR {
                libc::_exit(127);
            }
        }
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        libc::_exit(128 + libc::WTERMSIG(status));
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
        if plan.ns_flags != 0 {
            check(libc::unshare(plan.ns_flags) as c_long, Stage::Namespaces)?;
            if plan.ns_flags & libc::CLONE_NEWUSER != 0 {
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
                    intermediate(pid, lifeline[1]);
                }
                libc::close(lifeline[1]);
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
                // The intermediate may have died before the signal was armed: its end of
                // the lifeline is then closed and the pipe reads as hung up.
                let mut pfd = libc::pollfd {
                    fd: lifeline[0],
                    events: libc::POLLIN,
                    revents: 0,
                };
                if libc::poll(&mut pfd, 1, 0) != 0 {
                    libc::_exit(137);
                }
            }
        }
        if plan.ns_flags & libc::CLONE_NEWNS != 0 {
            check(
                libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ) as c_long,
                Stage::MountPrivate,
            )?;
            // Clone what must stay visible before anything covers it.
            let mut clones: [c_int; MAX_CLONES] = [-1; MAX_CLONES];
            let mut n = 0;
            let sources = plan
                .covers
                .iter()
                .filter_map(|c| match c {
                    Cover::Bind { source, .. } => Some((source.as_c_str(), false)),
                    Cover::Tmpfs { .. } => None,
                })
                .chain(
                    plan.reattach
                        .iter()
                        .map(|r| (r.path.as_c_str(), r.optional)),
                );
            for (source, optional) in sources {
                if n == MAX_CLONES {
                    return Err(Failure {
                        stage: Stage::Reattach,
                        errno: libc::E2BIG,
                    });
                }
                let fd = libc::syscall(
                    libc::SYS_open_tree,
                    libc::AT_FDCWD,
                    source.as_ptr(),
                    OPEN_TREE_CLONE | AT_RECURSIVE | libc::O_CLOEXEC as c_uint,
                );
                if fd < 0 && optional {
                    clones[n] = -1;
                    n += 1;
                    continue;
                }
                check(fd, Stage::Covers)?;
                clones[n] = fd as c_int;
                n += 1;
            }
            let mut next = 0;
            for cover in &plan.covers {
                match cover {
                    Cover::Tmpfs { target } => check(
                        libc::mount(
                            c"tmpfs".as_ptr(),
                            target.as_ptr(),
                            c"tmpfs".as_ptr(),
                            libc::MS_NOSUID | libc::MS_NODEV,
                            c"mode=0755,size=1m".as_ptr() as *const c_void,
                        ) as c_long,
                        Stage::Covers,
                    )?,
                    Cover::Bind { target, .. } => {
                        check(move_mount(clones[next], target), Stage::Covers)?;
                        next += 1;
                    }
                }
            }
            for r in &plan.reattach {
                if clones[next] < 0 {
                    next += 1;
                    continue;
                }
                for dir in &r.mkdirs {
                    if libc::mkdir(dir.as_ptr(), 0o755) < 0 && errno() != libc::EEXIST {
                        return Err(Failure {
                            stage: Stage::Reattach,
                            errno: errno(),
                        });
                    }
                }
                if r.optional && set_read_only(clones[next]) < 0 {
                    return Err(Failure {
                        stage: Stage::Reattach,
                        errno: errno(),
                    });
                }
                check(move_mount(clones[next], &r.path), Stage::Reattach)?;
                next += 1;
            }
            for fd in clones[..n].iter().filter(|fd| **fd >= 0) {
                libc::close(*fd);
            }
            if plan.proc_mount {
                check(
                    libc::mount(
                        c"proc".as_ptr(),
                        c"/proc".as_ptr(),
                        c"proc".as_ptr(),
                        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                        std::ptr::null(),
                    ) as c_long,
                    Stage::Proc,
                )?;
            }
            // The old working directory may now lie under a cover or a moved mount.
            check(libc::chdir(cwd.as_ptr()) as c_long, Stage::Chdir)?;
        }
        if plan.ns_flags & libc::CLONE_NEWUSER != 0 {
            // Full capabilities in the new user namespace would let the command undo the
            // covers; an empty bounding set and NOROOT mean `exec` grants none back.
            for cap in 0..=plan.last_cap {
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
        if let Some(ruleset) = &plan.landlock {
            check(
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) as c_long,
                Stage::Landlock,
            )?;
            check(
                libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32),
                Stage::Landlock,
            )?;
        }
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
        let mut status: c_int = 0;
        loop {
            let r = libc::waitpid(-1, &mut status, 0);
            if r == command {
                break;
            }
            if r < 0 && errno() != libc::EINTR {
                libc::_exit(127);
            }
        }
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        libc::_exit(128 + libc::WTERMSIG(status));
    }
}

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Makes a detached mount tree read-only, leaving its other flags alone.
///
/// # Safety
/// Async-signal-safe; `fd` is a detached mount from `open_tree`.
unsafe fn set_read_only(fd: c_int) -> c_long {
    const MOUNT_ATTR_RDONLY: u64 = 1;
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: `attr` is a live uapi struct of the size passed; `fd` is open.
    unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            fd,
            c"".as_ptr(),
            libc::AT_EMPTY_PATH | AT_RECURSIVE as c_int,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    }
}

/// # Safety
/// Async-signal-safe; `fd` is a detached mount from `open_tree`.
unsafe fn move_mount(fd: c_int, target: &std::ffi::CStr) -> c_long {
    // SAFETY: see the function contract.
    unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            fd,
            c"".as_ptr(),
            libc::AT_FDCWD,
            target.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    }
}

/// Installs, to run between the command's `fork` and `exec`: the parent-death signal
/// (SIGKILL when the spawning thread dies, so a tool process never outlives a Runtime
/// killed with `kill -9`) and, when given, entering the sandbox.
pub fn install(cmd: &mut std::process::Command, sandbox: Option<(std::sync::Arc<Plan>, CString)>) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child; it calls only `prctl`, `getppid`
    // and [`enter`], which are async-signal-safe, and allocates nothing (its data was
    // prepared here, in the parent). The getppid check closes the race where the
    // parent died before the parent-death signal was armed.
    unsafe {
        cmd.pre_exec(move || {
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
            match &sandbox {
                Some((plan, cwd)) => {
                    enter(plan, cwd).map_err(|f| io::Error::from_raw_os_error(f.errno))
                }
                None => Ok(()),
            }
        });
    }
}

/// Forks a child that enters the sandbox described by `plan` and exits at once, and
/// reports the step that failed, if one did. Used once per Runtime to learn what the
/// kernel allows.
pub fn probe(plan: &Plan, cwd: &std::ffi::CStr) -> io::Result<Option<Failure>> {
    let (read_end, write_end) = std::io::pipe()?;
    let wfd = write_end.as_raw_fd();
    // SAFETY: the child only calls [`enter`], `write` and `_exit`, all async-signal-safe,
    // on data prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: in the forked child; see above.
        unsafe {
            match enter(plan, cwd) {
                Ok(()) => libc::_exit(0),
                Err(f) => {
                    let mut msg = [0u8; 5];
                    msg[0] = f.stage as u8;
                    msg[1..].copy_from_slice(&f.errno.to_le_bytes());
                    libc::write(wfd, msg.as_ptr() as *const c_void, msg.len());
                    libc::_exit(1);
                }
            }
        }
    }
    drop(write_end);
    let mut status: c_int = 0;
    loop {
        // SAFETY: waiting for our own child into a stack variable.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            break;
        }
        if r < 0 && errno() != libc::EINTR {
            return Err(io::Error::last_os_error());
        }
    }
    use std::io::Read;
    let mut msg = Vec::new();
    let mut read_end = read_end;
    read_end.read_to_end(&mut msg)?;
    if msg.len() >= 5 {
        let stage = Stage::from_u8(msg[0]).unwrap_or(Stage::Namespaces);
        let errno = i32::from_le_bytes([msg[1], msg[2], msg[3], msg[4]]);
        return Ok(Some(Failure { stage, errno }));
    }
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(None)
    } else {
        Ok(Some(Failure {
            stage: Stage::Fork,
            errno: libc::ECHILD,
        }))
    }
}

/// Moves every environment variable to memory the C library allocates, so that the
/// initial environment block (what `/proc/PID/environ` shows) can be overwritten without
/// changing what the process and its children see.
///
/// # Safety contract for callers
/// Call it first thing in `main`, before any thread exists: `setenv` is not thread-safe.
pub fn detach_environment() {
    let vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    for (k, v) in vars {
        // SAFETY: documented precondition: the process is still single-threaded, so no
        // other thread reads or writes the environment concurrently.
        unsafe { std::env::set_var(k, v) };
    }
}
