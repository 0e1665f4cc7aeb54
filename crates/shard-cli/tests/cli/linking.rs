//! How `shard` is linked: packed relative relocations (`DT_RELR`) when the build script's
//! probe showed that the toolchain makes them and this system loads them
//! (crates/shard-cli/build.rs; docs/decisions.md, "Packed relocations where glibc loads
//! them"). Read from the binary's own dynamic section.

use super::*;
use std::process::Command;

#[path = "../../build/elf.rs"]
mod elf;

/// What the build script decided: "packed", or why not.
const DECISION: &str = env!("SHARD_PACK_RELOCS_DECISION");

/// The host's glibc as (major, minor), `None` where `getconf` does not name one.
fn host_glibc() -> Option<(u32, u32)> {
    let output = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let (major, minor) = text.trim().strip_prefix("glibc ")?.split_once('.')?;
    let minor: String = minor.chars().take_while(char::is_ascii_digit).collect();
    Some((major.parse().ok()?, minor.parse().ok()?))
}

#[test]
fn the_binary_is_packed_exactly_when_the_build_script_said_so_and_glibc_loads_it() {
    let tags = elf::dynamic_tags(&std::fs::read(shard_bin()).unwrap()).unwrap();
    let packed = tags.contains(&elf::DT_RELR);
    let glibc = host_glibc();
    let glibc_loads_packed = glibc.is_some_and(|version| version >= (2, 36));
    assert_eq!(
        packed,
        DECISION == "packed",
        "DT_RELR in {}: {packed}; the build script: {DECISION}",
        shard_bin()
    );
    if packed {
        assert!(
            glibc_loads_packed,
            "packed relocations, but this glibc ({glibc:?}) cannot load them"
        );
        // The binary that carries them really starts here.
        let version = Command::new(shard_bin()).arg("--version").output().unwrap();
        assert!(version.status.success(), "{version:?}");
    } else if glibc_loads_packed {
        skip::skip(&format!(
            "glibc {glibc:?} loads packed relocations, but the binary has none: {DECISION}"
        ));
    }
}
