//! A program that only serves as the sandbox zygote, for this crate's tests and
//! benchmarks (the `shard` binary serves as its own zygote).

#[allow(unsafe_code)]
fn main() -> std::process::ExitCode {
    // SAFETY: first thing in `main`, before anything starts a thread.
    match unsafe { shard_sandbox::zygote::main_if_asked() } {
        Some(code) => std::process::ExitCode::from(code.clamp(0, 255) as u8),
        None => std::process::ExitCode::from(2),
    }
}
