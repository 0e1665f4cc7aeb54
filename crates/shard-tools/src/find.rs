//! `find`: files and directories whose name (or relative path) matches a glob, with
//! `.gitignore` honoured; parallel walk, bounded, cancellable.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use futures::FutureExt;
use futures::future::BoxFuture;
use globset::{GlobBuilder, GlobMatcher};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkState};
use schemars::JsonSchema;
use serde::Deserialize;
use shard_protocol::types::{PathKind, PathListEntry, RenderDescriptor};
use tokio_util::sync::CancellationToken;

use crate::output::Budget;
use crate::paths;
use crate::tool::PathFilter;
use crate::tool::{ToolContext, ToolOutput};
use crate::typed::TypedTool;
use crate::util::blocking;
use crate::walk;

/// Default number of results.
pub const DEFAULT_LIMIT: u64 = 1000;

/// Arguments of `find`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FindArgs {
    /// Glob. Without `/` it matches file and directory names at any depth (`*.rs`,
    /// `Cargo.toml`); with `/` it matches the path below `path` (`src/**/*.rs`).
    #[schemars(description = "")]
    pub pattern: String,
    /// Directory to search (default: the working directory).
    #[schemars(description = "")]
    #[serde(default)]
    pub path: Option<String>,
    /// Most results (default 1000).
    #[schemars(description = "")]
    #[serde(default)]
    pub limit: Option<u64>,
}

/// The `find` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct FindTool;

impl TypedTool for FindTool {
    type Args = FindArgs;
    const NAME: &'static str = "find";
    const DESCRIPTION: &'static str = "Find files and directories by glob, sorted by path; directories end with \
        `/`. A pattern without `/` matches names at any depth (`*.rs`), one with `/` paths below `path` \
        (`src/**/test_*.py`). Honours .gitignore; skips hidden files.";
    const READ_ONLY: bool = true;

    fn run<'a>(&'a self, args: FindArgs, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        async move {
            let root = paths::resolve(&ctx.cwd, args.path.as_deref().unwrap_or("."));
            let cwd = ctx.cwd.clone();
            let cancel = ctx.cancel.clone();
            let (max_bytes, max_lines) = (ctx.limits.max_output_bytes, ctx.limits.max_output_lines);
            let filter = ctx.path_filter.clone();
            blocking(move || find(&args, &root, &cwd, &cancel, (max_bytes, max_lines), filter))
                .await
        }
        .boxed()
    }
}

/// A compiled `find` pattern.
#[derive(Debug, Clone)]
pub struct FindQuery {
    matcher: GlobMatcher,
    /// Match the path below the root instead of the name.
    by_path: bool,
    /// Most results.
    pub limit: usize,
    /// What may be shown.
    pub filter: PathFilter,
}

impl FindQuery {
    /// Compiles a glob; the error names the problem.
    pub fn new(pattern: &str, limit: usize) -> Result<Self, String> {
        let by_path = pattern.contains('/');
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(FindQuery {
            matcher: glob.compile_matcher(),
            by_path,
            limit,
            filter: PathFilter::default(),
        })
    }
}

/// What a find found, sorted by path.
#[derive(Debug)]
pub struct FindResult {
    /// Paths and whether each is a directory.
    pub found: Vec<(PathBuf, bool)>,
    /// The limit stopped the walk early.
    pub limit_hit: bool,
    /// The walk was cancelled.
    pub cancelled: bool,
}

/// Walks `root` and collects matches.
pub fn search(query: &FindQuery, root: &Path, cancel: &CancellationToken) -> FindResult {
    let shared = Shared {
        query,
        root,
        cancel,
        count: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        found: Mutex::new(Vec::new()),
    };
    let mut builder = walk::builder(root);
    walk::filter(&mut builder, root, "find", &query.filter);
    builder
        .build_parallel()
        .visit(&mut VisitorBuilder { shared: &shared });
    let mut found = shared.found.into_inner().unwrap_or_else(|p| p.into_inner());
    found.sort_unstable_by(|a, b| walk::cmp_paths(&a.0, &b.0));
    let limit_hit = found.len() > query.limit;
    found.truncate(query.limit);
    FindResult {
        found,
        limit_hit,
        cancelled: cancel.is_cancelled(),
    }
}

/// State shared by the walker threads.
struct Shared<'a> {
    query: &'a FindQuery,
    root: &'a Path,
    cancel: &'a CancellationToken,
    count: AtomicUsize,
    stop: AtomicBool,
    found: Mutex<Vec<(PathBuf, bool)>>,
}

struct VisitorBuilder<'a> {
    shared: &'a Shared<'a>,
}

impl<'s> ParallelVisitorBuilder<'s> for VisitorBuilder<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            shared: self.shared,
            local: Vec::new(),
        })
    }
}

/// One walker thread: collects locally and hands its results over once, when dropped.
struct Visitor<'a> {
    shared: &'a Shared<'a>,
    local: Vec<(PathBuf, bool)>,
}

impl ParallelVisitor for Visitor<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        let sh = self.shared;
        if sh.stop.load(Ordering::Relaxed) || sh.cancel.is_cancelled() {
            return WalkState::Quit;
        }
        let Ok(entry) = entry else {
            return WalkState::Continue;
        };
        if entry.depth() == 0 {
            return WalkState::Continue;
        }
        let hit = if sh.query.by_path {
            entry
                .path()
                .strip_prefix(sh.root)
                .is_ok_and(|rel| sh.query.matcher.is_match(rel))
        } else {
            sh.query.matcher.is_match(entry.file_name())
        };
        if !hit {
            return WalkState::Continue;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        self.local.push((entry.into_path(), is_dir));
        // One result past the limit proves there are more than it.
        if sh.count.fetch_add(1, Ordering::Relaxed) + 1 > sh.query.limit {
            sh.stop.store(true, Ordering::Relaxed);
            return WalkState::Quit;
        }
        WalkState::Continue
    }
}

impl Drop for Visitor<'_> {
    fn drop(&mut self) {
        let local = std::mem::take(&mut self.local);
        match self.shared.found.lock() {
            Ok(mut f) => f.extend(local),
            Err(poisoned) => poisoned.into_inner().extend(local),
        }
    }
}

fn find(
    args: &FindArgs,
    root: &Path,
    cwd: &Path,
    cancel: &CancellationToken,
    (max_bytes, max_lines): (usize, usize),
    filter: PathFilter,
) -> ToolOutput {
    let shown_root = paths::display(cwd, root);
    if args.limit == Some(0) {
        return ToolOutput::error(
            "invalid arguments for `find`: field `limit`: must be at least 1",
        );
    }
    match std::fs::metadata(root) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return ToolOutput::error(format!(
                "{shown_root} is a file, not a directory; give a directory as path."
            ));
        }
        Err(_) => return ToolOutput::error(format!("Path not found: {shown_root}.")),
    }
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT).min(usize::MAX as u64) as usize;
    let query = match FindQuery::new(&args.pattern, limit) {
        Ok(q) => FindQuery { filter, ..q },
        Err(e) => {
            return ToolOutput::error(format!(
                "invalid arguments for `find`: field `pattern`: {e}"
            ));
        }
    };
    let result = search(&query, root, cancel);
    if result.cancelled {
        return ToolOutput::error("find was cancelled");
    }
    if result.found.is_empty() {
        return ToolOutput::text(format!(
            "No files match `{}` in {shown_root}.",
            args.pattern
        ));
    }
    let mut text = String::new();
    let mut entries = Vec::new();
    let mut budget = Budget::new(max_bytes, max_lines);
    for (path, is_dir) in &result.found {
        let mut p = paths::display(cwd, path);
        if *is_dir {
            p.push('/');
        }
        // Only what the model sees is formatted; the rest stays unformatted.
        if !budget.take(p.len() + 1) {
            break;
        }
        text.push_str(&p);
        text.push('\n');
        entries.push(PathListEntry {
            path: p,
            kind: if *is_dir {
                PathKind::Dir
            } else {
                PathKind::File
            },
            hint: None,
        });
    }
    let cut = budget.exhausted();
    if result.limit_hit {
        text.push_str(&format!(
            "[Stopped at the limit of {limit} results; there are more. Narrow the pattern or path, or raise limit.]\n"
        ));
    }
    if cut {
        text.push_str("[Output cut at the size limit; narrow the pattern or path.]\n");
    }
    ToolOutput::text(text.trim_end().to_string())
        .with_render(RenderDescriptor::PathList { paths: entries })
}
