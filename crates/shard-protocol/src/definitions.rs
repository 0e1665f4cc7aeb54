//! Agent definition files (docs/subagents.md): `general` is built in; others are Markdown
//! files `.shard/agents/NAME.md` in the project or `SHARD_HOME/agents/NAME.md`, with front
//! matter (`description`, `tools`, `model`, `mode`) and the system prompt as body — the
//! format of Claude Code's `.claude/agents/*.md`, so those files can be pointed at. Shared
//! here because two programs read them: the daemon launches children from them and the
//! Runtime lists them in its `subagent` tool's description.

use std::path::Path;

/// The definition every daemon has without a file.
pub const BUILT_IN: &str = "general";

/// The built-in definition's description.
pub const BUILT_IN_DESCRIPTION: &str = "General-purpose agent";

/// One parsed definition file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Definition {
    /// `description:`, shown as the run's display name.
    pub description: Option<String>,
    /// `tools:` (comma-separated or a `[a, b]` list), lower-cased.
    pub tools: Option<Vec<String>>,
    /// `model:` (`inherit` reads as none).
    pub model: Option<String>,
    /// `mode:`.
    pub mode: Option<String>,
    /// The body: the child's system prompt.
    pub prompt: String,
}

/// True for a usable definition name: 1-64 of `[A-Za-z0-9_-]`, so never a path.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Parses front matter (`---` lines around `key: value` pairs) and body.
pub fn parse(text: &str) -> Definition {
    let mut def = Definition::default();
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"));
    let Some(rest) = rest else {
        def.prompt = text.trim().to_string();
        return def;
    };
    // Where the closing `---` starts; at 0 when the front matter is empty.
    let close = if rest.starts_with("---") {
        Some(0)
    } else {
        rest.find("\n---").map(|i| i + 1)
    };
    let (front, body) = match close {
        Some(i) => {
            let after = &rest[i + 3..];
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

/// A definition as a list shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefinitionSummary {
    /// The name a task gives (`name`).
    pub name: String,
    /// Its description, if it has one.
    pub description: Option<String>,
}

/// Every definition available to an agent in `cwd`, sorted by name: the project's files,
/// then `home`'s not shadowed by them, then `general` unless a file replaces it.
/// Unreadable files and invalid names are skipped (launching one reports the error).
/// Blocking: reads two directories.
pub fn list_blocking(home: &Path, cwd: &Path) -> Vec<DefinitionSummary> {
    let mut out: Vec<DefinitionSummary> = Vec::new();
    for dir in [cwd.join(".shard/agents"), home.join("agents")] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut found: Vec<_> = entries
            .flatten()
            .filter_map(|e| {
                let path = e.path();
                let name = path
                    .extension()
                    .is_some_and(|x| x == "md")
                    .then(|| path.file_stem()?.to_str().map(str::to_string))??;
                is_valid_name(&name).then_some((name, path))
            })
            .collect();
        found.sort();
        for (name, path) in found {
            if out.iter().any(|d| d.name == name) {
                continue;
            }
            if let Ok(text) = std::fs::read_to_string(&path) {
                out.push(DefinitionSummary {
                    name,
                    description: parse(&text).description,
                });
            }
        }
    }
    if !out.iter().any(|d| d.name == BUILT_IN) {
        out.push(DefinitionSummary {
            name: BUILT_IN.to_string(),
            description: Some(BUILT_IN_DESCRIPTION.to_string()),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
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
        let empty = parse("---\n---\nOnly a body.\n");
        assert_eq!(empty.prompt, "Only a body.");
        assert_eq!(empty.description, None);
    }

    #[test]
    fn lists_project_then_home_then_the_built_in() {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let p = cwd.path().join(".shard/agents");
        let h = home.path().join("agents");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::create_dir_all(&h).unwrap();
        std::fs::write(
            p.join("reviewer.md"),
            "---\ndescription: Project reviewer\n---\nx",
        )
        .unwrap();
        std::fs::write(
            h.join("reviewer.md"),
            "---\ndescription: Home reviewer\n---\nx",
        )
        .unwrap();
        std::fs::write(h.join("tester.md"), "Runs tests.").unwrap();
        std::fs::write(h.join("bad name.md"), "x").unwrap();
        std::fs::write(h.join("notes.txt"), "x").unwrap();
        let l = list_blocking(home.path(), cwd.path());
        let names: Vec<_> = l.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["general", "reviewer", "tester"]);
        assert_eq!(l[1].description.as_deref(), Some("Project reviewer"));
        assert_eq!(l[2].description, None);
    }
}
