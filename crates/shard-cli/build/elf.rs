//! Just enough of ELF64 to list a binary's dynamic-section tags: the build script checks
//! that its probe really came out packed, and `tests/cli/linking.rs` checks `shard`.

/// `DT_RELR`: packed relative relocations (glibc's `elf.h`).
pub const DT_RELR: u64 = 36;

const PT_DYNAMIC: u32 = 2;

fn bytes<const N: usize>(elf: &[u8], at: usize) -> Result<[u8; N], String> {
    elf.get(at..at.checked_add(N).ok_or("offset overflows")?)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| format!("truncated ELF file (offset {at})"))
}

fn u16_at(elf: &[u8], at: usize) -> Result<u16, String> {
    Ok(u16::from_le_bytes(bytes(elf, at)?))
}

fn u32_at(elf: &[u8], at: usize) -> Result<u32, String> {
    Ok(u32::from_le_bytes(bytes(elf, at)?))
}

fn usize_at(elf: &[u8], at: usize) -> Result<usize, String> {
    usize::try_from(u64::from_le_bytes(bytes(elf, at)?)).map_err(|e| e.to_string())
}

/// Every tag of a little-endian ELF64 file's dynamic section, in order, up to `DT_NULL`.
pub fn dynamic_tags(elf: &[u8]) -> Result<Vec<u64>, String> {
    if elf.get(..6) != Some(b"\x7fELF\x02\x01".as_slice()) {
        return Err("not a little-endian ELF64 file".into());
    }
    let headers = usize_at(elf, 0x20)?;
    let entry_size = usize::from(u16_at(elf, 0x36)?);
    let count = usize::from(u16_at(elf, 0x38)?);
    let mut dynamic = None;
    for i in 0..count {
        let header = i
            .checked_mul(entry_size)
            .and_then(|at| at.checked_add(headers))
            .ok_or("program headers out of range")?;
        if u32_at(elf, header)? == PT_DYNAMIC {
            dynamic = Some(header);
            break;
        }
    }
    let dynamic = dynamic.ok_or("no dynamic section (a static binary)")?;
    let offset = usize_at(elf, dynamic + 0x08)?;
    let end = offset
        .checked_add(usize_at(elf, dynamic + 0x20)?)
        .ok_or("dynamic section out of range")?;
    let mut tags = Vec::new();
    for entry in (offset..end).step_by(16) {
        let tag = u64::from_le_bytes(bytes(elf, entry)?);
        if tag == 0 {
            break;
        }
        tags.push(tag);
    }
    Ok(tags)
}
