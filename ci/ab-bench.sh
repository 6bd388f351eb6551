#!/usr/bin/env bash
# Before/after benchmark of the hot paths, by hand (not a CI job): builds
# REV (default: origin's main, else HEAD~1) in a git worktree and this
# checkout, then runs `utimer bench --quick --filter CASE` for each case,
# ROUNDS times, alternating which binary goes first, and prints the median
# and the best round of each utimer row (and the seed rows) for both.
#   ci/ab-bench.sh [REV] [ROUNDS]      (CASES="filter ..." picks other cases)
#
# A few-nanosecond row can move by 10-25% with nothing but where the
# compiler happened to put its loop: on CPUs with Intel's jump-alignment
# erratum (JCC), a jump that crosses or ends on a 32-byte boundary is not
# served from the decoded-instruction cache. ALIGN=1 builds both sides
# with branches kept inside 32-byte blocks (and their own target
# directories), so that what remains is the work each side does; quote
# both tables when they disagree.
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:-HEAD~1}
rounds=${2:-3}
out=target/ab
rm -rf "$out/json"; mkdir -p "$out/json"
if [ ! -d "$out/old-tree" ]; then
  git worktree add --detach "$out/old-tree" "$rev" >/dev/null
else
  git -C "$out/old-tree" checkout --detach -q "$rev"
fi
if [ "${ALIGN:-0}" = 1 ]; then
  export RUSTFLAGS="${RUSTFLAGS:-} -C llvm-args=-x86-branches-within-32B-boundaries"
  (cd "$out/old-tree" && CARGO_TARGET_DIR="$PWD/../old-target-aligned" cargo build --release -q -p utimer-cli)
  CARGO_TARGET_DIR="$out/new-target-aligned" cargo build --release -q -p utimer-cli
  old="$out/old-target-aligned/release/utimer"
  new="$out/new-target-aligned/release/utimer"
else
  (cd "$out/old-tree" && CARGO_TARGET_DIR="$PWD/../old-target" cargo build --release -q -p utimer-cli)
  cargo build --release -q -p utimer-cli
  old="$out/old-target/release/utimer"
  new="${CARGO_TARGET_DIR:-target}/release/utimer"
fi
cases=${CASES:-"arm_cancel/ rearm/ expiry/ arm_cancel_pending/1K wheel/ threads/ seed000/warm seed004/enqueue"}
for r in $(seq 1 "$rounds"); do
  if (( r % 2 )); then order="old new"; else order="new old"; fi
  for c in $cases; do
    for which in $order; do
      bin=$old; [ "$which" = new ] && bin=$new
      "$bin" bench --quick --filter "$c" --json "$out/json/$which-$r-${c//\//_}.json" >/dev/null
    done
  done
done
python3 - "$out/json" "$rev" <<'PY'
import collections, glob, json, statistics, sys
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for path in glob.glob(sys.argv[1] + "/*.json"):
    which = path.rsplit("/", 1)[1].split("-")[0]
    for x in json.load(open(path)):
        if x["impl"].startswith("utimer") or x["group"] in ("seed000", "seed004"):
            rows[(x["group"], x["case"], x["impl"])][which].append(x["value"])
# Medians, and the best round of each (on a shared machine a round that
# another tenant slowed down moves the median of a few rounds; the best one
# is what the code itself allows).
print(f"{'case':70} {sys.argv[2]:>10} {'this':>10} change   best: {sys.argv[2]:>8} {'this':>8} change")
for key in sorted(rows):
    o, n = rows[key]["old"], rows[key]["new"]
    if o and n:
        mo, mn = statistics.median(o), statistics.median(n)
        bo, bn = min(o), min(n)
        if key[0] == "memory":
            bo, bn = mo, mn
        print(f"{'/'.join(key):70} {mo:10.2f} {mn:10.2f} {100 * (mn - mo) / mo:+6.1f}%        {bo:8.2f} {bn:8.2f} {100 * (bn - bo) / bo:+6.1f}%")
PY
