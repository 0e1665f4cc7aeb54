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
pub(crate) fn serve() -> i32 {
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
    if let Err(f) = z::zygote_enter(&plan, runtime) {
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
    };
    reply(Ok(()));
    loop {
        let (n, fds) = match z::recv_with_fds(CONTROL_FD, &mut buf) {
            Ok((0, _)) => return 0,
            Ok(got) => got,
            // A message too large for the buffer was dropped whole; its descriptors
            // are closed, so the Runtime sees the call end.
            Err(err) if err.raw_os_error() == Some(libc::EMSGSIZE) => continue,
            Err(_) => return 1,
        };
        let Ok([stdin, stdout, stderr, channel]) = <[OwnedFd; 4]>::try_from(fds) else {
            continue;
        };
        let Some(msg) = wire::decode_call(&buf[..n]) else {
            z::write_record(
                std::os::fd::AsRawFd::as_raw_fd(&channel),
                &z::failure_record(Failure {
                    stage: Stage::Exec,
                    errno: libc::EINVAL,
                }),
            );
            continue;
        };
        let candidates = candidates(&msg.argv[0], &msg.envp);
        let call = z::Call {
            cwd: msg.cwd,
            candidates,
            argv: msg.argv,
            envp: msg.envp,
            stdio: [stdin, stdout, stderr],
            channel,
        };
        let channel = call.channel.try_clone();
        if let Err(err) = z::start_call(call, &confinement, &lifeline)
            && let Ok(channel) = channel
        {
            z::write_record(
                std::os::fd::AsRawFd::as_raw_fd(&channel),
                &z::failure_record(Failure {
                    stage: Stage::Exec,
                    errno: err.raw_os_error().unwrap_or(libc::EIO),
                }),
            );
        }
    }
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
