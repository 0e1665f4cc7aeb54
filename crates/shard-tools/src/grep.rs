//! `grep`: ripgrep's engine in-process (`grep-*` and `ignore` crates), parallel walk,
//! bounded output, cancellable.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use futures::FutureExt;
use futures::future::BoxFuture;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::WalkState;
use ignore::overrides::OverrideBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use shard_protocol::types::{PathKind, PathListEntry, RenderDescriptor};
use tokio_util::sync::CancellationToken;

use crate::output::Budget;
use crate::paths;
use crate::tool::PathFilter;
use crate::tool::{ToolContext, ToolOutput};
use crate::typed::TypedTool;
use crate::util::{blocking, cut_chars};
use crate::walk;

/// Matched lines are cut at this many characters.
pub const MAX_MATCH_CHARS: usize = 500;
/// Default number of results.
pub const DEFAULT_LIMIT: u64 = 100;

/// What `grep` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GrepOutput {
    /// Matching lines with file and line number.
    #[default]
    Content,
    /// Only the paths of matching files.
    Files,
    /// The number of matching lines per file.
    Count,
}

/// Arguments of `grep`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GrepArgs {
    /// Regular expression (Rust regex syntax), or plain text when `literal` is true.
    #[schemars(description = "")]
    pub pattern: String,
    /// File or directory to search (default: the working directory).
    #[schemars(description = "")]
    #[serde(default)]
    pub path: Option<String>,
    /// Only search files matching this glob, e.g. `*.rs` or `src/**/*.{ts,tsx}`.
    #[schemars(description = "Only files matching it, e.g. `*.rs`.")]
    #[serde(default)]
    pub glob: Option<String>,
    /// Match without regard to case.
    #[schemars(description = "")]
    #[serde(default)]
    pub ignore_case: bool,
    /// Treat `pattern` as plain text, not a regular expression.
    #[schemars(description = "`pattern` is plain text.")]
    #[serde(default)]
    pub literal: bool,
    /// Lines of context before and after each match (content output only).
    #[schemars(description = "Lines around each match.")]
    #[serde(default)]
    pub context: Option<u32>,
    /// `content` (default: matching lines), `files` (paths only) or `count` (per file).
    #[schemars(
        description = "`content` (default): matching lines; `files`: paths; `count`: per file."
    )]
    #[serde(default)]
    pub output: Option<GrepOutput>,
    /// Most results: matching lines for `content`, files otherwise (default 100).
    #[schemars(description = "Default 100.")]
    #[serde(default)]
    pub limit: Option<u64>,
}

/// The `grep` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct GrepTool;

impl TypedTool for GrepTool {
    type Args = GrepArgs;
    const NAME: &'static str = "grep";
    const DESCRIPTION: &'static str = "Search file contents by Rust regex (ripgrep). Honours .gitignore; skips \
        hidden and binary files; cuts lines at 500 chars.";
    const READ_ONLY: bool = true;

    fn run<'a>(&'a self, args: GrepArgs, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        async move {
            let root = paths::resolve(&ctx.cwd, args.path.as_deref().unwrap_or("."));
            let cwd = ctx.cwd.clone();
            let cancel = ctx.cancel.clone();
            let (max_bytes, max_lines) = (ctx.limits.max_output_bytes, ctx.limits.max_output_lines);
            let filter = ctx.path_filter.clone();
            blocking(move || grep(&args, &root, &cwd, &cancel, (max_bytes, max_lines), filter))
                .await
        }
        .boxed()
    }
}

/// One line of a file's result.
#[derive(Debug, Clone)]
struct Line {
    number: u64,
    text: String,
    is_match: bool,
    /// Context shown before a match (dropped when that match is cut by the limit).
    before: bool,
    /// A gap in context before this line (rg's `--`).
    after_break: bool,
}

#[derive(Debug)]
struct FileHits {
    path: PathBuf,
    count: u64,
    lines: Vec<Line>,
}

/// What a grep found, before formatting.
#[derive(Debug)]
pub struct GrepResult {
    files: Vec<FileHits>,
    /// The limit stopped the search early.
    pub limit_hit: bool,
    /// The search was cancelled.
    pub cancelled: bool,
}

/// Search settings.
#[derive(Debug, Clone)]
pub struct GrepQuery {
    /// Compiled pattern.
    pub matcher: RegexMatcher,
    /// Result kind.
    pub output: GrepOutput,
    /// Context lines.
    pub context: usize,
    /// Most results.
    pub limit: usize,
    /// Glob filter.
    pub glob: Option<String>,
    /// What may be shown (and so searched).
    pub filter: PathFilter,
}

fn grep(
    args: &GrepArgs,
    root: &Path,
    cwd: &Path,
    cancel: &CancellationToken,
    (max_bytes, max_lines): (usize, usize),
    filter: PathFilter,
) -> ToolOutput {
    let shown_root = paths::display(cwd, root);
    if !root.exists() {
        return ToolOutput::error(format!("Path not found: {shown_root}."));
    }
    if args.limit == Some(0) {
        return ToolOutput::error(
            "invalid arguments for `grep`: field `limit`: must be at least 1",
        );
    }
    let matcher = match RegexMatcherBuilder::new()
        .case_insensitive(args.ignore_case)
        .fixed_strings(args.literal)
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
    {
        Ok(m) => m,
        Err(e) => {
            return ToolOutput::error(format!(
                "invalid arguments for `grep`: field `pattern`: {e}\n(Set literal: true to search for the text as it is.)"
            ));
        }
    };
    let output = args.output.unwrap_or_default();
    let query = GrepQuery {
        matcher,
        output,
        context: if output == GrepOutput::Content {
            args.context.unwrap_or(0) as usize
        } else {
            0
        },
        limit: args.limit.unwrap_or(DEFAULT_LIMIT).min(usize::MAX as u64) as usize,
        glob: args.glob.clone(),
        filter,
    };
    let result = match search(&query, root, cancel) {
        Ok(r) => r,
        Err(msg) => return ToolOutput::error(msg),
    };
    if result.cancelled {
        return ToolOutput::error("grep was cancelled");
    }
    format_result(
        &result,
        &query,
        args,
        cwd,
        &shown_root,
        max_bytes,
        max_lines,
    )
}

/// Runs the search; results are sorted by path and trimmed to the limit.
pub fn search(
    query: &GrepQuery,
    root: &Path,
    cancel: &CancellationToken,
) -> Result<GrepResult, String> {
    let mut builder = walk::builder(root);
    walk::filter(&mut builder, root, "grep", &query.filter);
    if let Some(glob) = &query.glob {
        let mut ob = OverrideBuilder::new(root);
        if let Err(e) = ob.add(glob) {
            return Err(format!("invalid arguments for `grep`: field `glob`: {e}"));
        }
        match ob.build() {
            Ok(o) => {
                builder.overrides(o);
            }
            Err(e) => return Err(format!("invalid arguments for `grep`: field `glob`: {e}")),
        }
    }
    let found = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let hits: Mutex<Vec<FileHits>> = Mutex::new(Vec::new());
    let limit = query.limit;
    builder.build_parallel().run(|| {
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .before_context(query.context)
            .after_context(query.context)
            .build();
        let matcher = query.matcher.clone();
        let (found, stop, hits) = (&found, &stop, &hits);
        Box::new(move |entry| {
            if stop.load(Ordering::Relaxed) || cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let mut sink = Collect {
                mode: query.output,
                max: limit as u64,
                count: 0,
                lines: Vec::new(),
                pending_break: false,
                cancel,
            };
            // Opened once, and skipped when it has other names (`util::hard_linked`).
            let searched = std::fs::File::open(entry.path()).and_then(|file| {
                let meta = file.metadata()?;
                if crate::util::hard_linked(&meta, "").is_some() {
                    return Err(io::Error::other("the file has several hard links"));
                }
                searcher.search_file(&matcher, &file, &mut sink)
            });
            if let Err(err) = searched {
                tracing::debug!(path = %entry.path().display(), %err, "grep skipped a file");
            }
            if sink.count == 0 {
                return WalkState::Continue;
            }
            let units = if query.output == GrepOutput::Content {
                sink.count as usize
            } else {
                1
            };
            let before = found.fetch_add(units, Ordering::Relaxed);
            let file = FileHits {
                path: entry.into_path(),
                count: sink.count,
                lines: sink.lines,
            };
            match hits.lock() {
                Ok(mut h) => h.push(file),
                Err(poisoned) => poisoned.into_inner().push(file),
            }
            // One result past the limit proves there are more than it.
            if before + units > limit {
                stop.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            WalkState::Continue
        })
    });
    let mut files = hits.into_inner().unwrap_or_else(|p| p.into_inner());
    files.sort_unstable_by(|a, b| walk::cmp_paths(&a.path, &b.path));
    let total = found.load(Ordering::Relaxed);
    let limit_hit = total > limit;
    // Keep exactly `limit` results, in path order.
    let mut budget = limit;
    files.retain_mut(|f| {
        if budget == 0 {
            return false;
        }
        if query.output == GrepOutput::Content {
            let mut seen = 0usize;
            let keep_upto = f
                .lines
                .iter()
                .position(|l| {
                    if l.is_match {
                        seen += 1;
                    }
                    seen > budget
                })
                .unwrap_or(f.lines.len());
            f.lines.truncate(keep_upto);
            // After-context of the last kept match stays; before-context of a cut match goes.
            while f.lines.last().is_some_and(|l| l.before) {
                f.lines.pop();
            }
            let kept = f.lines.iter().filter(|l| l.is_match).count();
            budget -= kept.min(budget);
        } else {
            budget -= 1;
        }
        true
    });
    Ok(GrepResult {
        files,
        limit_hit,
        cancelled: cancel.is_cancelled(),
    })
}

struct Collect<'a> {
    mode: GrepOutput,
    max: u64,
    count: u64,
    lines: Vec<Line>,
    pending_break: bool,
    cancel: &'a CancellationToken,
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.count += 1;
        if self.mode == GrepOutput::Content {
            self.push(m.line_number().unwrap_or(0), m.bytes(), true, false);
        }
        let more = match self.mode {
            GrepOutput::Files => false,
            // One match past the limit, so the last kept match gets its after-context
            // (the extra match is trimmed afterwards).
            GrepOutput::Content => self.count <= self.max,
            GrepOutput::Count => true,
        };
        Ok(more && !self.cancel.is_cancelled())
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, io::Error> {
        match c.kind() {
            SinkContextKind::Before => {
                self.push(c.line_number().unwrap_or(0), c.bytes(), false, true)
            }
            SinkContextKind::After => {
                self.push(c.line_number().unwrap_or(0), c.bytes(), false, false)
            }
            SinkContextKind::Other => {}
        }
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        self.pending_break = true;
        Ok(true)
    }
}

impl Collect<'_> {
    fn push(&mut self, number: u64, bytes: &[u8], is_match: bool, before: bool) {
        let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        // Decode only what can be shown.
        let bytes = &bytes[..bytes.len().min(MAX_MATCH_CHARS * 4)];
        let text = cut_chars(&String::from_utf8_lossy(bytes), MAX_MATCH_CHARS);
        let after_break = std::mem::take(&mut self.pending_break) && !self.lines.is_empty();
        self.lines.push(Line {
            number,
            text,
            is_match,
            before,
            after_break,
        });
    }
}

fn format_result(
    result: &GrepResult,
    query: &GrepQuery,
    args: &GrepArgs,
    cwd: &Path,
    shown_root: &str,
    max_bytes: usize,
    max_lines: usize,
) -> ToolOutput {
    if result.files.is_empty() {
        return ToolOutput::text(format!(
            "No matches for `{}` in {shown_root}.",
            args.pattern
        ));
    }
    let mut text = String::new();
    let mut entries = Vec::new();
    // Only what the model sees is formatted.
    let mut budget = Budget::new(max_bytes, max_lines);
    let mut push_line = |text: &mut String, line: String| -> bool {
        if !budget.take(line.len() + 1) {
            return false;
        }
        text.push_str(&line);
        text.push('\n');
        true
    };
    'files: for (i, f) in result.files.iter().enumerate() {
        let p = paths::display(cwd, &f.path);
        match query.output {
            GrepOutput::Files => {
                if !push_line(&mut text, p.clone()) {
                    break;
                }
                entries.push(PathListEntry {
                    path: p,
                    kind: PathKind::File,
                    hint: None,
                });
            }
            GrepOutput::Count => {
                if !push_line(&mut text, format!("{p}:{}", f.count)) {
                    break;
                }
                entries.push(PathListEntry {
                    path: p,
                    kind: PathKind::File,
                    hint: Some(format!("{} matching lines", f.count)),
                });
            }
            GrepOutput::Content => {
                if query.context > 0 && i > 0 && !push_line(&mut text, "--".into()) {
                    break;
                }
                for l in &f.lines {
                    if l.after_break && !push_line(&mut text, "--".into()) {
                        break 'files;
                    }
                    let sep = if l.is_match { ':' } else { '-' };
                    if !push_line(&mut text, format!("{p}{sep}{}{sep}{}", l.number, l.text)) {
                        break 'files;
                    }
                    if l.is_match {
                        entries.push(PathListEntry {
                            path: p.clone(),
                            kind: PathKind::File,
                            hint: Some(format!("{}: {}", l.number, l.text)),
                        });
                    }
                }
            }
        }
    }
    let cut = budget.exhausted();
    if result.limit_hit {
        let unit = if query.output == GrepOutput::Content {
            "matches"
        } else {
            "files"
        };
        text.push_str(&format!(
            "[Stopped at the limit of {} {unit}; there are more. Narrow the search with path or glob, or raise limit.]\n",
            query.limit
        ));
    }
    if cut {
        text.push_str("[Output cut at the size limit; narrow the search or use output: files.]\n");
    }
    ToolOutput::text(text.trim_end().to_string())
        .with_render(RenderDescriptor::PathList { paths: entries })
}
