//! Keeps provider keys out of reach of other processes of the same user (even root):
//! the process becomes non-dumpable (no `/proc/PID/mem`, no ptrace by the same user) and
//! the key bytes of its initial environment block — what `/proc/PID/environ` shows, to
//! root too — are overwritten once the keys have been moved to private memory.

use std::io;
use std::os::unix::fs::FileExt;

/// Variables treated as secrets besides the ones named by the configuration.
pub fn looks_secret(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    n.ends_with("_API_KEY")
        || n.ends_with("_KEY")
        || n.contains("TOKEN")
        || n.contains("SECRET")
        || n.contains("PASSWORD")
}

/// Start of process hardening: moves the environment to private memory (the C library
/// heap), so that the initial block can be overwritten later.
///
/// # Safety
/// The process must be single-threaded: it rewrites every environment variable, which
/// races with any other thread reading or writing the environment. Call it first thing
/// in `main`, before anything starts a thread (an async runtime, a logger with a worker).
///
/// Calling it without `unsafe` does not compile:
///
/// ```compile_fail,E0133
/// shard_sandbox::hardening::detach_environment();
/// ```
#[allow(unsafe_code)]
pub unsafe fn detach_environment() {
    // SAFETY: the caller guarantees the process is single-threaded.
    #[cfg(target_os = "linux")]
    unsafe {
        crate::sys::detach_environment()
    };
}

/// A closed stdout ends the process quietly (as `ls | head` does) instead of failing
/// every later write: SIGPIPE gets its default action back. Only for commands that print
/// and exit — a Runtime, the daemon or a client with child processes must keep it ignored.
pub fn quiet_on_closed_pipe() {
    #[cfg(target_os = "linux")]
    crate::sys::default_sigpipe();
}

/// Makes the process non-dumpable: other processes of the same user can no longer read
/// its memory or attach a debugger, and its `/proc/PID` files become root-owned.
pub fn set_non_dumpable() -> io::Result<()> {
    #[cfg(target_os = "linux")]
    nix::sys::prctl::set_dumpable(false).map_err(io::Error::from)?;
    Ok(())
}

/// Overwrites, in the initial environment block, the values of the variables that
/// [`looks_secret`] or `extra` names. Returns how many were overwritten.
///
/// Call [`detach_environment`] first: afterwards the process reads its environment from
/// elsewhere, so this changes only what `/proc/PID/environ` shows.
pub fn scrub_initial_environment(extra: &[String]) -> io::Result<usize> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    let (start, end) = env_bounds(&stat).ok_or_else(|| io::Error::other("no environ bounds"))?;
    if end <= start {
        return Ok(0);
    }
    let mem = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/proc/self/mem")?;
    let mut block = vec![0u8; (end - start) as usize];
    mem.read_exact_at(&mut block, start)?;
    let mut scrubbed = 0;
    let mut offset = 0usize;
    for entry in block.split(|&b| b == 0) {
        if let Some(eq) = entry.iter().position(|&b| b == b'=') {
            let name = String::from_utf8_lossy(&entry[..eq]);
            let value_len = entry.len() - eq - 1;
            if value_len > 0 && (looks_secret(&name) || extra.iter().any(|e| *e == name)) {
                let stars = vec![b'*'; value_len];
                mem.write_all_at(&stars, start + (offset + eq + 1) as u64)?;
                scrubbed += 1;
            }
        }
        offset += entry.len() + 1;
    }
    Ok(scrubbed)
}

/// `env_start` and `env_end` (fields 50 and 51) of `/proc/self/stat`.
fn env_bounds(stat: &str) -> Option<(u64, u64)> {
    // Fields resume after the command name's last ')' with field 3 (state).
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let start = fields.get(50 - 3)?.parse().ok()?;
    let end = fields.get(51 - 3)?.parse().ok()?;
    Some((start, end))
}

/// Everything at once, for a process that holds keys: detach must already have run.
/// Failures are logged, never fatal: the process still works, only less hardened.
pub fn harden(extra_secret_vars: &[String]) {
    if let Err(err) = set_non_dumpable() {
        tracing::warn!(%err, "cannot make the process non-dumpable");
    }
    if let Err(err) = scrub_initial_environment(extra_secret_vars) {
        tracing::warn!(%err, "cannot overwrite keys in the initial environment");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn secret_names() {
        assert!(looks_secret("ANTHROPIC_API_KEY"));
        assert!(looks_secret("GITHUB_TOKEN"));
        assert!(!looks_secret("PATH"));
        assert!(!looks_secret("HOME"));
    }

    #[test]
    fn bounds_are_read() {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
        let (s, e) = env_bounds(&stat).unwrap();
        assert!(e > s);
    }
}
