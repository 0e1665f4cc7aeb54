//! The mounts of the sandbox: covers, reattached roots, `/proc`, and the mount API calls
//! they and the git views (`super::gitview`) are made of.
#![allow(unsafe_code)]

use libc::{c_int, c_long, c_uint, c_void};

use super::enter::{Cover, Failure, MAX_CLONES, Plan, Stage, check, errno};

pub(super) const OPEN_TREE_CLONE: c_uint = 1;
pub(super) const AT_RECURSIVE: c_uint = 0x8000;
const MOVE_MOUNT_F_EMPTY_PATH: c_uint = 4;

/// Makes the mounts private and applies the covers and reattached roots of `plan` in the
/// current mount namespace.
///
/// # Safety
/// Async-signal-safe; changes the calling process's mount namespace.
pub unsafe fn set_up_mounts(plan: &Plan) -> Result<(), Failure> {
    // SAFETY: plain system calls on live C strings, stack arrays and descriptors.
    unsafe {
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
            if r.read_only && set_read_only(clones[next]) < 0 {
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
        Ok(())
    }
}

/// Mounts a fresh `/proc` for the calling process's PID namespace.
///
/// # Safety
/// Async-signal-safe; changes the calling process's mount namespace.
pub unsafe fn mount_proc() -> Result<(), Failure> {
    // SAFETY: a system call on static C strings.
    unsafe {
        check(
            libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            ) as c_long,
            Stage::Proc,
        )
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
pub(super) unsafe fn set_read_only(fd: c_int) -> c_long {
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
pub(super) unsafe fn move_mount(fd: c_int, target: &std::ffi::CStr) -> c_long {
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
