#!/usr/bin/env bash
# Keeps the repository self-contained: code, docs, the browser client, the SDKs, tests and
# benchmarks cite the repository's own documents (docs/protocol.md §N, docs/architecture.md
# sections, docs/decisions.md entries by name), never documents outside it nor issue numbers
# a reader of the repository cannot look up. Prints every offending line and exits 1.
#
#   scripts/check-citations.sh [ROOT]
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"

# The old outside documents by section, their file names, and issue numbers.
pattern='(PROTOCOL|ARCHITECTURE)(\.md)?[[:space:]]*§|(^|[^/[:alnum:]_])(PROTOCOL|ARCHITECTURE)\.md|(^|[^[:alnum:]_])[Ii]ssues?[[:space:]]+#?[0-9]'

# What git would commit (tracked, plus untracked files that are not ignored), except
# mail archives of pending patches, lock files and this script.
hits="$(mktemp)"
trap 'rm -f "$hits"' EXIT
found=0
while IFS= read -r -d '' file; do
  case "$file" in
    pending/* | *.lock | *.mbox | scripts/check-citations.sh) continue ;;
  esac
  [ -f "$file" ] || continue
  # -I skips binary files.
  if grep -InE "$pattern" -- "$file" >"$hits" 2>/dev/null; then
    sed "s|^|$file:|" "$hits"
    found=1
  fi
done < <(git ls-files -z --cached --others --exclude-standard)

if [ "$found" -ne 0 ]; then
  echo "check-citations: cite docs/protocol.md §N, a docs/architecture.md section or a" >&2
  echo "docs/decisions.md entry by name instead of the lines above" >&2
  exit 1
fi
echo "check-citations: no citation of outside documents or issue numbers"
