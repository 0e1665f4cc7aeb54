#!/usr/bin/env bash
# Browser-door benchmark: builds the release `shard` binary and runs the bench
# driver against it: bootstrap + upgrade per connection, daemon memory per WebSocket, and
# deltas/s to 1, 10 and 100 WebSocket clients (the unix socket's 100 clients as reference).
# Usage: bench/web/run.sh   (env: DELTAS=50000 CARGO_TARGET_DIR=...)
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
cargo build -j2 --release -p shard-cli
export SHARD_BIN="$CARGO_TARGET_DIR/release/shard"
echo "# $(date -u +%F) nproc=$(nproc) cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) load=$(cut -d' ' -f1 /proc/loadavg)"
cargo bench -j2 -p shard-web --bench web
