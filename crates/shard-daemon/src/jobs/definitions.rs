//! Agent definitions (ARCHITECTURE §9): `general` is built in; others are Markdown files
//! `.shard/agents/NAME.md` in the project or `SHARD_HOME/agents/NAME.md`, with front
//! matter (`description`, `tools`, `model`, `mode`) and the system prompt as body — the
//! format of Claude Code's `.claude/agents/*.md`, so those files can be pointed at.

use std::path::Path;

use shard_protocol::ErrorCode;

use crate::reply::ProtocolError;

/// One definition as the coordinator uses it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Definition {
    /// `description:`, shown as the run's display name.
    pub description: Option<String>,
    /// `tools:` (comma-separated or a `[a, b]` list).
    pub tools: Option<Vec<String>>,
    /// `model:`.
    pub model: Option<String>,
    /// `mode:`.
    pub mode: Option<String>,
    /// The body: the child's system prompt.
    pub prompt: String,
}

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
    if name == "general" {
        return Ok(Definition {
            description: Some("General-purpose agent".into()),
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

/// Parses front matter (`---` lines around `key: value` pairs) and body.
pub(crate) fn parse(text: &str) -> Definition {
    let mut def = Definition::default();
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"));
    let Some(rest) = rest else {
        def.prompt = text.trim().to_string();
        return def;
    };
    let (front, body) = match rest.find("\n---") {
        Some(i) => {
            let after = &rest[i + 4..];
            (&rest[..i], after.split_once('\n').map_or("", |(_, b)| b))
        }
        None => (rest, ""),
    };
    for line in front.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim().trim_matches('"').trim_matches('\'').trim();
        if v.is_empty() {
            continue;
        }
        match k.trim() {
            "description" => def.description = Some(v.to_string()),
            "model" if v != "inherit" => def.model = Some(v.to_string()),
            "mode" => def.mode = Some(v.to_string()),
            "tools" => {
                let list = v.trim_start_matches('[').trim_end_matches(']');
                def.tools = Some(
                    list.split(',')
                        .map(|t| t.trim().trim_matches('"').to_lowercase())
                        .filter(|t| !t.is_empty())
                        .collect(),
                );
            }
            _ => {}
        }
    }
    def.prompt = body.trim().to_string();
    def
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_claude_code_style_files() {
        let d = parse(
            "---\nname: reviewer\ndescription: Reviews diffs\ntools: read, grep\nmodel: inherit\n---\nYou review.\n",
        );
        assert_eq!(d.description.as_deref(), Some("Reviews diffs"));
        assert_eq!(d.tools, Some(vec!["read".to_string(), "grep".to_string()]));
        assert_eq!(d.model, None);
        assert_eq!(d.prompt, "You review.");
        assert_eq!(parse("just a prompt").prompt, "just a prompt");
    }
}
