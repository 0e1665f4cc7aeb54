//! Spawning helpers: the `pre_exec` hook of every tool process, the probe, and the
//! environment detach at process start.
#![allow(unsafe_code)]

use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::AsRawFd;

use libc::{c_int, c_void};

use super::enter::{Failure, Plan, Stage, arm_parent_death, enter, errno};

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
            arm_parent_death(parent)?;
            match &sandbox {
                Some((plan, cwd)) => {
                    enter(plan, cwd).map_err(|f| io::Error::from_raw_os_error(f.errno))
                }
                None => Ok(()),
            }
        });
    }
}

/// Closes every descriptor except `a` and `b` (either may be -1).
///
/// # Safety
/// Meant for a forked child that does not exec: any other descriptor it holds is gone
/// afterwards. Only `close_range`, which is async-signal-safe, is called.
unsafe fn close_all_but(a: c_int, b: c_int) {
    let (low, high) = if a <= b { (a, b) } else { (b, a) };
    let mut next: libc::c_uint = 0;
    for keep in [low, high] {
        let Ok(keep) = libc::c_uint::try_from(keep) else {
            continue;
        };
        if keep > next {
            // SAFETY: a plain system call on integers.
            unsafe { libc::syscall(libc::SYS_close_range, next, keep - 1, 0u32) };
        }
        next = keep.saturating_add(1).max(next);
    }
    // SAFETY: as above.
    unsafe { libc::syscall(libc::SYS_close_range, next, libc::c_uint::MAX, 0u32) };
}

/// What a probe that entered the sandbox sends instead of a stage (stages start at 1).
const PROBE_OK: u8 = 0;

/// Forks a child that enters the sandbox described by `plan` and exits at once, and
/// reports the step that failed, if one did. Used once per Runtime to learn what the
/// kernel allows.
///
/// The answer comes through a pipe as soon as the child has entered (or failed to): the
/// probe's processes then end without being waited for here, because their end tears
/// down a PID, mount and network namespace, which waits for the kernel's RCU grace
/// periods (milliseconds, tens of them on a busy machine). A thread reaps the child.
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
            // The probe keeps nothing of its parent's but the answer pipe and the
            // ruleset: a descriptor another thread opened (a session's lock, say) must
            // not stay held while this child enters and tears down its namespaces.
            let landlock = plan.landlock.as_ref().map_or(-1, |fd| fd.as_raw_fd());
            close_all_but(wfd, landlock);
            let (msg, code) = match enter(plan, cwd) {
                Ok(()) => ([PROBE_OK, 0, 0, 0, 0], 0),
                Err(f) => {
                    let mut msg = [0u8; 5];
                    msg[0] = f.stage as u8;
                    msg[1..].copy_from_slice(&f.errno.to_le_bytes());
                    (msg, 1)
                }
            };
            libc::write(wfd, msg.as_ptr() as *const c_void, msg.len());
            libc::_exit(code);
        }
    }
    drop(write_end);
    let mut msg = [0u8; 5];
    let mut got = 0;
    let mut read_end = read_end;
    while got < msg.len() {
        use std::io::Read;
        match read_end.read(&mut msg[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                reap_in_background(pid);
                return Err(e);
            }
        }
    }
    if got == msg.len() {
        reap_in_background(pid);
        if msg[0] == PROBE_OK {
            return Ok(None);
        }
        let stage = Stage::from_u8(msg[0]).unwrap_or(Stage::Namespaces);
        let errno = i32::from_le_bytes([msg[1], msg[2], msg[3], msg[4]]);
        return Ok(Some(Failure { stage, errno }));
    }
    // No answer: every process of the probe ended before it could send one.
    wait_for(pid)?;
    Ok(Some(Failure {
        stage: Stage::Fork,
        errno: libc::ECHILD,
    }))
}

/// Waits for our child `pid` to end.
fn wait_for(pid: libc::pid_t) -> io::Result<()> {
    let mut status: c_int = 0;
    loop {
        // SAFETY: waiting for our own child into a stack variable.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return Ok(());
        }
        if r < 0 && errno() != libc::EINTR {
            return Err(io::Error::last_os_error());
        }
    }
}

/// Reaps the probe's child on a thread of its own, so that it does not stay a zombie
/// while the Runtime lives; without a thread, waits here.
fn reap_in_background(pid: libc::pid_t) {
    let spawned = std::thread::Builder::new()
        .name("sandbox-probe-reap".into())
        .spawn(move || wait_for(pid));
    if spawned.is_err() {
        let _ = wait_for(pid);
    }
}

/// Moves every environment variable to memory the C library allocates, so that the
/// initial environment block (what `/proc/PID/environ` shows) can be overwritten without
/// changing what the process and its children see.
///
/// # Safety
/// The process must be single-threaded: no other thread may read or write the
/// environment while this runs (`setenv` is not thread-safe, and a concurrent `getenv`
/// may read freed memory). Call it first thing in `main`, before anything starts a thread.
pub unsafe fn detach_environment() {
    let vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    for (k, v) in vars {
        // SAFETY: the caller guarantees the process is single-threaded, so no other
        // thread reads or writes the environment concurrently.
        unsafe { std::env::set_var(k, v) };
    }
}

/// Gives SIGPIPE its default action back (the Rust runtime ignores it), so a process
/// whose stdout is closed ends quietly. For commands that only print and exit.
pub fn default_sigpipe() {
    // SAFETY: setting a signal's disposition to SIG_DFL installs no handler and touches
    // no memory of ours; callers do it before starting threads.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
