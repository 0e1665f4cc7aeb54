//! Finding the agent definition a task names (docs/subagents.md); the file format is
//! `shard_protocol::definitions`, shared with the Runtime that lists them. Also the
//! narrowing every child gets from its parent (mode, tools), which both the handlers (at
//! acceptance) and the coordinator (as the child materializes) apply.

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

/// A child never exceeds its parent's mode. A parent in `build` (or with no mode: the
/// Runtime's default, which is `build`) may launch a child in any mode, since every other
/// mode only narrows `build`; a parent in any other mode (`plan`, or a configured mode
/// with its own tool list) gets children in exactly its own mode, because the daemon
/// cannot tell whether a different narrowing is narrower.
pub(super) fn child_mode(
    parent: Option<&str>,
    wanted: Option<&str>,
) -> Result<Option<String>, ProtocolError> {
    match (parent, wanted) {
        (None | Some("build"), m) => Ok(m.map(str::to_string)),
        (Some(p), None) => Ok(Some(p.to_string())),
        (Some(p), Some(w)) if p == w => Ok(Some(p.to_string())),
        (Some(p), Some(other)) => Err(ProtocolError::new(
            ErrorCode::PermissionDenied,
            format!("a parent in {p} mode cannot launch a child in {other} mode"),
        )),
    }
}

/// A child's tool allow-list: its definition's, narrowed to its parent's (`None` on
/// either side is no restriction from that side). Delegation never widens what the
/// parent was given.
pub(super) fn child_tools(
    definition: Option<Vec<String>>,
    parent: Option<&[String]>,
) -> Option<Vec<String>> {
    match (definition, parent) {
        (None, p) => p.map(<[String]>::to_vec),
        (Some(d), None) => Some(d),
        (Some(d), Some(p)) => Some(d.into_iter().filter(|t| p.contains(t)).collect()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|t| t.to_string()).collect()
    }

    #[test]
    fn a_child_gets_at_most_its_parents_tools() {
        let parent = v(&["read", "subagent"]);
        assert_eq!(
            child_tools(Some(v(&["bash", "read"])), Some(&parent)),
            Some(v(&["read"]))
        );
        assert_eq!(child_tools(None, Some(&parent)), Some(parent.clone()));
        assert_eq!(child_tools(Some(v(&["bash"])), None), Some(v(&["bash"])));
        assert_eq!(child_tools(Some(v(&["bash"])), Some(&parent)), Some(v(&[])));
        assert_eq!(child_tools(None, None), None);
    }

    #[test]
    fn a_child_is_never_in_a_looser_mode() {
        assert_eq!(
            child_mode(None, Some("plan")).unwrap().as_deref(),
            Some("plan")
        );
        assert_eq!(child_mode(Some("build"), None).unwrap(), None);
        assert_eq!(
            child_mode(Some("plan"), None).unwrap().as_deref(),
            Some("plan")
        );
        assert_eq!(
            child_mode(Some("docs"), None).unwrap().as_deref(),
            Some("docs")
        );
        assert_eq!(
            child_mode(Some("docs"), Some("docs")).unwrap().as_deref(),
            Some("docs")
        );
        for (parent, wanted) in [("plan", "build"), ("docs", "build"), ("docs", "plan")] {
            let e = child_mode(Some(parent), Some(wanted)).unwrap_err();
            assert_eq!(e.code, ErrorCode::PermissionDenied);
        }
    }
}
