#!/usr/bin/env bash
# The main job runs and writes well-formed JSON with the run's metadata
# (speed is not judged here: see README for how the numbers are taken).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${CARGO_TARGET_DIR:-target}/bench-smoke.json"
mkdir -p "$(dirname "$out")"
cargo run --release -p utimer-cli -- bench --quick --json "$out"
python3 - "$out" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert isinstance(doc, dict) and doc.get("schema") == 2, "not a schema-2 file"
meta, rows = doc["meta"], doc["results"]
for k in ("tool", "date", "mode", "filter", "machine", "method", "duration_s"):
    assert k in meta, k
for k in ("version", "git_revision"):
    assert meta["tool"][k], k
for k in ("cpu_model", "cpus", "kernel"):
    assert meta["machine"][k], k
assert meta["mode"] == "quick", meta["mode"]
assert isinstance(rows, list) and rows, "no rows"
for r in rows:
    for k in ("group", "case", "impl"):
        assert k in r, (k, r)
groups = {r["group"] for r in rows}
print(f"bench smoke: {len(rows)} rows in {len(groups)} groups "
      f"({meta['machine']['cpu_model']}, git {meta['tool']['git_revision'][:12]})")
PY
# Fast paths: --list measures nothing, an unmatched filter fails at once.
bin="${CARGO_TARGET_DIR:-target}/release/utimer"
# Read whole, then searched (`grep -q` on a pipe fails under pipefail when
# it stops before the writer is done).
list=$("$bin" bench --list)
grep -qx 'arm_cancel/empty' <<<"$list"
if "$bin" bench --filter no-such-case 2>/dev/null; then
  echo "bench smoke: an unmatched filter did not fail" >&2
  exit 1
fi
