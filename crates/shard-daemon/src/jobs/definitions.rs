//! Finding the agent definition a task names (ARCHITECTURE §9); the file format is
//! `shard_protocol::definitions`, shared with the Runtime that lists them.

use std::path::Path;

use shard_protocol::ErrorCode;

use crate::reply::ProtocolError;

pub(crate) use shard_protocol::definitions::Definition;
use shard_protocol::definitions::{BUILT_IN, BUILT_IN_DESCRIPTION, parse};

/// Finds definition `name` (already checked to be a plain name): the project's file
/// first, then `SHARD_HOME`'s, then the built-in `general`.
pub(crate) async fn find(home: &Path, cwd: &Path, name: &str) -> Result<Definition, ProtocolError> {
    let file = format!("{name}.md");
    for path in [
        cwd.join(".shard/agents").join(&file),
        home.join("agents").join(&file),
    ] {
        match tokio::fs::read_to_string(&path).await {
            Ok(text) => return Ok(parse(&text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(ProtocolError::new(
                    ErrorCode::InvalidRequest,
                    format!("agent definition {} cannot be read: {e}", path.display()),
                ));
            }
        }
    }
    if name == BUILT_IN {
        return Ok(Definition {
            description: Some(BUILT_IN_DESCRIPTION.into()),
            ..Definition::default()
        });
    }
    Err(ProtocolError::new(
        ErrorCode::InvalidRequest,
        format!(
            "no agent definition {name:?} (.shard/agents/{name}.md or SHARD_HOME/agents/{name}.md)"
        ),
    ))
}
