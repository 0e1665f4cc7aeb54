#!/usr/bin/env bash
# Daemon benchmark: builds the release `shard` binary and runs the bench driver against it.
# Usage: bench/daemon/run.sh   (env: DELTAS=50000 AGENTS=50 ONLY=core CARGO_TARGET_DIR=...)
# ONLY=core runs only the daemon-core figures (agent.list under 20 creates, idle connections).
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
cargo build -j2 --release -p shard-cli
export SHARD_BIN="$CARGO_TARGET_DIR/release/shard"
echo "# $(date -u +%F) nproc=$(nproc) cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
cargo bench -j2 -p shard-daemon --bench daemon
