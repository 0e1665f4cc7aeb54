//! Helpers shared by the modules of the `protocol` integration test: loading the JSON
//! test vectors and naming the variants each vector exercises.

pub mod codec_cases;
pub mod coverage;
pub mod negative;
pub mod props;
pub mod schema_cases;
pub mod strategies;

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

/// One test vector: a wire message and where in the spec it comes from.
#[derive(Debug, Deserialize)]
pub struct Vector {
    /// What the vector shows, printed on failure.
    pub name: String,
    /// The spec section it was taken from.
    pub spec: String,
    /// For a `response`: the typed `data` struct of `shard_protocol::responses` it holds.
    #[serde(default)]
    pub data_type: Option<String>,
    /// The message.
    pub json: Value,
}

impl Vector {
    /// The message as one compact JSON line, the way it travels.
    pub fn line(&self) -> Vec<u8> {
        serde_json::to_vec(&self.json).unwrap()
    }

    /// `name (spec)`, for assertion messages.
    pub fn label(&self) -> String {
        format!("{} ({})", self.name, self.spec)
    }

    /// The wire `type` of the message.
    pub fn type_field(&self) -> &str {
        self.json["type"]
            .as_str()
            .unwrap_or_else(|| panic!("{}: no type", self.label()))
    }
}

/// The crate directory.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Loads `tests/vectors/<file>`.
pub fn load(file: &str) -> Vec<Vector> {
    let path = crate_dir().join("tests/vectors").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let vectors: Vec<Vector> =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(!vectors.is_empty(), "{} has no vectors", path.display());
    vectors
}

/// Command vectors.
pub fn commands() -> Vec<Vector> {
    load("commands.json")
}

/// Event vectors, the `response` vectors included.
pub fn events() -> Vec<Vector> {
    let mut v = load("events.json");
    v.extend(load("responses.json"));
    v
}
