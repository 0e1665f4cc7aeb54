//! Approval of a project's `.mcp.json`: a file in the repository can start programs, so
//! its servers start only after the user approved exactly that content. The approval is
//! the file's SHA-256, recorded beside the project's grants
//! (`SHARD_HOME/grants/<project hash>.mcp.json`, owner-only); a changed file asks again.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Hex SHA-256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The approval record of one project (its `.mcp.json`).
#[derive(Debug, Clone)]
pub struct Approvals {
    path: PathBuf,
}

/// The approval file cannot be read or written.
#[derive(Debug, thiserror::Error)]
#[error("MCP approval file {path}: {message}")]
pub struct ApprovalError {
    path: String,
    message: String,
}

impl Approvals {
    /// The record for the `.mcp.json` at `file` (keyed by the file's path, like grants by
    /// their project's).
    pub fn for_file(shard_home: &Path, file: &Path) -> Approvals {
        let digest = sha256_hex(file.display().to_string().as_bytes());
        Approvals {
            path: shard_home
                .join("grants")
                .join(format!("{}.mcp.json", &digest[..32])),
        }
    }

    /// The approved content hash, if any.
    pub fn approved(&self) -> Result<Option<String>, ApprovalError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.err(e.to_string())),
        };
        let v: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| self.err(e.to_string()))?;
        Ok(v.get("sha256").and_then(|s| s.as_str()).map(str::to_string))
    }

    /// True when `sha256` is the approved content.
    pub fn is_approved(&self, sha256: &str) -> bool {
        matches!(self.approved(), Ok(Some(h)) if h == sha256)
    }

    /// Records `sha256` as approved for `file` (atomic, owner-only).
    pub fn approve(&self, file: &Path, sha256: &str) -> Result<(), ApprovalError> {
        if let Some(dir) = self.path.parent() {
            shard_session::records::ensure_private_dir(dir).map_err(|e| self.err(e.to_string()))?;
        }
        let body = serde_json::json!({ "version": 1, "file": file, "sha256": sha256 });
        shard_session::records::atomic_write(&self.path, body.to_string().as_bytes())
            .map_err(|e| self.err(e.to_string()))
    }

    fn err(&self, message: String) -> ApprovalError {
        ApprovalError {
            path: self.path.display().to_string(),
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn approval_is_per_content_and_owner_only() {
        let home = tempfile::tempdir().unwrap();
        let file = Path::new("/repo/.mcp.json");
        let a = Approvals::for_file(home.path(), file);
        assert_eq!(a.approved().unwrap(), None);
        a.approve(file, &sha256_hex(b"one")).unwrap();
        assert!(a.is_approved(&sha256_hex(b"one")));
        assert!(!a.is_approved(&sha256_hex(b"two")));
        let mode = std::fs::metadata(&a.path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let other = Approvals::for_file(home.path(), Path::new("/other/.mcp.json"));
        assert!(!other.is_approved(&sha256_hex(b"one")));
    }
}
