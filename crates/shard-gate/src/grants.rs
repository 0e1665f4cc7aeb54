//! Persisted `allow_always` grants (docs/architecture.md#the-permissiongate): per project (canonical cwd)
//! under `SHARD_HOME/grants/`, owner-only, versioned, updated under a lock (§16 item 12).
//! Matchers are registered by kind; a kind this build does not know never matches.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::signature::{self, CommandSignature};

const FORMAT_VERSION: u32 = 1;

/// One grant, tagged by kind. Unknown kinds are kept (so a newer build's grants survive
/// an update by this one) but never match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Grant {
    /// Same tool, same canonical arguments.
    Exact {
        /// Tool.
        tool: String,
        /// Canonical arguments.
        args: Value,
    },
    /// Every command of a `bash` call has one of these signatures. Only version 2 (the
    /// current [`signature::VERSION`]) matches; version 1 grants, which ignored
    /// subcommands and flags after `--`, are kept in the file but never match.
    BashSignature {
        /// Matcher version.
        version: u32,
        /// Allowed signatures.
        commands: Vec<CommandSignature>,
    },
    /// A kind from another build.
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct GrantFile {
    version: u32,
    cwd: String,
    #[serde(default)]
    grants: Vec<Value>,
}

/// The grants of one project.
#[derive(Debug, Clone)]
pub struct GrantStore {
    path: PathBuf,
    cwd: String,
    grants: Vec<Grant>,
}

/// A grant file that could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("grants file {path}: {message}")]
pub struct GrantError {
    path: String,
    message: String,
}

/// Sorts object keys recursively so that equal arguments compare equal.
pub fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, Value> =
                map.iter().map(|(k, v)| (k, canonical(v))).collect();
            Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

impl GrantStore {
    /// The store of the project at `cwd` (already canonical).
    pub fn open(shard_home: &Path, cwd: &Path) -> Result<GrantStore, GrantError> {
        let cwd_text = cwd.display().to_string();
        let digest = Sha256::digest(cwd_text.as_bytes());
        let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
        let path = shard_home.join("grants").join(format!("{hex}.json"));
        let mut store = GrantStore {
            path,
            cwd: cwd_text,
            grants: Vec::new(),
        };
        store.reload()?;
        Ok(store)
    }

    /// Re-reads the file (another Runtime of this project may have added grants).
    pub fn reload(&mut self) -> Result<(), GrantError> {
        self.grants = match std::fs::read(&self.path) {
            Ok(bytes) => parse(&bytes).map_err(|m| self.err(m))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(self.err(e.to_string())),
        };
        Ok(())
    }

    fn err(&self, message: impl Into<String>) -> GrantError {
        GrantError {
            path: self.path.display().to_string(),
            message: message.into(),
        }
    }

    /// True when a grant covers this call.
    pub fn matches(&self, tool: &str, args: &Value) -> bool {
        matches(&self.grants, tool, args)
    }

    /// The grants as last read.
    pub fn grants(&self) -> &[Grant] {
        &self.grants
    }

    /// Adds a grant durably: lock, re-read, add, write atomically.
    pub fn add(&mut self, grant: Grant) -> Result<(), GrantError> {
        let cwd = self.cwd.clone();
        let new = serde_json::to_value(&grant).map_err(|e| self.err(e.to_string()))?;
        if let Some(dir) = self.path.parent() {
            shard_session::records::ensure_private_dir(dir).map_err(|e| self.err(e.to_string()))?;
        }
        shard_session::records::locked_update(
            &self.path,
            |old: Option<Vec<u8>>| -> Result<Vec<u8>, shard_session::SessionError> {
                let mut file: GrantFile = match old {
                    Some(bytes) if !bytes.is_empty() => {
                        serde_json::from_slice(&bytes).map_err(|e| {
                            shard_session::SessionError::Corrupt(format!(
                                "unreadable grants file: {e}"
                            ))
                        })?
                    }
                    _ => GrantFile::default(),
                };
                file.version = FORMAT_VERSION;
                file.cwd = cwd;
                if !file.grants.contains(&new) {
                    file.grants.push(new);
                }
                serde_json::to_vec_pretty(&file)
                    .map_err(|e| shard_session::SessionError::Corrupt(e.to_string()))
            },
        )
        .map_err(|e| self.err(e.to_string()))?;
        self.reload()
    }
}

fn parse(bytes: &[u8]) -> Result<Vec<Grant>, String> {
    let file: GrantFile = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if file.version > FORMAT_VERSION {
        // A newer format: use nothing from it rather than misread it.
        return Ok(Vec::new());
    }
    Ok(file
        .grants
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap_or(Grant::Unknown))
        .collect())
}

/// True when one of `grants` covers this call: an exact grant with the same canonical
/// arguments, or a current-version signature grant covering every command of a `bash`
/// line that may be signed at all.
pub fn matches(grants: &[Grant], tool: &str, args: &Value) -> bool {
    let canon = canonical(args);
    let sigs = if tool == "bash" {
        args.get("command")
            .and_then(Value::as_str)
            .and_then(signature::signatures)
    } else {
        None
    };
    grants.iter().any(|g| match g {
        Grant::Exact { tool: t, args: a } => t == tool && *a == canon,
        Grant::BashSignature { version, commands } => {
            *version == signature::VERSION
                && sigs
                    .as_ref()
                    .is_some_and(|s| s.iter().all(|sig| commands.contains(sig)))
        }
        Grant::Unknown => false,
    })
}

/// The signature grant for a `bash` command, when the command may be signed.
pub fn signature_grant(command: &str) -> Option<Grant> {
    signature::signatures(command).map(|commands| Grant::BashSignature {
        version: signature::VERSION,
        commands,
    })
}
