//! The zygote process: enters the sandbox's namespaces once, then forks each call into
//! its own mount and PID namespace until the Runtime closes the control socket.

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;

use super::wire;
use crate::sys::zygote::{self as z, CONTROL_FD, Confinement};
use crate::sys::{Failure, Stage};

/// Largest message: a call's arguments and environment (the kernel's limit on one argument
/// is 128 KiB, so a larger call fails at `exec` anyway).
pub(crate) const MAX_MESSAGE: usize = 1 << 20;

/// The zygote's life; returns the process's exit code.
///
/// # Safety
/// The process must be the zygote (started by the sandbox with its control socket on
/// [`CONTROL_FD`]) and single-threaded: it enters namespaces and clones calls with a raw
/// `clone` (see [`z::start_call`]).
#[allow(unsafe_code)]
pub(crate) unsafe fn serve() -> i32 {
    if !z::zygote_begin() {
        return 1;
    }
    let mut buf = vec![0u8; MAX_MESSAGE];
    let Ok((n, fds)) = z::recv_with_fds(CONTROL_FD, &mut buf) else {
        return 1;
    };
    if n == 0 {
        return 0;
    }
    let Some((runtime, plan)) = wire::decode_plan(&buf[..n], fds) else {
        reply(Err(Failure {
            stage: Stage::Namespaces,
            errno: libc::EINVAL,
        }));
        return 1;
    };
    // SAFETY: the caller guarantees this is the single-threaded zygote.
    if let Err(f) = unsafe { z::zygote_enter(&plan, runtime) } {
        reply(Err(f));
        return 1;
    }
    let lifeline = match z::lifeline() {
        Ok(l) => l,
        Err(err) => {
            reply(Err(Failure {
                stage: Stage::Fork,
                errno: err.raw_os_error().unwrap_or(libc::EIO),
            }));
            return 1;
        }
    };
    let confinement = Confinement {
        proc_mount: plan.proc_mount,
        last_cap: plan.last_cap,
        landlock: plan.landlock,
        git: plan.git,
    };
    reply(Ok(()));
    // SAFETY: still the single-threaded zygote.
    unsafe { offer_slot(&confinement, &lifeline) };
    loop {
        let (n, fds) = match z::recv_with_fds(CONTROL_FD, &mut buf) {
            Ok((0, _)) => return 0,
            Ok(got) => got,
            // A message too large for the buffer was dropped whole; its descriptors
            // are closed, so the Runtime sees the call end.
            Err(err) if err.raw_os_error() == Some(libc::EMSGSIZE) => continue,
            Err(_) => return 1,
        };
        if fds.is_empty() && n == z::RECORD && buf[0] == b'N' {
            // The Runtime used a slot: prepare the next one.
            // SAFETY: still the single-threaded zygote.
            unsafe { offer_slot(&confinement, &lifeline) };
            continue;
        }
        let Ok([stdin, stdout, stderr, channel]) = <[OwnedFd; 4]>::try_from(fds) else {
            continue;
        };
        let Some(call) = decode_slot_call(&buf[..n], vec![stdin, stdout, stderr], channel) else {
            continue;
        };
        // SAFETY: still the single-threaded zygote.
        if let Err(err) = unsafe { z::start_call(&call, &confinement, &lifeline) } {
            z::write_record(
                std::os::fd::AsRawFd::as_raw_fd(&call.channel),
                &z::failure_record(Failure {
                    stage: Stage::Exec,
                    errno: err.raw_os_error().unwrap_or(libc::EIO),
                }),
            );
        }
    }
}

/// Prepares a slot (a call's init waiting for its call) and offers it to the Runtime: an
/// `O` record with the init's pid and the slot's socket. A slot that cannot be made is
/// only a missed optimisation: calls then come through the control socket.
///
/// # Safety
/// Only in the single-threaded zygote (see [`z::start_slot`]).
#[allow(unsafe_code)]
unsafe fn offer_slot(confinement: &Confinement, lifeline: &z::Lifeline) {
    // SAFETY: the caller guarantees this is the single-threaded zygote.
    let slot = unsafe { z::start_slot(confinement, lifeline, decode_slot_call, MAX_MESSAGE) };
    if let Ok((pid, socket)) = slot {
        let mut rec = [0u8; z::RECORD];
        rec[0] = b'O';
        rec[4..].copy_from_slice(&pid.to_le_bytes());
        let _ = z::send_with_fds(
            CONTROL_FD,
            &rec,
            &[std::os::fd::AsRawFd::as_raw_fd(&socket)],
        );
    }
}

/// A call request and its standard descriptors, with `channel`, as a [`z::Call`]; an
/// invalid request is reported on the channel.
fn decode_slot_call(buf: &[u8], stdio: Vec<OwnedFd>, channel: OwnedFd) -> Option<z::Call> {
    let invalid = |channel: &OwnedFd| {
        z::write_record(
            std::os::fd::AsRawFd::as_raw_fd(channel),
            &z::failure_record(Failure {
                stage: Stage::Exec,
                errno: libc::EINVAL,
            }),
        );
    };
    let (Ok(stdio), Some(msg)) = (<[OwnedFd; 3]>::try_from(stdio), wire::decode_call(buf)) else {
        invalid(&channel);
        return None;
    };
    let candidates = candidates(&msg.argv[0], &msg.envp);
    Some(z::Call {
        cwd: msg.cwd,
        candidates,
        argv: msg.argv,
        envp: msg.envp,
        stdio,
        channel,
    })
}

/// The setup's answer: `R` (ready) or a failure record.
fn reply(result: Result<(), Failure>) {
    let rec = match result {
        Ok(()) => {
            let mut r = [0u8; z::RECORD];
            r[0] = b'R';
            r
        }
        Err(f) => z::failure_record(f),
    };
    let _ = z::send_with_fds(CONTROL_FD, &rec, &[]);
}

/// Where `exec` looks for `program`: itself when it holds a slash, else each `PATH`
/// entry of the call's environment (the default search path without one).
fn candidates(program: &CString, envp: &[CString]) -> Vec<CString> {
    let name = program.as_bytes();
    if name.contains(&b'/') {
        return vec![program.clone()];
    }
    let path = envp
        .iter()
        .find_map(|e| e.as_bytes().strip_prefix(b"PATH="))
        .unwrap_or(b"/usr/local/bin:/usr/bin:/bin");
    path.split(|&b| b == b':')
        .map(|dir| {
            let dir = if dir.is_empty() { b"." as &[u8] } else { dir };
            let mut p = std::path::PathBuf::from(std::ffi::OsStr::from_bytes(dir));
            p.push(std::ffi::OsStr::from_bytes(name));
            p
        })
        .filter_map(|p| CString::new(p.as_os_str().as_bytes()).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn the_program_is_searched_in_the_calls_path() {
        let env = [CString::new("PATH=/a::/b").unwrap()];
        let got = candidates(&CString::new("bash").unwrap(), &env);
        let got: Vec<&[u8]> = got.iter().map(|c| c.as_bytes()).collect();
        assert_eq!(got, vec![&b"/a/bash"[..], b"./bash", b"/b/bash"]);
        let abs = candidates(&CString::new("/bin/sh").unwrap(), &env);
        assert_eq!(abs[0].as_bytes(), b"/bin/sh");
    }
}
