//! The `recall` tool (docs/sessions.md#compaction-recall-and-forks): pages through the original messages a compaction
//! summarized, so the model can reread what the summary left out. Registered once the
//! session has a compaction, and replaced after each new one (its view of the transcript
//! then covers the new compaction too).

use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use shard_session::{SessionError, SessionReader};
use shard_tools::{ToolContext, ToolOutput, TypedTool};

/// Characters of rendered messages per page, like `read`'s output bound.
pub const PAGE_CHARS: usize = 40_000;

/// Arguments of `recall`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    /// The compaction's index (0 for the first compaction of the session).
    pub index: u64,
    /// Page number, from 1; the first page when absent.
    #[serde(default)]
    pub page: Option<u64>,
}

/// The tool; holds a read-only view of the transcript.
pub struct Recall {
    reader: Arc<Mutex<SessionReader>>,
}

impl Recall {
    /// A `recall` reading through `reader`.
    pub fn new(reader: SessionReader) -> Self {
        Recall {
            reader: Arc::new(Mutex::new(reader)),
        }
    }
}

/// One page of the messages of compaction `index`: the rendered messages cut into pages
/// of at most [`PAGE_CHARS`] (a longer single message is shortened), with "page N of M".
pub fn page(reader: &SessionReader, index: u64, page: u64) -> Result<String, String> {
    let messages = match reader.recall(index) {
        Ok(m) => m,
        Err(SessionError::NotFound(_)) => {
            let known = reader
                .compaction_index()
                .map_or("this session has no compaction".to_string(), |last| {
                    format!("valid indices are 0 to {last}")
                });
            return Err(format!("there is no compaction {index}: {known}"));
        }
        Err(e) => return Err(format!("cannot read the session: {e}")),
    };
    let rendered: Vec<String> = messages
        .iter()
        .map(|m| format!("--- {} ---\n{}", m.id, crate::compactor::render(m)))
        .collect();
    let pages = crate::compactor::passes(rendered, PAGE_CHARS);
    let count = pages.len().max(1) as u64;
    if page == 0 || page > count {
        return Err(format!(
            "page {page} does not exist: compaction {index} has {count} page(s), numbered from 1"
        ));
    }
    let body = pages
        .get((page - 1) as usize)
        .cloned()
        .unwrap_or_else(|| "(no messages)\n".to_string());
    let more = if page < count {
        format!("\nCall recall with page {} for more.", page + 1)
    } else {
        String::new()
    };
    Ok(format!(
        "Compaction {index}: {} original messages, page {page} of {count}.\n\n{body}{more}",
        messages.len()
    ))
}

impl TypedTool for Recall {
    type Args = RecallArgs;
    const NAME: &'static str = "recall";
    const DESCRIPTION: &'static str = "Reread the original messages that a compaction \
        replaced with a summary. `index` is the compaction's number (the summary at the start \
        of the conversation comes from the latest one); the messages come in pages, `page` \
        from 1.";
    const READ_ONLY: bool = true;

    fn run<'a>(&'a self, args: RecallArgs, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        let reader = self.reader.clone();
        async move {
            let done = tokio::task::spawn_blocking(move || {
                let reader = reader
                    .lock()
                    .map_err(|_| "the session view is unusable".to_string())?;
                page(&reader, args.index, args.page.unwrap_or(1))
            })
            .await;
            match done {
                Ok(Ok(text)) => ToolOutput::text(text),
                Ok(Err(e)) => ToolOutput::error(e),
                Err(e) => ToolOutput::error(format!("recall failed: {e}")),
            }
        }
        .boxed()
    }
}
