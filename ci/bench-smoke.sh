#!/usr/bin/env bash
# The main job runs and writes well-formed JSON (speed is not judged here:
# see README for how the numbers are taken).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${CARGO_TARGET_DIR:-target}/bench-smoke.json"
mkdir -p "$(dirname "$out")"
cargo run --release -p utimer-cli -- bench --quick --json "$out"
python3 - "$out" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
assert isinstance(rows, list) and rows, "no rows"
for r in rows:
    for k in ("group", "case", "impl"):
        assert k in r, (k, r)
groups = {r["group"] for r in rows}
print(f"bench smoke: {len(rows)} rows in {len(groups)} groups")
PY
