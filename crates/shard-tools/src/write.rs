//! `write`: creates or replaces a file atomically (temporary file, fsync, rename),
//! creating parent directories and keeping an existing file's permissions.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use shard_protocol::types::{DetailFormat, PermissionDetail, RenderDescriptor};

use crate::diff;
use crate::paths;
use crate::tool::{ToolContext, ToolOutput};
use crate::typed::TypedTool;
use crate::util::blocking;

/// Arguments of `write`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteArgs {
    /// File to write: relative to the working directory, absolute, or starting with `~/`.
    #[schemars(description = "")]
    pub path: String,
    /// The complete new content of the file.
    #[schemars(description = "")]
    pub content: String,
}

/// The `write` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct WriteTool;

impl TypedTool for WriteTool {
    type Args = WriteArgs;
    const NAME: &'static str = "write";
    const DESCRIPTION: &'static str = "Create a file, or replace its whole content; parent directories are \
        created. To change part of a file, use edit.";
    const READ_ONLY: bool = false;

    fn permission_details(&self, args: &WriteArgs, ctx: &ToolContext) -> Vec<PermissionDetail> {
        let path = paths::resolve(&ctx.cwd, &args.path);
        let shown = paths::display(&ctx.cwd, &path);
        let old = real_target(&path)
            .ok()
            .and_then(|t| match std::fs::metadata(&t) {
                Ok(m) if m.is_file() => std::fs::read(&t).ok(),
                _ => None,
            });
        let old = old.as_deref().map(String::from_utf8_lossy);
        vec![diff_detail(diff::unified(
            &shown,
            old.as_deref(),
            &args.content,
        ))]
    }

    fn run<'a>(&'a self, args: WriteArgs, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        async move {
            let path = paths::resolve(&ctx.cwd, &args.path);
            let shown = paths::display(&ctx.cwd, &path);
            if let Some(editor) = &ctx.editor {
                let old = match editor.read(&path).await {
                    Some(Ok(text)) => Some(text),
                    _ => None,
                };
                let content = args.content.clone();
                if let Some(r) = editor.write(&path, content).await {
                    return match r {
                        Ok(()) => report(&shown, old.as_deref().map(str::as_bytes), &args.content),
                        Err(e) => {
                            ToolOutput::error(format!("Cannot write {shown} in the editor: {e}"))
                        }
                    };
                }
            }
            blocking(move || write_file(&path, &shown, args.content)).await
        }
        .boxed()
    }
}

fn write_file(path: &Path, shown: &str, content: String) -> ToolOutput {
    let target = match real_target(path) {
        Ok(t) => t,
        Err(e) => return ToolOutput::error(format!("Cannot write {shown}: {e}")),
    };
    match std::fs::metadata(&target) {
        Ok(m) if m.is_dir() => {
            return ToolOutput::error(format!("{shown} is a directory; give a file path."));
        }
        Ok(m) if !m.is_file() => {
            return ToolOutput::error(format!(
                "{shown} is not a regular file; write only replaces files."
            ));
        }
        Ok(m) => {
            if let Some(why) = crate::util::hard_linked(&m, shown) {
                return ToolOutput::error(why);
            }
        }
        _ => {}
    }
    let old = match std::fs::read(&target) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return ToolOutput::error(format!("Cannot read the current {shown}: {e}")),
    };
    if let Err(e) = atomic_write(&target, content.as_bytes()) {
        return ToolOutput::error(format!("Cannot write {shown}: {e}"));
    }
    report(shown, old.as_deref(), &content)
}

/// The result of a write: what changed, with its diff.
fn report(shown: &str, old: Option<&[u8]>, content: &str) -> ToolOutput {
    let old_text = old.map(String::from_utf8_lossy).unwrap_or_default();
    let (hunks, cut) = diff::hunks(&old_text, content);
    let lines = content.lines().count();
    let verb = if old.is_some() { "Replaced" } else { "Created" };
    let mut text = format!("{verb} {shown} ({} bytes, {lines} lines).", content.len());
    if old == Some(content.as_bytes()) {
        text = format!("{shown} already had this content; nothing changed.");
    }
    if cut {
        text.push_str(" (The diff shown to the user was shortened.)");
    }
    ToolOutput::text(text).with_render(RenderDescriptor::Diff {
        path: shown.to_string(),
        hunks,
    })
}

/// The `diff` detail of a permission request.
pub(crate) fn diff_detail(text: String) -> PermissionDetail {
    PermissionDetail {
        label: Some("diff".into()),
        value: text,
        format: Some(DetailFormat::Diff),
    }
}

/// Writing through a symlink replaces the file it points to, not the link.
pub(crate) fn real_target(path: &Path) -> io::Result<PathBuf> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => match std::fs::canonicalize(path) {
            Ok(real) => Ok(real),
            // A dangling link: create the file it names.
            Err(_) => {
                let dest = std::fs::read_link(path)?;
                Ok(match path.parent() {
                    Some(parent) if dest.is_relative() => parent.join(dest),
                    _ => dest,
                })
            }
        },
        _ => Ok(path.to_path_buf()),
    }
}

/// Replaces `path` with `bytes` atomically: a temporary file in the same directory,
/// fsynced, given the old file's permissions, renamed over the target.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent)?;
    let old_perms = std::fs::metadata(path).ok().map(|m| m.permissions());
    let mut tmp = tempfile::Builder::new()
        .prefix(".shard-write-")
        .tempfile_in(parent)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    let perms = match old_perms {
        Some(p) => p,
        None => {
            // tempfile creates 0600; a new file gets the usual 0666 minus the umask.
            use std::os::unix::fs::PermissionsExt;
            std::fs::Permissions::from_mode(0o666 & !current_umask())
        }
    };
    std::fs::set_permissions(tmp.path(), perms)?;
    tmp.persist(path).map_err(|e| e.error)?;
    if let Ok(dir) = std::fs::File::open(parent) {
        // Make the rename durable; failure here does not undo the write.
        let _ = dir.sync_all();
    }
    Ok(())
}

/// The process umask, read from /proc (setting it to read it would race other threads).
fn current_umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}
