#!/usr/bin/env bash
# Benchmarks the grep and find tools against ripgrep and fd on a generated tree of
# 100,000 files (deterministic; reused when it already exists).
#
#   bench/tools/run.sh            # all cases
#   FILES=20000 bench/tools/run.sh
#
# Needs: cargo, hyperfine, rg, fdfind or fd (Debian: apt-get install -y ripgrep fd-find hyperfine).
# The tool runs in-process in a tiny release binary (crates/shard-tools/examples/tool_bench.rs),
# so both sides pay one process start. Results: bench/tools/results/*.json and a summary.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
FILES="${FILES:-100000}"
ROOT="${BENCH_ROOT:-/tmp/shard-tools-bench-$FILES}"
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
RUNS="${RUNS:-10}"
OUT="$HERE/results"
mkdir -p "$OUT"

FD="$(command -v fdfind || command -v fd || true)"
for need in hyperfine rg; do
  command -v "$need" >/dev/null || { echo "missing $need (apt-get install -y ripgrep fd-find hyperfine)"; exit 1; }
done
[ -n "$FD" ] || { echo "missing fd (apt-get install -y fd-find)"; exit 1; }

(cd "$REPO" && CARGO_TARGET_DIR="$TARGET" cargo build -j2 --release -p shard-tools --example tool_bench)
BIN="$TARGET/release/examples/tool_bench"

echo "generating $FILES files under $ROOT (reused when present)"
"$BIN" gen "$ROOT" "$FILES"

cd "$ROOT"
# Warm the page cache so both sides read from memory.
rg --files >/dev/null

bench() { # name, ours, theirs
  local name="$1" ours="$2" theirs="$3"
  echo "== $name"
  echo "   ours:   $ours"
  echo "   theirs: $theirs"
  hyperfine -N --warmup 2 --runs "$RUNS" --export-json "$OUT/$name.json" \
    -n ours "$ours" -n theirs "$theirs" >/dev/null
  python3 - "$OUT/$name.json" "$name" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
o, t = r["ours"]["mean"], r["theirs"]["mean"]
print(f"   {sys.argv[2]}: ours {o*1000:.1f} ms ± {r['ours']['stddev']*1000:.1f}, "
      f"theirs {t*1000:.1f} ms ± {r['theirs']['stddev']*1000:.1f}, ratio {o/t:.2f}x")
PY
}

# Rare pattern: a full walk and search, 100 matches (the limit of 1000 is never reached).
bench grep_rare "$BIN grep . RARE_NEEDLE_7f3a 1000" "rg --no-require-git -n RARE_NEEDLE_7f3a ."
# Common pattern, 100 matching lines on both sides (rg stops on SIGPIPE from head).
bench grep_limit100 "$BIN grep . _handler[(] 100" "bash -c 'rg --no-require-git -n _handler[\(] . | head -n 100'"
# Common pattern, no limit on either side: every matching file found.
bench grep_all "$BIN grep . _handler[(] 100000000 files" "rg --no-require-git -l _handler[(] ."
# Rare name: a full walk.
bench find_rare "$BIN find . file4242.rs 1000" "$FD --glob file4242.rs ."
# Common glob, at most 1000 results on both sides.
bench find_limit1000 "$BIN find . *.rs 1000" "$FD --glob *.rs --max-results 1000 ."
# Common glob, no limit on either side.
bench find_all "$BIN find . *.rs 100000000" "$FD --glob *.rs ."

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(date -u +%F)"
