#!/usr/bin/env bash
# tokio's own timer tests, run against utimer-async: tokio's
# tests/time_{sleep,interval,timeout,pause,rt,panic}.rs and tokio-util's
# tests/time_delay_queue.rs, taken from the `.crate` files that cargo's
# registry cache holds for the versions in Cargo.lock (published crates
# ship their tests/), copied into a scratch crate under target/, and run
# twice: as published (tokio's own run, the reference) and with every path
# into `tokio::time` switched to `utimer_async` by sed (`use tokio::time::{self,
# ..}` becomes `use utimer_async::{self as time, ..}`, `tokio::time::X`
# written out in a test body becomes `utimer_async::X`, as a program that
# switched would have it, and tokio-util's `DelayQueue` becomes
# utimer-async's). No other line of a test is touched, and no tokio code is
# kept in the repository.
#
# Fetches nothing: cargo runs `--offline`. The crates come from the
# registry cache, where the workspace's own builds put them (tokio-test,
# tokio-util and rand 0.9 are dev-dependencies of utimer-async, so that
# they are in the lockfile and the cache).
#
# Prints pass/fail per file for both runs, and fails if a switched test
# fails that is not in EXPECTED below (tests of tokio's runtime-context
# panics and of tokio-util's wheel internals: docs/using.md lists each with
# its reason), or if tokio's own run fails.
#   ci/tokio-tests.sh     (KEEP_GOING=1: report, exit 0; UTIMER_FEATURES="tokio
#                          stream delay-queue": utimer-async without test-util)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/target/tokio-tests
crate=$out/crate
cache_dirs=("${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/)

# The version Cargo.lock holds for a package (the highest, if several).
locked() {
  awk -v n="$1" '$0 == "name = \"" n "\"" { getline; gsub(/version = |"/, ""); print }' Cargo.lock |
    sort -V | tail -1
}
# The path of a package's .crate in the registry cache.
crate_file() {
  local d f
  for d in "${cache_dirs[@]}"; do
    f=$d$1-$2.crate
    if [ -f "$f" ]; then
      printf '%s' "$f"
      return 0
    fi
  done
  echo "ci/tokio-tests.sh: $1 $2 is not in cargo's registry cache; build the workspace's tests once (cargo test --workspace --no-run) to fetch it" >&2
  return 1
}

tokio_v=$(locked tokio)
util_v=$(locked tokio-util)
test_v=$(locked tokio-test)
futures_v=$(locked futures)
rand_v=$(awk '$0 == "name = \"rand\"" { getline; gsub(/version = |"/, ""); print }' Cargo.lock | { grep '^0\.9\.' || true; } | tail -1)
for p in "tokio $tokio_v" "tokio-util $util_v" "tokio-test $test_v" "futures $futures_v" "rand $rand_v"; do
  # shellcheck disable=SC2086 # a name and a version
  set -- $p
  [ -n "${2:-}" ] || { echo "ci/tokio-tests.sh: no $1 in Cargo.lock" >&2; exit 1; }
  crate_file "$1" "$2" >/dev/null
done

rm -rf "$out/src" "$crate/tests"
mkdir -p "$out/src" "$crate/tests/support"
tar -xzf "$(crate_file tokio "$tokio_v")" -C "$out/src"
tar -xzf "$(crate_file tokio-util "$util_v")" -C "$out/src"
tokio_src=$out/src/tokio-$tokio_v
util_src=$out/src/tokio-util-$util_v

# The test files, by short name.
files=(time_sleep time_interval time_timeout time_pause time_rt time_panic time_delay_queue)
src_of() {
  if [ "$1" = time_delay_queue ]; then
    printf '%s' "$util_src/tests/$1.rs"
  else
    printf '%s' "$tokio_src/tests/$1.rs"
  fi
}
switch() {
  sed -E \
    -e 's/use tokio::time::\{self([,}])/use utimer_async::{self as time\1/' \
    -e 's/use tokio::time;/use utimer_async as time;/' \
    -e 's/\btokio::time::/utimer_async::/g' \
    -e 's/\btokio_util::time::DelayQueue\b/utimer_async::DelayQueue/g' \
    "$1"
}
cp "$tokio_src/tests/support/panic.rs" "$crate/tests/support/"
for f in "${files[@]}"; do
  cp "$(src_of "$f")" "$crate/tests/tokio_$f.rs"
  switch "$(src_of "$f")" >"$crate/tests/utimer_$f.rs"
  # Nothing of tokio's timer API may be left in the switched copy's
  # imports.
  if grep -nE '^\s*use (tokio::time|tokio_util::time)' "$crate/tests/utimer_$f.rs"; then
    echo "ci/tokio-tests.sh: an import of tokio's timers is left in $f.rs" >&2
    exit 1
  fi
done

# utimer-async's features: `test-util` makes `time::pause()`, `advance` and
# `resume` (utimer-async's, after the switch) tokio's inside a runtime.
# shellcheck disable=SC2046 # one word per feature
features=$(printf '"%s", ' $(echo "${UTIMER_FEATURES:-tokio test-util stream delay-queue}" | tr ',' ' '))
features=${features%, }

# The tests' `#![cfg(feature = "full")]` and the like name features of the
# crate they are compiled in: this one has them all on.
cat >"$crate/Cargo.toml" <<EOF
[package]
name = "tokio-timer-tests"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[lints.rust]
unexpected_cfgs = "allow"

[features]
default = ["full", "rt", "rt-multi-thread", "macros", "time", "sync", "net", "io-util", "test-util"]
full = []
rt = []
rt-multi-thread = []
macros = []
time = []
sync = []
net = []
io-util = []
test-util = []

[dev-dependencies]
tokio = { version = "=$tokio_v", features = ["rt", "rt-multi-thread", "macros", "time", "sync", "net", "io-util", "test-util"] }
tokio-util = { version = "=$util_v", features = ["time"] }
tokio-test = "=$test_v"
futures = "=$futures_v"
rand = "=$rand_v"
utimer-async = { path = "$root/crates/utimer-async", features = [$features] }
EOF
mkdir -p "$crate/src"
echo "//! The tests are in tests/." >"$crate/src/lib.rs"
# The workspace's versions for everything both resolve.
cp Cargo.lock "$crate/Cargo.lock"

# The switched tests that may fail, with why (docs/using.md, "tokio's own
# timer tests").
EXPECTED=(
  # tokio's runtime-context panics: making a sleep outside a runtime, and a
  # timeout in a runtime without a time driver, panic in tokio; utimer-async
  # needs neither (its timers are utimer's).
  "time_sleep::creating_sleep_outside_of_context"
  "time_panic::timeout_panic_caller"
  "time_panic::timeout_at_panic_caller"
  # tokio-util's wheel: a reset into a coarser slot wakes the task so that
  # the wheel can advance; a queue on one exact timer has nothing to advance.
  "time_delay_queue::reset_later_after_slot_starts"
)

# The workspace's target directory: what both build alike is built once.
export CARGO_TARGET_DIR=$root/target
if ! (cd "$crate" && cargo test --offline -q --no-run) >"$out/build.log" 2>&1; then
  cat "$out/build.log"
  exit 1
fi

declare -A passed total failed
unexpected=()
for side in tokio utimer; do
  for f in "${files[@]}"; do
    log=$out/$side-$f.log
    (cd "$crate" && cargo test --offline --test "${side}_$f" -- --test-threads=2 >"$log" 2>&1) || true
    p=$(sed -nE 's/^test result: .* ([0-9]+) passed.*/\1/p' "$log" | tail -1)
    n=$(grep -cE '^test .* \.\.\. (ok|FAILED|ignored)' "$log" || true)
    fl=$(sed -nE 's/^test ([^ ]*).* \.\.\. FAILED$/\1/p' "$log" | sort | tr '\n' ' ')
    if ! grep -q '^test result: ' "$log"; then
      p=0 fl="(the test binary did not finish: see $log)"
    fi
    passed[$side,$f]=${p:-0} total[$side,$f]=$n failed[$side,$f]=$fl
    for t in $fl; do
      if [ "$side" = tokio ]; then
        unexpected+=("tokio's own $f::$t")
      else
        case " ${EXPECTED[*]} " in
          *" $f::$t "*) ;;
          *) unexpected+=("$f::$t") ;;
        esac
      fi
    done
  done
done

printf '%-18s %12s %14s  %s\n' file "tokio $tokio_v" utimer-async "failing after the switch"
sum_t=0 sum_u=0 sum_n=0
for f in "${files[@]}"; do
  printf '%-18s %5s of %-4s %7s of %-4s  %s\n' "$f" "${passed[tokio,$f]}" "${total[tokio,$f]}" \
    "${passed[utimer,$f]}" "${total[utimer,$f]}" "${failed[utimer,$f]}"
  sum_t=$((sum_t + passed[tokio,$f])) sum_u=$((sum_u + passed[utimer,$f])) sum_n=$((sum_n + total[utimer,$f]))
done
printf '%-18s %5s of %-4s %7s of %-4s\n' all "$sum_t" "$sum_n" "$sum_u" "$sum_n"
if [ ${#unexpected[@]} -gt 0 ]; then
  echo "unexpected failures (logs in $out):"
  printf '  %s\n' "${unexpected[@]}"
  [ "${KEEP_GOING:-0}" = 1 ] || exit 1
fi
