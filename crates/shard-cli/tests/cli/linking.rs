//! How `shard` is linked: packed relative relocations (`DT_RELR`) exactly when the host's
//! glibc can load them (crates/shard-cli/build.rs; docs/decisions.md, "Packed
//! relocations"). Read from the binary's own dynamic section, so the test fails if the
//! build script stops passing the flag, or passes it where the loader would refuse it.

use super::*;
use std::process::Command;

/// `DT_RELR` in the ELF dynamic section (glibc's `elf.h`).
const DT_RELR: u64 = 36;
const PT_DYNAMIC: u32 = 2;

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap())
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

/// Every tag of a little-endian ELF64 file's dynamic section.
fn dynamic_tags(elf: &[u8]) -> Vec<u64> {
    assert_eq!(&elf[..4], b"\x7fELF", "not an ELF file");
    assert_eq!(elf[4], 2, "not ELF64");
    assert_eq!(elf[5], 1, "not little-endian");
    let program_headers = u64_at(elf, 0x20) as usize;
    let entry_size = u16_at(elf, 0x36) as usize;
    let count = u16_at(elf, 0x38) as usize;
    let dynamic = (0..count)
        .map(|i| program_headers + i * entry_size)
        .find(|&header| u32_at(elf, header) == PT_DYNAMIC)
        .expect("a dynamically linked binary has PT_DYNAMIC");
    let offset = u64_at(elf, dynamic + 0x08) as usize;
    let size = u64_at(elf, dynamic + 0x20) as usize;
    elf[offset..offset + size]
        .chunks_exact(16)
        .map(|entry| u64_at(entry, 0))
        .take_while(|&tag| tag != 0)
        .collect()
}

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
fn the_binary_packs_its_relocations_exactly_when_the_host_glibc_loads_them() {
    let elf = std::fs::read(shard_bin()).unwrap();
    let tags = dynamic_tags(&elf);
    assert!(!tags.is_empty(), "an empty dynamic section: {tags:?}");
    let turned_off = std::env::var("SHARD_PACK_RELOCS").is_ok_and(|value| value == "0");
    let expected = cfg!(all(target_os = "linux", target_env = "gnu"))
        && !turned_off
        && host_glibc().is_some_and(|version| version >= (2, 36));
    assert_eq!(
        tags.contains(&DT_RELR),
        expected,
        "DT_RELR in {}; host glibc {:?}",
        shard_bin(),
        host_glibc()
    );
}
