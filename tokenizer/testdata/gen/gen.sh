#!/usr/bin/env bash
# Regenerates tokenizer/testdata/golden/*.json from the HF reference
# implementations (@huggingface/tokenizers for ids, @huggingface/jinja for
# chat templates, both pinned in package.json). Needs node + npm and the
# fixtures from scripts/fetch-tokenizers. Run from anywhere:
#   tokenizer/testdata/gen/gen.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
cache="${KVROUTER_TOKENIZER_CACHE:-$root/.cache/tokenizers}"
"$root/scripts/fetch-tokenizers"
work="$cache/gen"
mkdir -p "$work"
cp "$here/package.json" "$here/gen.mjs" "$work/"
(cd "$work" && npm install --silent --no-audit --no-fund >/dev/null)
node "$work/gen.mjs" "$cache" "$here/../prompts.json" "$here/../golden"
