//! Small helpers shared by the tools.

use std::path::Path;

use crate::tool::ToolOutput;

/// Runs blocking file work off the async executor; a panic in it becomes an error result.
pub async fn blocking<F>(f: F) -> ToolOutput
where
    F: FnOnce() -> ToolOutput + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(out) => out,
        Err(err) => {
            tracing::error!(%err, "tool worker failed");
            ToolOutput::error(format!("internal error in the tool: {err}"))
        }
    }
}

/// Why a path tool refuses a file, when it has more than one name (hard links). The
/// PermissionGate judges a call by the path it names; a hard link inside the workspace
/// to a file elsewhere (a key under `~/.ssh`, a file a deny rule covers) would reach
/// that file under a name no rule covers, and no cheap way finds a file's other names.
/// So `read`, `write`, `edit` and `grep` never read or write through one; `bash` (asked
/// for, and sandboxed) can.
pub fn hard_linked(meta: &std::fs::Metadata, shown: &str) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    (meta.is_file() && meta.nlink() > 1).then(|| {
        format!(
            "{shown} has {} hard links; its other names may lie outside the workspace or \
             under a deny rule, so this tool does not read or write it. Ask for it with bash \
             if the user wants it.",
            meta.nlink()
        )
    })
}

/// Binary when the sample has a NUL byte (the rule git and ripgrep use).
pub fn sniff_binary(sample: &[u8]) -> bool {
    sample.contains(&0)
}

/// A language hint for a `code` render, from the file extension.
pub fn lang_for(path: &Path) -> Option<String> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    let lang = match ext.as_str() {
        "rs" => "rust",
        "py" => "python",
        "js" | "mjs" | "cjs" => "javascript",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "tsx",
        "jsx" => "jsx",
        "go" => "go",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" => "cpp",
        "java" => "java",
        "kt" => "kotlin",
        "rb" => "ruby",
        "sh" | "bash" => "bash",
        "toml" => "toml",
        "yaml" | "yml" => "yaml",
        "json" => "json",
        "md" => "markdown",
        "html" | "htm" => "html",
        "css" => "css",
        "sql" => "sql",
        "swift" => "swift",
        "lua" => "lua",
        "zig" => "zig",
        _ => return None,
    };
    Some(lang.to_string())
}

/// Cuts a string to at most `max` characters, marking the cut.
pub fn cut_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
