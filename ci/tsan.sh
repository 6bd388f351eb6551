#!/usr/bin/env bash
# ThreadSanitizer over the tests with real cross-thread activity: shared
# timers armed, modified and deleted by several threads while another
# expires them (tests/concurrency.rs), the Runtime's worker threads,
# tickless idle and shutdown (runtime.rs), the pull model and remote expiry
# (migration.rs; the lib's migration:: and nohz:: unit tests), delete_sync
# against running callbacks (delete_sync.rs, callbacks.rs), hot-unplug
# (hotplug.rs), hrtimers and the intrusive sleepers (hrtimer.rs,
# hr_sleeper.rs), and the POSIX timers with their lock-free ID table
# (posix.rs, the lib's posix::table tests, crossbeam-epoch included).
# The whole standard library is rebuilt instrumented (-Zbuild-std), so its
# locks and channels are seen too. Any report fails the run
# (halt_on_error); none is suppressed today (a ci/tsan.supp, if one is
# ever needed, would hold the known false positives, each with why, and is
# then used). Runs on the pinned nightly (ci/toolchains.sh), installed with
# rust-src if missing.
#
# Usage: ci/tsan.sh [ROUNDS]  (or TSAN_ROUNDS=N): how many times the
# selected tests run; CI runs 1, by hand e.g. `ci/tsan.sh 20` for a longer
# hunt (races that need a rare interleaving).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-${TSAN_ROUNDS:-1}}
. ci/toolchains.sh
use_nightly rust-src
target=$(rustc -vV | sed -n 's/^host: //p')
export RUSTFLAGS="-Zsanitizer=thread ${RUSTFLAGS:-}"
export RUSTDOCFLAGS="-Zsanitizer=thread ${RUSTDOCFLAGS:-}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/tsan"
# second_deadlock_stack: both stacks of a lock-order report.
supp=""
if [[ -f ci/tsan.supp ]]; then supp="suppressions=$PWD/ci/tsan.supp"; fi
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 history_size=4 $supp ${TSAN_OPTIONS:-}"
# No backtraces: symbolizing one under TSan takes seconds, which the tests
# that panic on purpose (a panicking job or callback) would wait past their
# bounds.
export RUST_BACKTRACE=0
# Fewer proptest cases: instrumented code is 5-15x slower.
export PROPTEST_CASES=${PROPTEST_CASES:-16}
cargo_test() {
  cargo +"$NIGHTLY" test -Zbuild-std --target "$target" -p utimer "$@"
}
tests=(--test concurrency --test runtime --test migration --test delete_sync --test callbacks
  --test hotplug --test hrtimer --test hr_sleeper --test posix)
cargo_test --lib "${tests[@]}" --no-run
for ((i = 1; i <= rounds; i++)); do
  echo "--- tsan round $i/$rounds"
  cargo_test --lib -- migration:: nohz:: posix::table
  cargo_test "${tests[@]}"
done
