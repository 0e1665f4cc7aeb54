//! Links `shard` with packed relative relocations (`DT_RELR`) where the C library that
//! will load it understands them.
//!
//! Why: a position-independent Rust binary carries tens of thousands of relative
//! relocations (vtables, string tables) that the dynamic loader reads and applies at every
//! start. As `RELA` entries they are 24 bytes each, over a megabyte here, all read before
//! `main`; packed they are a few kilobytes. The e2e task's peak RSS falls by ~3 MB (see
//! docs/performance.md, "Packed relocations").
//!
//! When: glibc loads `DT_RELR` from 2.36 on, and refuses a binary that asks for it on an
//! older glibc. So the flag is passed only for a native Linux/glibc build whose host glibc is
//! 2.36 or newer, since the binary is then loaded by that glibc or a newer one (a binary
//! linked here already needs the host's glibc symbol versions). `SHARD_PACK_RELOCS=0`
//! turns it off, for a binary meant for an older system. Anything not recognised leaves the
//! link as it was: this is an optimisation, never a reason for a build to fail.

use std::env;
use std::process::Command;

/// The first glibc whose loader applies `DT_RELR` relocations.
const RELR_SINCE: (u32, u32) = (2, 36);

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SHARD_PACK_RELOCS");
    if env::var("SHARD_PACK_RELOCS").is_ok_and(|value| value == "0") {
        return;
    }
    if !native_glibc_target() {
        return;
    }
    match host_glibc_version() {
        Some(version) if version >= RELR_SINCE => {
            println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
        }
        _ => {}
    }
}

/// True when the binary is built for Linux with glibc on the machine that builds it, so the
/// host's glibc is the one (or older than the one) that will load it.
fn native_glibc_target() -> bool {
    let target_is_glibc = env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux")
        && env::var("CARGO_CFG_TARGET_ENV").is_ok_and(|target_env| target_env == "gnu");
    let native = match (env::var("TARGET"), env::var("HOST")) {
        (Ok(target), Ok(host)) => target == host,
        _ => false,
    };
    target_is_glibc && native
}

/// The host's glibc as (major, minor), from `getconf GNU_LIBC_VERSION` ("glibc 2.36").
fn host_glibc_version() -> Option<(u32, u32)> {
    let output = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    parse_glibc_version(&String::from_utf8_lossy(&output.stdout))
}

fn parse_glibc_version(text: &str) -> Option<(u32, u32)> {
    let version = text.trim().strip_prefix("glibc ")?;
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor: String = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((major, minor.parse().ok()?))
}
