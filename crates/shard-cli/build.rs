//! Links `shard` with packed relative relocations (`DT_RELR`) where the toolchain makes
//! them and the C library that will load the binary understands them.
//!
//! Why: a position-independent Rust binary carries tens of thousands of relative
//! relocations (vtables, tables of string slices) that the dynamic loader reads and applies
//! at every start. As `RELA` entries they are 24 bytes each, a megabyte here, all read
//! before `main`; packed they are a few kilobytes. The e2e task's peak RSS falls by 0.5–2.5
//! MB (docs/performance.md, "Packed relocations").
//!
//! When: glibc loads `DT_RELR` from 2.36 on and refuses, by a version check, a binary that
//! asks for it on an older glibc; the gold linker rejects the flag outright. So it is passed
//! only for a native Linux/glibc build, and only after a small program with relative
//! relocations, built by the same `rustc`, flags and linker with the flag added, has linked
//! and run here. The binary is then loaded by this glibc or a newer one (a binary linked
//! here already needs the host's glibc symbol versions). `SHARD_PACK_RELOCS=0` turns it off,
//! for a binary meant for an older system. Anything that fails leaves the link as it was:
//! this is an optimisation, never a reason for a build to fail.
//!
//! The decision reaches the crate's tests as `SHARD_PACK_RELOCS_DECISION` ("packed", or why
//! not), so `tests/cli/linking.rs` checks the binary against it.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[path = "build/elf.rs"]
mod elf;

const FLAG: &str = "-Wl,-z,pack-relative-relocs";

/// A program with relative relocations (a table of string slices in a position-independent
/// executable): a loader that cannot apply them fails it or refuses to load it.
const PROBE: &str = r#"
static WORDS: [&str; 3] = ["packed", "relative", "relocations"];
fn main() {
    let i = std::hint::black_box(2);
    std::process::exit(if WORDS[i].len() == 11 { 0 } else { 1 });
}
"#;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SHARD_PACK_RELOCS");
    let decision = match decide() {
        Ok(()) => {
            println!("cargo:rustc-link-arg-bins={FLAG}");
            "packed".to_string()
        }
        Err(why) => why,
    };
    println!("cargo:rustc-env=SHARD_PACK_RELOCS_DECISION={decision}");
}

/// `Ok` when the flag is to be passed, else why not.
fn decide() -> Result<(), String> {
    if env::var("SHARD_PACK_RELOCS").is_ok_and(|value| value == "0") {
        return Err("turned off by SHARD_PACK_RELOCS=0".into());
    }
    let target = env::var("TARGET").map_err(|_| "no TARGET".to_string())?;
    let host = env::var("HOST").map_err(|_| "no HOST".to_string())?;
    let glibc = env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux")
        && env::var("CARGO_CFG_TARGET_ENV").is_ok_and(|target_env| target_env == "gnu");
    if !glibc {
        return Err(format!("target {target} is not Linux with glibc"));
    }
    if target != host {
        return Err(format!("a cross build ({host} → {target})"));
    }
    let out_dir = env::var_os("OUT_DIR").ok_or("no OUT_DIR")?;
    probe(Path::new(&out_dir), &target)
}

/// Builds [`PROBE`] with the flag the way cargo builds `shard`, then runs it.
fn probe(out_dir: &Path, target: &str) -> Result<(), String> {
    let source = out_dir.join("relr_probe.rs");
    let program: PathBuf = out_dir.join("relr_probe");
    fs::write(&source, PROBE).map_err(|e| format!("cannot write the probe: {e}"))?;
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let mut build = Command::new(rustc);
    if let Ok(flags) = env::var("CARGO_ENCODED_RUSTFLAGS") {
        build.args(flags.split('\u{1f}').filter(|flag| !flag.is_empty()));
    }
    if let Some(linker) = env::var_os("RUSTC_LINKER") {
        let mut arg = std::ffi::OsString::from("-Clinker=");
        arg.push(linker);
        build.arg(arg);
    }
    build
        .args([
            "--edition=2021",
            "--crate-type=bin",
            "-Copt-level=0",
            "-Cdebuginfo=0",
        ])
        .args(["--target", target])
        .arg(format!("-Clink-arg={FLAG}"))
        .arg("-o")
        .arg(&program)
        .arg(&source)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let built = build
        .status()
        .map_err(|e| format!("cannot run rustc for the probe: {e}"))?;
    if !built.success() {
        return Err("the linker refused -z pack-relative-relocs".into());
    }
    let image = fs::read(&program).map_err(|e| format!("cannot read the probe: {e}"))?;
    if !elf::dynamic_tags(&image)?.contains(&elf::DT_RELR) {
        return Err("the linker ignored -z pack-relative-relocs".into());
    }
    let ran = Command::new(&program)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("the probe did not start: {e}"))?;
    if !ran.success() {
        return Err("this system's loader does not run a binary with packed relocations".into());
    }
    Ok(())
}
