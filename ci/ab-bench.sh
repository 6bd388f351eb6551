#!/usr/bin/env bash
# Before/after benchmark of the hot paths, by hand (not a CI job): builds
# REV (default: origin's main, else HEAD~1) in a git worktree and this
# checkout (the utimer tool, and the drop-in library that the posix-dropin
# rows load from beside it), then runs `utimer bench --quick --filter CASE` for each case,
# ROUNDS times, alternating which binary goes first, and prints the median
# and the best round of each utimer row (and the kernel replays' rows) for
# both.
#   ci/ab-bench.sh [REV] [ROUNDS]      (CASES="filter ..." picks other cases)
#
# Commits from before the bench groups were named for what they measure
# call them seed000, seed002, seed003-*, seed004: the alias tables below map
# those names (and the row labels that changed with them) to today's, so
# REV's binary is given each filter in its own names and its rows pair with
# this checkout's.
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
# OLD=NEW. Groups: seed003 is the prefix of the four POSIX groups
# (seed003-lookup is posix-lookup, ...), which `--filter seed003` selected.
GROUP_ALIASES=(
  "seed000=delete_sync"
  "seed002=rearm_shares"
  "seed003=posix"
  "seed004=pull_model"
)
# Row labels.
LABEL_ALIASES=(
  "global lock (idr_lock, before seed 003)=global lock (idr_lock, before 2011)"
  "utimer: always local (after seed 004)=utimer: always local (pull model)"
  "push heuristic (before seed 004)=push heuristic (before the pull model)"
)
rm -rf "$out/json"; mkdir -p "$out/json"
if [ ! -d "$out/old-tree" ]; then
  git worktree add --detach "$out/old-tree" "$rev" >/dev/null
else
  git -C "$out/old-tree" checkout --detach -q "$rev"
fi
# Whether REV still has the old group names.
old_names=0
if grep -rqsE '"seed00[0-9]' "$out/old-tree/crates/utimer-bench/src"; then old_names=1; fi
# A filter as REV's binary spells it: in the old group names if REV has them.
old_filter() {
  local f=$1 a
  if (( old_names )); then
    for a in "${GROUP_ALIASES[@]}"; do
      f=${f//"${a#*=}"/"${a%%=*}"}
    done
  fi
  printf '%s' "$f"
}
if [ "${ALIGN:-0}" = 1 ]; then
  export RUSTFLAGS="${RUSTFLAGS:-} -C llvm-args=-x86-branches-within-32B-boundaries"
  (cd "$out/old-tree" && CARGO_TARGET_DIR="$PWD/../old-target-aligned" cargo build --release -q -p utimer-cli -p utimer-posix)
  CARGO_TARGET_DIR="$out/new-target-aligned" cargo build --release -q -p utimer-cli -p utimer-posix
  old="$out/old-target-aligned/release/utimer"
  new="$out/new-target-aligned/release/utimer"
else
  (cd "$out/old-tree" && CARGO_TARGET_DIR="$PWD/../old-target" cargo build --release -q -p utimer-cli -p utimer-posix)
  cargo build --release -q -p utimer-cli -p utimer-posix
  old="$out/old-target/release/utimer"
  new="${CARGO_TARGET_DIR:-target}/release/utimer"
fi
cases=${CASES:-"arm_cancel/ rearm/ expiry/ arm_cancel_pending/1K wheel/ threads/ delete_sync/warm pull_model/enqueue"}
for r in $(seq 1 "$rounds"); do
  if (( r % 2 )); then order="old new"; else order="new old"; fi
  for c in $cases; do
    for which in $order; do
      bin=$old filter=$(old_filter "$c")
      [ "$which" = new ] && bin=$new filter=$c
      "$bin" bench --quick --filter "$filter" --json "$out/json/$which-$r-${c//\//_}.json" >/dev/null
    done
  done
done
python3 - "$out/json" "$rev" "${GROUP_ALIASES[@]}" -- "${LABEL_ALIASES[@]}" <<'PY'
import collections, glob, json, statistics, sys
# The alias tables, OLD=NEW: groups (a prefix: seed003-lookup is
# posix-lookup), then after "--" row labels.
split = sys.argv.index("--")
groups = [a.split("=", 1) for a in sys.argv[3:split]]
labels = dict(a.split("=", 1) for a in sys.argv[split + 1:])
def group_now(g):
    for old, new in groups:
        if g == old or g.startswith(old + "-"):
            return new + g[len(old):]
    return g
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for path in glob.glob(sys.argv[1] + "/*.json"):
    which = path.rsplit("/", 1)[1].split("-")[0]
    doc = json.load(open(path))
    # A bare array of rows before the file had its run's metadata.
    for x in doc["results"] if isinstance(doc, dict) else doc:
        group, impl = group_now(x["group"]), labels.get(x["impl"], x["impl"])
        if impl.startswith("utimer") or group in ("delete_sync", "pull_model"):
            rows[(group, x["case"], impl)][which].append(x["value"])
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
        change = lambda a, b: f"{100 * (b - a) / a:+6.1f}%" if a else "   n/a "
        print(f"{'/'.join(key):70} {mo:10.2f} {mn:10.2f} {change(mo, mn)}        {bo:8.2f} {bn:8.2f} {change(bo, bn)}")
PY
