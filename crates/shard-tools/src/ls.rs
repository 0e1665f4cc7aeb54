//! `ls`: one directory's entries with kind and size, directories marked with `/`.

use std::fs::FileType;
use std::path::Path;

use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use shard_protocol::types::{PathKind, PathListEntry, RenderDescriptor};

use crate::paths;
use crate::tool::PathFilter;
use crate::tool::{ToolContext, ToolOutput};
use crate::typed::TypedTool;
use crate::util::blocking;

/// Default number of entries.
pub const DEFAULT_LIMIT: u64 = 500;

/// Arguments of `ls`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct LsArgs {
    /// Directory to list (default: the working directory).
    #[schemars(description = "")]
    #[serde(default)]
    pub path: Option<String>,
    /// Most entries (default 500).
    #[schemars(description = "")]
    #[serde(default)]
    pub limit: Option<u64>,
}

/// The `ls` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct LsTool;

impl TypedTool for LsTool {
    type Args = LsArgs;
    const NAME: &'static str = "ls";
    const DESCRIPTION: &'static str = "List a directory, hidden entries included, sorted by name: each \
        entry's kind and size; directories end with `/`.";
    const READ_ONLY: bool = true;

    fn run<'a>(&'a self, args: LsArgs, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        async move {
            let dir = paths::resolve(&ctx.cwd, args.path.as_deref().unwrap_or("."));
            let cwd = ctx.cwd.clone();
            let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
            if limit == 0 {
                return ToolOutput::error(
                    "invalid arguments for `ls`: field `limit`: must be at least 1",
                );
            }
            let filter = ctx.path_filter.clone();
            blocking(move || list(&dir, &cwd, limit.min(usize::MAX as u64) as usize, &filter)).await
        }
        .boxed()
    }
}

struct Entry {
    name: std::ffi::OsString,
    file_type: Option<FileType>,
}

fn list(dir: &Path, cwd: &Path, limit: usize, filter: &PathFilter) -> ToolOutput {
    let shown = paths::display(cwd, dir);
    let meta = match std::fs::metadata(dir) {
        Ok(m) => m,
        Err(_) => return ToolOutput::error(format!("Path not found: {shown}.")),
    };
    if !meta.is_dir() {
        let line = describe(
            dir,
            &shown,
            std::fs::symlink_metadata(dir).ok().map(|m| m.file_type()),
        );
        return ToolOutput::text(format!("{shown} is a file:\n{}", line.0)).with_render(
            RenderDescriptor::PathList {
                paths: vec![line.1],
            },
        );
    }
    let reader = match std::fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) => return ToolOutput::error(format!("Cannot list {shown}: {e}")),
    };
    // The gate's path filter: the directory is made real once, so an entry costs no system
    // call unless it is a symlink.
    let real_dir = if filter.is_active() {
        std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
    } else {
        dir.to_path_buf()
    };
    // Names are cheap; only the entries returned are stat'ed.
    let mut entries: Vec<Entry> = reader
        .filter_map(Result::ok)
        .filter(|e| {
            let link = e.file_type().is_ok_and(|t| t.is_symlink());
            filter.allows("ls", &real_dir.join(e.file_name()), link)
        })
        .map(|e| Entry {
            name: e.file_name(),
            file_type: e.file_type().ok(),
        })
        .collect();
    let total = entries.len();
    if total == 0 {
        return ToolOutput::text(format!("{shown} is empty."))
            .with_render(RenderDescriptor::PathList { paths: vec![] });
    }
    entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    entries.truncate(limit);
    let mut text = String::new();
    let mut paths_out = Vec::with_capacity(entries.len());
    for e in &entries {
        let full = dir.join(&e.name);
        let (line, entry) = describe(&full, &paths::display(cwd, &full), e.file_type);
        text.push_str(&line);
        text.push('\n');
        paths_out.push(entry);
    }
    if total > entries.len() {
        text.push_str(&format!(
            "[{} of {total} entries shown; raise limit or use find to see more.]\n",
            entries.len()
        ));
    }
    ToolOutput::text(text.trim_end().to_string())
        .with_render(RenderDescriptor::PathList { paths: paths_out })
}

/// One listing line (`kind size path`) and its render entry.
fn describe(full: &Path, shown: &str, file_type: Option<FileType>) -> (String, PathListEntry) {
    let is_link = file_type.is_some_and(|t| t.is_symlink());
    // Follow links for kind and size; a dangling link stays a link.
    let target = std::fs::metadata(full).ok();
    let is_dir = target.as_ref().is_some_and(|m| m.is_dir());
    let mut path = shown.to_string();
    if is_dir {
        path.push('/');
    }
    let kind = match (is_link, is_dir, &target) {
        (true, _, None) => "link (dangling)".to_string(),
        (true, true, _) => "link dir".to_string(),
        (true, false, _) => "link file".to_string(),
        (false, true, _) => "dir".to_string(),
        (false, false, Some(m)) if m.is_file() => "file".to_string(),
        (false, false, _) => "other".to_string(),
    };
    let size = match &target {
        Some(m) if !m.is_dir() => format!("{} bytes", m.len()),
        _ => String::new(),
    };
    let mut line = format!("{path}  ({kind}");
    if !size.is_empty() {
        line.push_str(", ");
        line.push_str(&size);
    }
    line.push(')');
    if is_link && let Ok(dest) = std::fs::read_link(full) {
        line.push_str(&format!(" -> {}", dest.display()));
    }
    let hint = if size.is_empty() {
        kind
    } else {
        format!("{kind}, {size}")
    };
    (
        line,
        PathListEntry {
            path,
            kind: if is_dir {
                PathKind::Dir
            } else {
                PathKind::File
            },
            hint: Some(hint),
        },
    )
}
