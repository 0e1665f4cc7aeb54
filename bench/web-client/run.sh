#!/bin/sh
# Browser-client benchmarks: the release binary, headless Chromium through
# playwright-core (`npm ci` at the repo root; Debian `chromium`). Prints JSON.
set -eu
cd "$(dirname "$0")/../.."
cargo build --release -p shard-cli
node bench/web-client/bench.mjs target/release/shard
