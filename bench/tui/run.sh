#!/bin/sh
# Terminal-client benchmarks: the release binary driven through tmux, then the
# in-process frame-time benchmark over a 10,000-message session.
set -eu
cd "$(dirname "$0")/../.."
cargo build --release -p shard-cli
python3 bench/tui/bench.py target/release/shard
cargo test --release -p shard-cli --bin shard frame_time -- --ignored --nocapture 2>&1 | grep -E "sync of|p95"
