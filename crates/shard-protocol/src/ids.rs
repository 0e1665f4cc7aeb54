//! Opaque ids (docs/protocol.md §16 item 4): a prefix, `-`, then 26 Crockford base32
//! characters, time-ordered like a ULID (48 bits of milliseconds, 80 random bits).
//! Every id is validated before it touches a file path.

use std::time::{SystemTime, UNIX_EPOCH};

const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Prefix of agent ids.
pub const AGENT: &str = "agent";
/// Prefix of session ids.
pub const SESSION: &str = "sess";
/// Prefix of job ids.
pub const JOB: &str = "job";
/// Prefix of run ids.
pub const RUN: &str = "run";
/// Prefix of workspace ids.
pub const WORKSPACE: &str = "ws";
/// Prefix of fork ids.
pub const FORK: &str = "fork";
/// Prefix of permission and UI request ids (random, never a counter).
pub const REQUEST: &str = "req";
/// Prefix of session entry ids (and so of message ids).
pub const ENTRY: &str = "ent";
/// Prefix of turn ids.
pub const TURN: &str = "turn";

/// A fresh id with the given prefix.
pub fn new_id(prefix: &str) -> String {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let mut random = [0u8; 10];
    if getrandom::fill(&mut random).is_err() {
        // Without an entropy source, fall back to the clock's sub-millisecond bits
        // mixed with the address of a stack value; ids stay unique enough to be
        // non-colliding within one process, which is all the fallback must give.
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let bytes = nanos.to_le_bytes();
        random.copy_from_slice(&bytes[..10]);
    }
    let mut value: u128 = (u128::from(millis) & 0xFFFF_FFFF_FFFF) << 80;
    for (i, b) in random.iter().enumerate() {
        value |= u128::from(*b) << (8 * (9 - i));
    }
    let mut out = String::with_capacity(prefix.len() + 27);
    out.push_str(prefix);
    out.push('-');
    for i in (0..26).rev() {
        let idx = ((value >> (5 * i)) & 0x1F) as usize;
        out.push(ALPHABET[idx] as char);
    }
    out
}

/// True when `id` is `prefix-` followed by exactly 26 Crockford base32 characters.
pub fn is_valid(prefix: &str, id: &str) -> bool {
    let Some(rest) = id.strip_prefix(prefix).and_then(|r| r.strip_prefix('-')) else {
        return false;
    };
    rest.len() == 26 && rest.bytes().all(|b| ALPHABET.contains(&b))
}

/// Milliseconds since the Unix epoch, as ids and records use.
pub fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_ids_validate_and_differ() {
        let a = new_id(AGENT);
        let b = new_id(AGENT);
        assert!(is_valid(AGENT, &a), "{a}");
        assert_ne!(a, b);
        assert!(!is_valid(SESSION, &a));
    }

    #[test]
    fn rejects_path_tricks() {
        assert!(!is_valid(SESSION, "sess-../../etc/passwd"));
        assert!(!is_valid(SESSION, "sess-0123456789ABCDEFGHJKMNPQR/"));
        assert!(!is_valid(SESSION, "sess-0123456789abcdefghjkmnpqrs"));
        assert!(is_valid(SESSION, "sess-0123456789ABCDEFGHJKMNPQRS"));
    }

    #[test]
    fn time_ordered_across_milliseconds() {
        let a = new_id(RUN);
        std::thread::sleep(std::time::Duration::from_millis(3));
        let b = new_id(RUN);
        assert!(a[..14] < b[..14], "{a} {b}");
    }
}
