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

# Every citation of the repository's own docs lands: "docs/X.md#anchor" names a heading of
# that file, "docs/protocol.md §N" a numbered section.
if ! python3 - <<'PY'; then
import os, re, subprocess, sys

def slug(heading):
    h = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return h.replace(" ", "-")

anchors, sections = {}, set()
def headings(doc):
    if doc not in anchors:
        try:
            text = open(doc, encoding="utf-8").read()
        except OSError:
            anchors[doc] = set()
            return anchors[doc]
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        anchors[doc] = {slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, re.M)}
        if doc == "docs/protocol.md":
            sections.update(re.findall(r"^#{2,4} (\d+(?:\.\d+)*[a-z]?)\.? ", text, re.M))
    return anchors[doc]

files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                       capture_output=True, check=True).stdout.decode().split("\0")
bad = False
for f in files:
    if not f or f.startswith("pending/") or f == "scripts/check-citations.sh" or not os.path.isfile(f):
        continue
    try:
        lines = open(f, encoding="utf-8").read().split("\n")
    except (UnicodeDecodeError, OSError):
        continue
    for n, line in enumerate(lines, 1):
        for doc, anchor in re.findall(r"(docs/[\w.-]+\.md)#([\w-]+)", line):
            if anchor not in headings(doc):
                print(f"{f}:{n}: no heading #{anchor} in {doc}")
                bad = True
        for sec in re.findall(r"docs/protocol\.md,? §(\d+(?:\.\d+)*[a-z]?)", line):
            headings("docs/protocol.md")
            if sec not in sections:
                print(f"{f}:{n}: no section §{sec} in docs/protocol.md")
                bad = True
sys.exit(1 if bad else 0)
PY
  found=1
fi

if [ "$found" -ne 0 ]; then
  echo "check-citations: cite docs/protocol.md §N, a docs/architecture.md section or a" >&2
  echo "docs/decisions.md entry by name instead of the lines above, and cite what exists" >&2
  exit 1
fi
echo "check-citations: no citation of outside documents or issue numbers; every doc citation lands"
