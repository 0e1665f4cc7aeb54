//! Random secrets and their hashes. Codes, cookies and tickets are 32 random bytes in
//! lowercase hex (URL-, cookie- and header-safe); the daemon keeps only their SHA-256, and
//! compares presented secrets with kept hashes in constant time.

use sha2::Digest;
use subtle::ConstantTimeEq;

use crate::error::WebError;

/// A SHA-256 digest of a secret: what the store and the in-memory tables keep.
pub type Digest32 = [u8; 32];

/// A fresh secret: 256 bits from the OS, as 64 hex characters.
pub fn new_secret() -> Result<String, WebError> {
    let mut raw = [0u8; 32];
    getrandom::fill(&mut raw).map_err(|e| WebError::Random(e.to_string()))?;
    Ok(to_hex(&raw))
}

/// SHA-256 of a secret.
pub fn hash(secret: &str) -> Digest32 {
    sha2::Sha256::digest(secret.as_bytes()).into()
}

/// True when `presented` hashes to `kept`, compared in constant time.
pub fn matches(presented: &str, kept: &Digest32) -> bool {
    hash(presented).ct_eq(kept).into()
}

/// True when a string could be one of our secrets (64 lowercase hex characters); anything
/// else is refused before it is hashed or looked up.
pub fn well_formed(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Lowercase hex of bytes.
pub fn to_hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(HEX[usize::from(b >> 4)] as char);
        s.push(HEX[usize::from(b & 15)] as char);
    }
    s
}

/// Parses 64 hex characters back into a digest (the store's on-disk form).
pub fn from_hex(s: &str) -> Option<Digest32> {
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, chunk) in s.as_bytes().chunks(2).enumerate() {
        let hi = (chunk[0] as char).to_digit(16)?;
        let lo = (chunk[1] as char).to_digit(16)?;
        out[i] = u8::try_from(hi * 16 + lo).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_fresh_well_formed_and_match_only_themselves() {
        let a = new_secret().unwrap();
        let b = new_secret().unwrap();
        assert_ne!(a, b);
        assert!(well_formed(&a));
        assert!(!well_formed("ABC"));
        assert!(!well_formed(&a.to_uppercase()));
        let h = hash(&a);
        assert!(matches(&a, &h));
        assert!(!matches(&b, &h));
        assert_eq!(from_hex(&to_hex(&h)), Some(h));
        assert_eq!(from_hex("zz"), None);
    }
}
