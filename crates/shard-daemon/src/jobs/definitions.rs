//! Finding the agent definition a task names (ARCHITECTURE §9); the file format is
//! `shard_protocol::definitions`, shared with the Runtime that lists them.

use std::path::Path;

use shard_protocol::ErrorCode;

use crate::reply::ProtocolError;

pub(crate) use shard_protocol::definitions::Definition;
use shard_protocol::definitions::{BUILT_IN, BUILT_IN_DESCRIPTION, is_valid_name, parse};

/// Finds definition `name`: the project's file first, then `SHARD_HOME`'s, then the
/// built-in `general`; `None` when nothing matches. Only a plain file-name stem is looked
/// up on disk; any other name (a label with spaces, say) matches nothing.
pub(crate) async fn find(
    home: &Path,
    cwd: &Path,
    name: &str,
) -> Result<Option<Definition>, ProtocolError> {
    if !is_valid_name(name) {
        return Ok(None);
    }
    let file = format!("{name}.md");
    for path in [
        cwd.join(".shard/agents").join(&file),
        home.join("agents").join(&file),
    ] {
        match tokio::fs::read_to_string(&path).await {
            Ok(text) => return Ok(Some(parse(&text))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(ProtocolError::new(
                    ErrorCode::InvalidRequest,
                    format!("agent definition {} cannot be read: {e}", path.display()),
                ));
            }
        }
    }
    Ok((name == BUILT_IN).then(general))
}

/// The built-in `general` definition.
pub(crate) fn general() -> Definition {
    Definition {
        description: Some(BUILT_IN_DESCRIPTION.into()),
        ..Definition::default()
    }
}
