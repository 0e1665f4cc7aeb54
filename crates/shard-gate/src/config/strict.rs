//! Reading `SHARD_HOME/config.toml` strictly. A key the program does not know is a
//! mistake the user must hear about: an ignored `comand` in an allow rule silently turns
//! it into "allow every command". Every error names the file, the line and the key, on
//! one line, so the program can refuse to start with it.

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_path_to_error::Segment;

/// A configuration file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Invalid TOML, an unknown key, a value of the wrong type or a rule that is refused.
    #[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line of the offending key or table, when known.
        line: Option<usize>,
        /// What is wrong, naming the key and its section.
        message: String,
    },
}

/// Reads a configuration file; `None` when it does not exist (every section then takes
/// its default).
pub fn read(path: &Path) -> Result<Option<String>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Deserializes `text` (the content of `path`) into `T`, turning the TOML crate's spans
/// and serde's key path into `path:line: message`.
pub fn parse<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T, ConfigError> {
    let invalid = |span: Option<Range<usize>>, message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        line: span.map(|s| line_of(text, s.start)),
        message: message.replace('\n', " "),
    };
    let de =
        toml::Deserializer::parse(text).map_err(|e| invalid(e.span(), e.message().to_string()))?;
    serde_path_to_error::deserialize(de).map_err(|e| {
        let segments: Vec<&Segment> = e.path().iter().collect();
        invalid(e.inner().span(), describe(&segments, e.inner().message()))
    })
}

/// 1-based line number of byte `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Rewrites serde's message for the key at `path` in the words of a TOML file.
fn describe(path: &[&Segment], message: &str) -> String {
    let parent = &path[..path.len().saturating_sub(1)];
    if let Some(rest) = message.strip_prefix("unknown field `")
        && let Some((key, tail)) = rest.split_once('`')
    {
        return format!(
            "unknown key `{key}` {} ({})",
            location(parent),
            expected(tail)
        );
    }
    if let Some(rest) = message.strip_prefix("missing field `")
        && let Some((key, _)) = rest.split_once('`')
    {
        return format!("missing key `{key}` {}", location(path));
    }
    match path.last() {
        Some(Segment::Map { key }) => {
            format!("invalid `{key}` {}: {message}", location(parent))
        }
        _ => format!("{message} ({})", location(path)),
    }
}

/// `, expected one of `a`, `b`` → `expected one of: a, b`.
fn expected(tail: &str) -> String {
    let tail = tail.trim_start_matches(", ");
    if tail.starts_with("there are no fields") {
        return "this table takes no keys".to_string();
    }
    let names = match tail.strip_prefix("expected one of ") {
        Some(names) => names,
        None => match tail.strip_prefix("expected ") {
            Some(names) => names,
            None => return tail.to_string(),
        },
    };
    let names = names.replace('`', "").replace(" or ", ", ");
    if names.contains(", ") {
        format!("expected one of: {names}")
    } else {
        format!("expected: {names}")
    }
}

/// "at the top level", or "in [section]" / "in [[array.of.tables]]" for a key path.
fn location(path: &[&Segment]) -> String {
    if path.is_empty() {
        return "at the top level".to_string();
    }
    let keys = |segments: &[&Segment]| {
        segments
            .iter()
            .filter_map(|s| match s {
                Segment::Map { key } => Some(toml_key(key)),
                Segment::Enum { variant } => Some(toml_key(variant)),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(".")
    };
    match path.iter().rposition(|s| matches!(s, Segment::Seq { .. })) {
        None => format!("in [{}]", keys(path)),
        Some(i) if i + 1 == path.len() => format!("in [[{}]]", keys(&path[..i])),
        Some(i) => format!("in `{}` of [[{}]]", keys(&path[i + 1..]), keys(&path[..i])),
    }
}

/// A key as it would be written in a header: bare when TOML allows it, quoted otherwise.
fn toml_key(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if bare {
        key.to_string()
    } else {
        format!("{key:?}")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[derive(Debug, Deserialize, Default)]
    #[serde(default, deny_unknown_fields)]
    struct File {
        section: Section,
        list: Vec<Item>,
        named: BTreeMap<String, Item>,
    }

    #[derive(Debug, Deserialize, Default)]
    #[serde(default, deny_unknown_fields)]
    struct Section {
        count: u32,
    }

    #[derive(Debug, Deserialize, Default)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Item {
        name: String,
        #[serde(default)]
        inner: Option<Section>,
    }

    fn err(text: &str) -> String {
        parse::<File>(Path::new("/h/config.toml"), text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn unknown_keys_name_file_line_section_and_choices() {
        assert_eq!(
            err(
                "[section]\ncount = 1\n\n[[list]]\nname = \"a\"\n\n[[list]]\nname = \"b\"\nnmae = \"c\"\n"
            ),
            "/h/config.toml:9: unknown key `nmae` in [[list]] (expected one of: name, inner)"
        );
        assert_eq!(
            err("\nsectoin = 1\n"),
            "/h/config.toml:2: unknown key `sectoin` at the top level (expected one of: section, list, named)"
        );
        assert_eq!(
            err("[named.\"my host\"]\nname = \"x\"\nbad = 2\n"),
            "/h/config.toml:3: unknown key `bad` in [named.\"my host\"] (expected one of: name, inner)"
        );
        assert_eq!(
            err("[[list]]\nname = \"x\"\ninner = { count = 1, cuont = 2 }\n"),
            "/h/config.toml:3: unknown key `cuont` in `inner` of [[list]] (expected: count)"
        );
    }

    #[test]
    fn wrong_values_missing_keys_and_syntax_are_one_line_each() {
        assert_eq!(
            err("[section]\ncount = \"many\"\n"),
            "/h/config.toml:2: invalid `count` in [section]: invalid type: string \"many\", expected u32"
        );
        assert_eq!(
            err("[[list]]\n[[list]]\nname = \"x\"\n"),
            "/h/config.toml:1: missing key `name` in [[list]]"
        );
        let syntax = err("[section]\ncount = 1\n[list\n");
        assert!(syntax.starts_with("/h/config.toml:3: "), "{syntax}");
        assert!(!syntax.contains('\n'), "{syntax}");
    }

    #[test]
    fn valid_file_parses_and_missing_file_is_none() {
        let f: File = parse(Path::new("c.toml"), "[section]\ncount = 3\n").unwrap();
        assert_eq!(f.section.count, 3);
        let dir = std::env::temp_dir().join("shard-gate-no-such-dir-for-config");
        assert!(read(&dir.join("config.toml")).unwrap().is_none());
    }
}
