#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Providers against an in-process mock HTTP server that replays the real captured SSE
//! streams of `tests/fixtures/llm/` byte for byte. One test binary, split by topic.

#[path = "providers/support.rs"]
mod support;

#[path = "providers/anthropic.rs"]
mod anthropic;
#[path = "providers/chunking.rs"]
mod chunking;
#[path = "providers/errors.rs"]
mod errors;
#[path = "providers/failures.rs"]
mod failures;
#[path = "providers/multi_turn.rs"]
mod multi_turn;
#[path = "providers/openai.rs"]
mod openai;
#[path = "providers/requests.rs"]
mod requests;
#[path = "providers/tls.rs"]
mod tls;
