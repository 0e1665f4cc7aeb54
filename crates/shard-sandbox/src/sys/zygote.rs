//! The zygote's process plumbing (docs/sandbox.md, "The zygote"): descriptors passed over
//! a unix socket, the zygote's start, and each call's init process, forked by the
//! single-threaded zygote into a new mount and PID namespace.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use libc::{c_int, c_long, c_uint, c_void};
use nix::sys::socket::{self, AddressFamily, SockFlag, SockType};

use super::enter::{Failure, Plan, Stage, check, confine, errno};
use super::enter::{arm_parent_death, tie_to_parent, unshare_user};
use super::gitview::{GitView, OpenViews, mount_views};
use super::mounts::{mount_proc, set_up_mounts};
use super::writeback::write_back;

/// The descriptor number the zygote finds its control socket at.
pub const CONTROL_FD: RawFd = 3;
/// Most descriptors one message carries.
const MAX_FDS: usize = 8;
/// Length of every record on a call's channel.
pub const RECORD: usize = 8;

/// A connected pair of `SOCK_SEQPACKET` unix sockets (message boundaries kept), both
/// close-on-exec.
pub fn seqpacket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    socket::socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(io::Error::from)
}

/// Sends one message with `fds` attached; never raises SIGPIPE.
pub fn send_with_fds(sock: RawFd, bytes: &[u8], fds: &[RawFd]) -> io::Result<()> {
    if fds.len() > MAX_FDS {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut c_void,
        iov_len: bytes.len(),
    };
    // u64 alignment for the control header.
    let mut control = [0u64; 8];
    // SAFETY: `msghdr` is plain data; every pointer set below points into live stack
    // buffers at least as large as the lengths given, and the CMSG macros stay inside
    // `control` (CMSG_SPACE of MAX_FDS descriptors fits in 64 bytes).
    let n = unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if !fds.is_empty() {
            let payload = std::mem::size_of_val(fds) as c_uint;
            msg.msg_control = control.as_mut_ptr() as *mut c_void;
            msg.msg_controllen = libc::CMSG_SPACE(payload) as _;
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(payload) as _;
            std::ptr::copy_nonoverlapping(
                fds.as_ptr() as *const u8,
                libc::CMSG_DATA(cmsg),
                payload as usize,
            );
        }
        loop {
            let n = libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL);
            if n < 0 && errno() == libc::EINTR {
                continue;
            }
            break n;
        }
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    if n as usize != bytes.len() {
        return Err(io::Error::other("short send"));
    }
    Ok(())
}

/// Receives one message and the descriptors attached to it (close-on-exec). Zero bytes
/// means the peer is gone.
pub fn recv_with_fds(sock: RawFd, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    recv_with_flags(sock, buf, 0)
}

/// [`recv_with_fds`] without waiting: `WouldBlock` when no message is queued.
pub fn try_recv_with_fds(sock: RawFd, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    recv_with_flags(sock, buf, libc::MSG_DONTWAIT)
}

fn recv_with_flags(sock: RawFd, buf: &mut [u8], flags: c_int) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut c_void,
        iov_len: buf.len(),
    };
    let mut control = [0u64; 8];
    let mut fds = Vec::new();
    // SAFETY: as in `send_with_fds`; the kernel writes at most `msg_controllen` bytes
    // of control data, which the CMSG macros walk within bounds.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr() as *mut c_void;
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        let n = loop {
            let n = libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC | flags);
            if n < 0 && errno() == libc::EINTR {
                continue;
            }
            break n;
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg);
                let len = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                for i in 0..len / std::mem::size_of::<RawFd>() {
                    let fd = std::ptr::read_unaligned(
                        data.add(i * std::mem::size_of::<RawFd>()) as *const RawFd
                    );
                    // The kernel just installed this descriptor for this message.
                    fds.push(OwnedFd::from_raw_fd(fd));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        if msg.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 {
            return Err(io::Error::from_raw_os_error(libc::EMSGSIZE));
        }
        Ok((n as usize, fds))
    }
}

/// Installs, to run in the zygote's process between `fork` and `exec`: the parent-death
/// signal (the Runtime's death kills the zygote), the check that the Runtime is still
/// there, and `control` moved to [`CONTROL_FD`] (inherited across `exec`).
pub fn install_zygote(cmd: &mut std::process::Command, control: RawFd) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child and calls only `prctl`, `getppid` and
    // `dup2`/`fcntl`, which are async-signal-safe, on integers captured here.
    unsafe {
        cmd.pre_exec(move || {
            arm_parent_death(parent)?;
            if control == CONTROL_FD {
                // dup2 onto itself keeps close-on-exec: clear it by hand.
                if libc::fcntl(control, libc::F_SETFD, 0) == -1 {
                    return Err(io::Error::last_os_error());
                }
            } else if libc::dup2(control, CONTROL_FD) == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// First thing in the zygote: the control socket becomes close-on-exec (no call's
/// process may inherit it). The parent-death signal armed before `exec` survives it.
pub fn zygote_begin() -> bool {
    // SAFETY: a system call on an integer.
    unsafe { libc::fcntl(CONTROL_FD, libc::F_SETFD, libc::FD_CLOEXEC) != -1 }
}

/// Enters the zygote's namespaces (user, mount and, when set, network — not PID: each
/// call gets its own) and sets up the covers, once per Runtime.
///
/// # Safety
/// Only in the zygote process, while it is single-threaded: it changes the whole
/// process's namespaces, mounts and signal dispositions.
pub unsafe fn zygote_enter(plan: &Plan, runtime: u32) -> Result<(), Failure> {
    let tie = || {
        // SAFETY: async-signal-safe system calls on an integer.
        unsafe { arm_parent_death(runtime) }.map_err(|err| Failure {
            stage: Stage::Fork,
            errno: err.raw_os_error().unwrap_or(libc::ESRCH),
        })
    };
    // SAFETY: the zygote is single-threaded; the calls change only its own namespaces.
    unsafe {
        tie()?;
        unshare_user(plan, plan.ns_flags & !libc::CLONE_NEWPID)?;
        set_up_mounts(plan)?;
        // A credential change may clear the parent-death signal: arm it again.
        tie()?;
        // Each call's init inherits SIGCHLD ignored and sets it back: the zygote never
        // waits, the kernel reaps its children.
        libc::signal(libc::SIGCHLD, libc::SIG_IGN);
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
    Ok(())
}

/// A pipe whose write end only the zygote holds: a call's init that finds it hung up
/// knows the zygote died before the init's parent-death signal was armed.
#[derive(Debug)]
pub struct Lifeline {
    read: OwnedFd,
    write: OwnedFd,
}

/// See [`Lifeline`].
pub fn lifeline() -> io::Result<Lifeline> {
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    Ok(Lifeline { read, write })
}

/// How a call's init confines itself before starting the command.
#[derive(Debug)]
pub struct Confinement {
    /// Mount a fresh `/proc` for the call's PID namespace.
    pub proc_mount: bool,
    /// Highest capability number.
    pub last_cap: c_int,
    /// The Landlock ruleset.
    pub landlock: Option<OwnedFd>,
    /// Git dirs each call sees through a view of its own.
    pub git: Vec<GitView>,
}

/// One call, as the zygote received it.
#[derive(Debug)]
pub struct Call {
    /// Working directory.
    pub cwd: CString,
    /// Paths to try for the program, in order.
    pub candidates: Vec<CString>,
    /// Arguments, the program's name first.
    pub argv: Vec<CString>,
    /// `NAME=value` entries.
    pub envp: Vec<CString>,
    /// Standard input, output and error of the command.
    pub stdio: [OwnedFd; 3],
    /// The call's channel to the Runtime (records of [`RECORD`] bytes).
    pub channel: OwnedFd,
}

/// Writes one record on a call's channel; errors are ignored (the Runtime is gone).
pub fn write_record(channel: RawFd, record: &[u8; RECORD]) {
    // SAFETY: a send of a live stack buffer.
    unsafe {
        libc::send(
            channel,
            record.as_ptr() as *const c_void,
            RECORD,
            libc::MSG_NOSIGNAL,
        );
    }
}

/// A failure record: `E`, the stage, and the errno.
pub fn failure_record(f: Failure) -> [u8; RECORD] {
    let mut r = [0u8; RECORD];
    r[0] = b'E';
    r[1] = f.stage as u8;
    r[4..].copy_from_slice(&f.errno.to_le_bytes());
    r
}

/// Forks the call's init into a new mount and PID namespace. The parent returns once
/// the child exists, after telling the Runtime the init's pid (a `P` record: the init
/// leads a process group of its own, which the Runtime records like a child's); the child
/// never returns. The caller then drops the call's descriptors, or reports an error on
/// its channel.
///
/// # Safety
/// Only in the single-threaded zygote: the raw `clone` skips the C library's fork
/// handlers, and the child runs ordinary code (it allocates), which is sound only when no
/// other thread could hold a lock or be mid-update at the time of the clone.
pub unsafe fn start_call(
    call: &Call,
    confinement: &Confinement,
    lifeline: &Lifeline,
) -> io::Result<()> {
    let flags = (libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::SIGCHLD) as libc::c_ulong;
    // SAFETY: a fork-like clone (no shared memory, no new stack) of the zygote, which the
    // caller guarantees is single-threaded: the child owns a copy of everything and may
    // run any code.
    let pid = unsafe { libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize) };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: in the freshly cloned child, the namespace's init.
        unsafe { call_init(call, confinement, lifeline) }
    }
    // The child makes itself a group leader too; whichever runs first, the group exists
    // before the Runtime hears of it.
    // SAFETY: a system call on integers, for our own child.
    unsafe { libc::setpgid(pid as libc::pid_t, pid as libc::pid_t) };
    let mut rec = [0u8; RECORD];
    rec[0] = b'P';
    rec[4..].copy_from_slice(&(pid as i32).to_le_bytes());
    write_record(call.channel.as_raw_fd(), &rec);
    Ok(())
}

/// Reads a call request received by a slot into a [`Call`] whose channel is the slot's
/// socket (given last).
pub type Decode = fn(&[u8], Vec<OwnedFd>, OwnedFd) -> Option<Call>;

/// Clones a *slot*: a call's init, set up and confined ahead of its call (new mount and
/// PID namespace, `/proc`, capabilities, Landlock), waiting on its own socket for the
/// request. Returns its pid (leader of its own process group) and the Runtime's end of
/// that socket, which then serves as the call's channel. A slot takes the namespace work
/// off the call's critical path and lets the Runtime send the call straight to it.
///
/// # Safety
/// As [`start_call`]: only in the single-threaded zygote.
pub unsafe fn start_slot(
    confinement: &Confinement,
    lifeline: &Lifeline,
    decode: Decode,
    max_message: usize,
) -> io::Result<(i32, OwnedFd)> {
    let (ours, theirs) = seqpacket_pair()?;
    let flags = (libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::SIGCHLD) as libc::c_ulong;
    // SAFETY: as in `start_call`.
    let pid = unsafe { libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize) };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: in the freshly cloned child, the namespace's init.
        unsafe {
            libc::close(ours.as_raw_fd());
            slot_init(theirs, confinement, lifeline, decode, max_message)
        }
    }
    // SAFETY: a system call on integers, for our own child (see `start_call`).
    unsafe { libc::setpgid(pid as libc::pid_t, pid as libc::pid_t) };
    Ok((pid as i32, ours))
}

/// # Safety
/// Runs in the child of [`start_slot`].
unsafe fn slot_init(
    socket: OwnedFd,
    confinement: &Confinement,
    lifeline: &Lifeline,
    decode: Decode,
    max_message: usize,
) -> ! {
    // SAFETY: the child is single-threaded.
    unsafe {
        let mut views = init_prelude(socket.as_raw_fd(), confinement, lifeline);
        let mut buf = vec![0u8; max_message];
        let (n, fds) = match recv_with_fds(socket.as_raw_fd(), &mut buf) {
            Ok((n, fds)) if n > 0 => (n, fds),
            // The Runtime let the slot go, or is gone.
            _ => libc::_exit(0),
        };
        match decode(&buf[..n], fds, socket) {
            Some(call) => run_call(&call, &mut views),
            None => libc::_exit(1),
        }
    }
}

/// The call's init (forked on demand): sets itself up, then runs the call.
///
/// # Safety
/// Runs in the child of [`start_call`].
unsafe fn call_init(call: &Call, confinement: &Confinement, lifeline: &Lifeline) -> ! {
    // SAFETY: the child is single-threaded.
    unsafe {
        let mut views = init_prelude(call.channel.as_raw_fd(), confinement, lifeline);
        run_call(call, &mut views)
    }
}

/// What every call's init does first, before knowing its call: ties itself to the
/// zygote, leads a process group of its own, mounts `/proc` and the git views (returned,
/// to be written back when the call ends) and confines itself. A failure is reported on
/// `channel` and ends the process.
///
/// # Safety
/// Runs in a freshly cloned init.
unsafe fn init_prelude(
    channel: RawFd,
    confinement: &Confinement,
    lifeline: &Lifeline,
) -> OpenViews {
    // SAFETY: the child is single-threaded; plain system calls on live buffers.
    unsafe {
        let fail = |f: Failure| -> ! {
            write_record(channel, &failure_record(f));
            libc::_exit(1)
        };
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        // A group of its own: killing it from outside (the Runtime's recorded groups, the
        // daemon's leftovers) kills the init, and with it the namespace.
        libc::setpgid(0, 0);
        libc::close(lifeline.write.as_raw_fd());
        if let Err(f) = tie_to_parent(lifeline.read.as_raw_fd()) {
            fail(f);
        }
        libc::close(lifeline.read.as_raw_fd());
        libc::close(CONTROL_FD);
        if confinement.proc_mount
            && let Err(f) = mount_proc()
        {
            fail(f);
        }
        let views = match mount_views(&confinement.git) {
            Ok(v) => v,
            Err(f) => fail(f),
        };
        let ruleset = confinement.landlock.as_ref().map(|fd| fd.as_raw_fd());
        if let Err(f) = confine(true, confinement.last_cap, ruleset) {
            fail(f);
        }
        if let Some(fd) = ruleset {
            libc::close(fd);
        }
        // The command cannot read this process's memory (it holds nothing secret, but
        // it is the namespace's init).
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        views
    }
}

/// The call itself: enters the working directory, starts the command, relays signals
/// from the Runtime, and when the command ends kills and reaps what is left, writes the
/// git views back, then reports the command's wait status. The channel's end (the
/// Runtime dropped the call, or died) kills everything and writes back without a report.
///
/// # Safety
/// Runs in a call's init, after [`init_prelude`].
unsafe fn run_call(call: &Call, views: &mut OpenViews) -> ! {
    // SAFETY: the child is single-threaded; plain system calls on live buffers.
    unsafe {
        let channel = call.channel.as_raw_fd();
        let fail = |f: Failure| -> ! {
            write_record(channel, &failure_record(f));
            libc::_exit(1)
        };
        if let Err(f) = check(libc::chdir(call.cwd.as_ptr()) as c_long, Stage::Chdir) {
            fail(f);
        }
        // Now, not when the slot was made: the call starts from what is there now.
        views.remember();
        let pid = libc::fork();
        if pid < 0 {
            fail(Failure {
                stage: Stage::Exec,
                errno: errno(),
            });
        }
        if pid == 0 {
            command(call);
        }
        for fd in &call.stdio {
            libc::close(fd.as_raw_fd());
        }
        let pidfd = libc::syscall(libc::SYS_pidfd_open, pid, 0u32) as c_int;
        if pidfd < 0 {
            kill_all_and_reap();
            fail(Failure {
                stage: Stage::Exec,
                errno: errno(),
            });
        }
        let mut status: c_int = 0;
        loop {
            let mut fds = [
                libc::pollfd {
                    fd: channel,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: pidfd,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            if libc::poll(fds.as_mut_ptr(), 2, -1) < 0 {
                if errno() == libc::EINTR {
                    continue;
                }
                kill_all_and_reap();
                libc::_exit(1);
            }
            if fds[1].revents != 0 {
                if libc::waitpid(pid, &mut status, 0) == pid {
                    break;
                }
                continue;
            }
            if fds[0].revents != 0 {
                let mut rec = [0u8; RECORD];
                let n = libc::recv(channel, rec.as_mut_ptr() as *mut c_void, RECORD, 0);
                if n < 0 && errno() == libc::EINTR {
                    continue;
                }
                if n as usize == RECORD && rec[0] == b'S' {
                    let sig = i32::from_le_bytes([rec[4], rec[5], rec[6], rec[7]]);
                    // Every process of the namespace but this one.
                    libc::kill(-1, sig);
                    continue;
                }
                // The Runtime dropped the call or died.
                kill_all_and_reap();
                write_back(views);
                libc::_exit(0);
            }
        }
        kill_all_and_reap();
        write_back(views);
        let mut rec = [0u8; RECORD];
        rec[0] = b'X';
        rec[4..].copy_from_slice(&status.to_le_bytes());
        write_record(channel, &rec);
        libc::_exit(0)
    }
}

/// Kills every other process of the namespace and reaps them all, so that none is left
/// (not even as a zombie) once the call reports its end.
///
/// # Safety
/// Runs in a call's init.
unsafe fn kill_all_and_reap() {
    // SAFETY: plain system calls on integers.
    unsafe {
        loop {
            libc::kill(-1, libc::SIGKILL);
            if libc::waitpid(-1, std::ptr::null_mut(), 0) < 0 && errno() == libc::ECHILD {
                break;
            }
        }
    }
}

/// The command: standard descriptors in place, default signal handling, its own process
/// group, then `exec` of the first candidate that works.
///
/// # Safety
/// Runs in the forked child of a call's init.
unsafe fn command(call: &Call) -> ! {
    // SAFETY: the child is single-threaded; plain system calls on live buffers.
    unsafe {
        let channel = call.channel.as_raw_fd();
        for (i, fd) in call.stdio.iter().enumerate() {
            if libc::dup2(fd.as_raw_fd(), i as c_int) < 0 {
                write_record(
                    channel,
                    &failure_record(Failure {
                        stage: Stage::Exec,
                        errno: errno(),
                    }),
                );
                libc::_exit(127);
            }
        }
        // Nothing but 0, 1 and 2 survives the exec (the channel stays open until then
        // to report a failed exec).
        const CLOSE_RANGE_CLOEXEC: c_uint = 1 << 2;
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        );
        // Rust programs ignore SIGPIPE, and signal dispositions set to "ignore" survive
        // exec: give the command the defaults a shell expects.
        for sig in [libc::SIGPIPE, libc::SIGCHLD, libc::SIGINT, libc::SIGQUIT] {
            libc::signal(sig, libc::SIG_DFL);
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
        libc::setpgid(0, 0);
        let mut argv: Vec<*const libc::c_char> = call.argv.iter().map(|a| a.as_ptr()).collect();
        argv.push(std::ptr::null());
        let mut envp: Vec<*const libc::c_char> = call.envp.iter().map(|e| e.as_ptr()).collect();
        envp.push(std::ptr::null());
        let mut err = libc::ENOENT;
        for path in &call.candidates {
            libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr());
            let e = errno();
            // Like the shell: a file found but not runnable beats "not found".
            if e != libc::ENOENT && e != libc::ENOTDIR {
                err = e;
            }
        }
        write_record(
            channel,
            &failure_record(Failure {
                stage: Stage::Exec,
                errno: err,
            }),
        );
        libc::_exit(127)
    }
}
