//! `edit`: exact string replacement, single or all-or-nothing multi-edit. Works on bytes
//! so that every untouched byte (line endings, BOM, trailing spaces, final newline, even
//! invalid UTF-8) stays identical.

use std::io;
use std::ops::Range;
use std::path::Path;

use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use shard_protocol::types::{DetailFormat, PermissionDetail, RenderDescriptor};

use crate::diff;
use crate::paths;
use crate::tool::{ToolContext, ToolOutput};
use crate::typed::TypedTool;
use crate::util::{blocking, cut_chars};
use crate::write::{atomic_write, diff_detail, real_target};

/// Files larger than this are not edited in memory.
pub const MAX_EDIT_BYTES: u64 = 64 * 1024 * 1024;
/// Candidate search for a failed match looks at most at this many lines.
const CANDIDATE_SCAN_LINES: usize = 50_000;

/// Arguments of `edit`. The fields carry no schema description: the tool's description
/// states every rule once.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EditArgs {
    /// File to edit: relative to the working directory, absolute, or starting with `~/`.
    #[schemars(description = "")]
    pub path: String,
    /// Exact text to replace, copied from the file (whitespace included). It must occur
    /// exactly once unless `replace_all` is set. Omit it when giving `edits`.
    #[schemars(description = "")]
    #[serde(default)]
    pub old_string: Option<String>,
    /// The replacement text.
    #[schemars(description = "")]
    #[serde(default)]
    pub new_string: Option<String>,
    /// Replace every occurrence of `old_string`.
    #[schemars(description = "")]
    #[serde(default)]
    pub replace_all: bool,
    /// Several replacements applied together (all or nothing), each matched against the
    /// original file; they must not overlap. Use instead of `old_string`/`new_string`.
    #[schemars(description = "")]
    #[serde(default)]
    pub edits: Option<Vec<EditOp>>,
}

/// One replacement of a multi-edit.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub struct EditOp {
    /// Exact text to replace.
    #[schemars(description = "")]
    pub old_string: String,
    /// The replacement text.
    #[schemars(description = "")]
    pub new_string: String,
    /// Replace every occurrence.
    #[schemars(description = "")]
    #[serde(default)]
    pub replace_all: bool,
}

/// The `edit` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct EditTool;

impl TypedTool for EditTool {
    type Args = EditArgs;
    const NAME: &'static str = "edit";
    const DESCRIPTION: &'static str = "Replace exact text in a file. `old_string` must match exactly (whitespace \
        too) and once, unless `replace_all`. For several changes to one file, give `edits`: each matched \
        against the original file, none overlapping; all apply or none.";
    const READ_ONLY: bool = false;

    fn permission_details(&self, args: &EditArgs, ctx: &ToolContext) -> Vec<PermissionDetail> {
        let path = paths::resolve(&ctx.cwd, &args.path);
        let shown = paths::display(&ctx.cwd, &path);
        let planned = ops_of(args)
            .map_err(|msg| format!("invalid arguments for `edit`: {msg}"))
            .and_then(|ops| plan_file(&path, &shown, &ops));
        match planned {
            Ok(p) => vec![diff_detail(diff::unified(
                &shown,
                Some(&String::from_utf8_lossy(&p.original)),
                &String::from_utf8_lossy(&p.updated),
            ))],
            // The person should know a yes will not change anything.
            Err(msg) => vec![PermissionDetail {
                label: Some("will fail".into()),
                value: msg,
                format: Some(DetailFormat::Text),
            }],
        }
    }

    fn run<'a>(&'a self, args: EditArgs, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        async move {
            let ops = match ops_of(&args) {
                Ok(ops) => ops,
                Err(msg) => {
                    return ToolOutput::error(format!("invalid arguments for `edit`: {msg}"));
                }
            };
            let path = paths::resolve(&ctx.cwd, &args.path);
            let shown = paths::display(&ctx.cwd, &path);
            if let Some(editor) = &ctx.editor
                && let Some(read) = editor.read(&path).await
            {
                let original = match read {
                    Ok(text) => text.into_bytes(),
                    Err(e) => {
                        return ToolOutput::error(format!(
                            "Cannot read {shown} in the editor: {e}"
                        ));
                    }
                };
                let (updated, out) = match edit_bytes(&original, &shown, &ops) {
                    Ok(r) => r,
                    Err(msg) => return ToolOutput::error(msg),
                };
                let text = String::from_utf8_lossy(&updated).into_owned();
                return match editor.write(&path, text).await {
                    Some(Err(e)) => {
                        ToolOutput::error(format!("Cannot write {shown} in the editor: {e}"))
                    }
                    Some(Ok(())) => out,
                    None => {
                        blocking(move || match atomic_write(&path, &updated) {
                            Ok(()) => out,
                            Err(e) => ToolOutput::error(format!("Cannot write {shown}: {e}")),
                        })
                        .await
                    }
                };
            }
            blocking(move || edit_file(&path, &shown, &ops)).await
        }
        .boxed()
    }
}

/// Where each op came from, for error messages (`edits[2]`) .
struct NamedOp {
    label: String,
    op: EditOp,
}

fn ops_of(args: &EditArgs) -> Result<Vec<NamedOp>, String> {
    match (&args.edits, &args.old_string, &args.new_string) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            Err("give either `edits` or `old_string`/`new_string`, not both".into())
        }
        (Some(edits), None, None) => {
            if edits.is_empty() {
                return Err("field `edits`: must list at least one edit".into());
            }
            Ok(edits
                .iter()
                .enumerate()
                .map(|(i, op)| NamedOp {
                    label: format!("edits[{i}]"),
                    op: op.clone(),
                })
                .collect())
        }
        (None, Some(old), Some(new)) => Ok(vec![NamedOp {
            label: "old_string".into(),
            op: EditOp {
                old_string: old.clone(),
                new_string: new.clone(),
                replace_all: args.replace_all,
            },
        }]),
        (None, None, _) => Err("missing field `old_string` (or give `edits`)".into()),
        (None, Some(_), None) => Err("missing field `new_string`".into()),
    }
}

/// An edit worked out but not written.
struct Planned {
    target: std::path::PathBuf,
    original: Vec<u8>,
    updated: Vec<u8>,
    out: ToolOutput,
}

/// Reads the file and matches every op; the error is the message for the model.
fn plan_file(path: &Path, shown: &str, ops: &[NamedOp]) -> Result<Planned, String> {
    let target = real_target(path).map_err(|e| format!("Cannot edit {shown}: {e}"))?;
    let meta = match std::fs::metadata(&target) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(format!(
                "File not found: {shown}. Use write to create a new file."
            ));
        }
        Err(e) => return Err(format!("Cannot edit {shown}: {e}")),
    };
    if !meta.is_file() {
        return Err(format!("{shown} is not a regular file."));
    }
    if let Some(why) = crate::util::hard_linked(&meta, shown) {
        return Err(why);
    }
    if meta.len() > MAX_EDIT_BYTES {
        return Err(format!(
            "{shown} is {} bytes, over the {MAX_EDIT_BYTES}-byte edit limit; use bash (e.g. sed) instead.",
            meta.len()
        ));
    }
    let original = std::fs::read(&target).map_err(|e| format!("Cannot read {shown}: {e}"))?;
    let (updated, out) = edit_bytes(&original, shown, ops)?;
    Ok(Planned {
        target,
        original,
        updated,
        out,
    })
}

fn edit_file(path: &Path, shown: &str, ops: &[NamedOp]) -> ToolOutput {
    let Planned {
        target,
        updated,
        out,
        ..
    } = match plan_file(path, shown, ops) {
        Ok(p) => p,
        Err(msg) => return ToolOutput::error(msg),
    };
    if let Err(e) = atomic_write(&target, &updated) {
        return ToolOutput::error(format!("Cannot write {shown}: {e}"));
    }
    out
}

/// Applies the ops to `original`: the new bytes and the result to report once they are
/// written, or the error message.
fn edit_bytes(
    original: &[u8],
    shown: &str,
    ops: &[NamedOp],
) -> Result<(Vec<u8>, ToolOutput), String> {
    let plan = plan_edits(original, ops, shown)?;
    let updated = apply(original, &plan);
    let mut lines: Vec<usize> = plan.iter().map(|r| r.line).collect();
    lines.dedup();
    let line_list = lines
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let n = plan.len();
    let noun = if n == 1 {
        "replacement"
    } else {
        "replacements"
    };
    let mut text = format!("Edited {shown}: {n} {noun} (line {line_list}).");
    let (hunks, cut) = diff::hunks(
        &String::from_utf8_lossy(original),
        &String::from_utf8_lossy(&updated),
    );
    if cut {
        text.push_str(" (The diff shown to the user was shortened.)");
    }
    let out = ToolOutput::text(text).with_render(RenderDescriptor::Diff {
        path: shown.to_string(),
        hunks,
    });
    Ok((updated, out))
}

/// One planned replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    /// Bytes of the original file to replace.
    pub range: Range<usize>,
    /// What replaces them.
    pub with: Vec<u8>,
    /// 1-based line of the start, for messages.
    pub line: usize,
}

/// Matches every op against the original bytes; the first failure aborts the whole plan.
fn plan_edits(original: &[u8], ops: &[NamedOp], shown: &str) -> Result<Vec<Replacement>, String> {
    let bom = if original.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    let crlf = uses_crlf(original);
    let mut plan: Vec<(usize, Replacement)> = Vec::new();
    for (index, NamedOp { label, op }) in ops.iter().enumerate() {
        if op.old_string.is_empty() {
            return Err(format!(
                "{label}: old_string is empty; give the exact text to replace (use write to create a file)."
            ));
        }
        if op.old_string == op.new_string {
            return Err(format!(
                "{label}: old_string and new_string are identical; nothing would change."
            ));
        }
        // The model sees lines without `\r`; in a CRLF file its `\n` means `\r\n`.
        let mut variants = Vec::new();
        if crlf && !op.old_string.contains('\r') && op.old_string.contains('\n') {
            let new = if op.new_string.contains('\r') {
                op.new_string.clone()
            } else {
                op.new_string.replace('\n', "\r\n")
            };
            variants.push((op.old_string.replace('\n', "\r\n"), new));
        }
        variants.push((op.old_string.clone(), op.new_string.clone()));
        let found = variants.iter().find_map(|(old, new)| {
            let hits = find_all(&original[bom..], old.as_bytes());
            (!hits.is_empty()).then_some((hits, old.len(), new))
        });
        let Some((hits, old_len, new)) = found else {
            return Err(not_found_message(original, label, &op.old_string, shown));
        };
        if hits.len() > 1 && !op.replace_all {
            let lines = hits
                .iter()
                .map(|&h| line_of(original, bom + h).to_string())
                .collect::<Vec<_>>()
                .join(", ");
            return Err(format!(
                "{label}: old_string occurs {} times in {shown} (at lines {lines}). Add surrounding lines to make it unique, or set replace_all to replace every occurrence.",
                hits.len()
            ));
        }
        for h in hits {
            let start = bom + h;
            plan.push((
                index,
                Replacement {
                    range: start..start + old_len,
                    with: new.as_bytes().to_vec(),
                    line: line_of(original, start),
                },
            ));
        }
    }
    plan.sort_by_key(|(_, r)| r.range.start);
    for pair in plan.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if b.1.range.start < a.1.range.end {
            let la = &ops[a.0].label;
            let lb = &ops[b.0].label;
            return Err(format!(
                "{la} and {lb} overlap (line {}); nothing was applied. Merge them into one edit.",
                b.1.line
            ));
        }
    }
    Ok(plan.into_iter().map(|(_, r)| r).collect())
}

/// True when most line breaks are CRLF.
fn uses_crlf(bytes: &[u8]) -> bool {
    let mut crlf = 0usize;
    let mut lf = 0usize;
    for i in memchr::memchr_iter(b'\n', bytes) {
        if i > 0 && bytes[i - 1] == b'\r' {
            crlf += 1;
        } else {
            lf += 1;
        }
    }
    crlf > lf
}

/// Non-overlapping occurrences, left to right.
fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    let finder = memchr::memmem::Finder::new(needle);
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = finder.find(&hay[at..]) {
        out.push(at + i);
        at += i + needle.len();
    }
    out
}

fn line_of(bytes: &[u8], offset: usize) -> usize {
    memchr::memchr_iter(b'\n', &bytes[..offset]).count() + 1
}

fn apply(original: &[u8], plan: &[Replacement]) -> Vec<u8> {
    let mut out = Vec::with_capacity(original.len());
    let mut at = 0;
    for r in plan {
        out.extend_from_slice(&original[at..r.range.start]);
        out.extend_from_slice(&r.with);
        at = r.range.end;
    }
    out.extend_from_slice(&original[at..]);
    out
}

/// Cheap pre-check before a character diff: at least half the bytes in common, counted
/// as multisets, so most unrelated lines of a large file skip the costly diff.
fn similar_bytes(a: &str, b: &str) -> bool {
    let mut counts = [0i32; 256];
    for &x in a.as_bytes() {
        counts[x as usize] += 1;
    }
    let mut common = 0usize;
    for &x in b.as_bytes() {
        let c = &mut counts[x as usize];
        if *c > 0 {
            *c -= 1;
            common += 1;
        }
    }
    2 * common >= a.len().max(b.len())
}

/// The no-match error, with the closest candidate lines so the model can correct itself.
fn not_found_message(original: &[u8], label: &str, old: &str, shown: &str) -> String {
    let text = String::from_utf8_lossy(original);
    let lines: Vec<&str> = text.lines().take(CANDIDATE_SCAN_LINES).collect();
    let old_lines: Vec<&str> = old.lines().collect();
    let anchor = old_lines
        .iter()
        .map(|l| l.trim())
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let anchor_pos = old_lines
        .iter()
        .position(|l| l.trim() == anchor)
        .unwrap_or(0);
    let mut scored: Vec<(f32, usize)> = Vec::new();
    if !anchor.is_empty() {
        for (i, line) in lines.iter().enumerate() {
            let t = line.trim();
            if t.is_empty() {
                continue;
            }
            let score = if t == anchor {
                1.0
            } else {
                let (a, b) = (anchor.len() as f32, t.len() as f32);
                if a.min(b) / a.max(b) < 0.5 || anchor.len() > 500 || !similar_bytes(anchor, t) {
                    continue;
                }
                similar::TextDiff::from_chars(anchor, t).ratio()
            };
            if score >= 0.6 {
                scored.push((score, i));
            }
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut msg = format!(
        "{label}: old_string was not found in {shown}; nothing was changed. Matching is exact (whitespace, indentation and line breaks count)."
    );
    if scored.is_empty() {
        msg.push_str(" No similar lines were found; read the file to see its current content.");
        return msg;
    }
    msg.push_str(" Closest candidates:\n");
    let span = old_lines.len().clamp(1, 8);
    for &(_, i) in scored.iter().take(3) {
        let start = i.saturating_sub(anchor_pos);
        let end = (start + span).min(lines.len());
        for (n, line) in lines.iter().enumerate().take(end).skip(start) {
            msg.push_str(&format!("{:>6}\t{}\n", n + 1, cut_chars(line, 300)));
        }
        msg.push_str("  --\n");
    }
    msg.push_str("Copy the text exactly as the file has it (read it again if unsure).");
    msg
}

#[cfg(test)]
#[path = "edit_tests.rs"]
mod tests;
