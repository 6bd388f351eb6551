#!/usr/bin/env bash
# The soak (crates/utimer/examples/soak.rs), in release mode: 8 threads of
# random arms, re-arms, reduce, delete, delete_sync and dropped handles on a
# Runtime of 4 workers, callbacks that re-arm themselves, a worker taken
# offline and back now and then, and a few hrtimers per thread. Prints one
# line and fails on any early, double or lost firing, overlapping
# callbacks, or counters (stats, hr_stats) that do not balance.
#
# Usage: ci/soak.sh [OPS_PER_THREAD] (or SOAK_OPS=N; SOAK_SEED=N picks the
# seed, 1 by default). CI runs 200000 per thread; by hand, e.g.
# `ci/soak.sh 10000000` (8 x 10M operations, a few minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
ops=${1:-${SOAK_OPS:-200000}}
cargo run --release -q -p utimer --example soak -- \
  --threads 8 --ops "$ops" --seed "${SOAK_SEED:-1}"
