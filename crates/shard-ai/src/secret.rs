//! The API key wrapper: it never prints, so a stray `{:?}` cannot leak it.

use std::fmt;

/// A provider credential. `Debug` and `Display` print `[redacted]`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// The key itself, only for building an HTTP header.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced by `[redacted]`; applied to all
    /// error text that may echo request data back (provider error bodies, client errors).
    pub fn scrub(&self, text: &str) -> String {
        if self.0.len() < 4 || !text.contains(self.0.as_str()) {
            return text.to_string();
        }
        text.replace(self.0.as_str(), "[redacted]")
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_prints() {
        let k = ApiKey::new("sk-secret-123");
        assert_eq!(format!("{k:?} {k}"), "[redacted] [redacted]");
        assert_eq!(k.scrub("bad key sk-secret-123!"), "bad key [redacted]!");
    }
}
