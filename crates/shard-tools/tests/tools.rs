#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Integration tests of the built-in tools through the `Tool` trait, as the Runtime uses
//! them (one test binary; one module per tool family under `tests/tools/`).

#[path = "tools/common.rs"]
mod common;
#[path = "../../../tests/support/skip.rs"]
mod skip;

#[path = "tools/bash.rs"]
mod bash;
#[path = "tools/read.rs"]
mod read;
#[path = "tools/registry.rs"]
mod registry;
#[path = "tools/search.rs"]
mod search;
#[path = "tools/write_edit.rs"]
mod write_edit;
