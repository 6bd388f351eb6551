#!/usr/bin/env bash
# Loom models of the cross-thread protocols: crates/utimer/tests/loom.rs
# (modify, migration, expiry, drop racing a running callback and a re-arm,
# delete_sync, shutdown_sync, a stale base's forward racing a cancel and
# re-arm), the parker's model in src/sync/parker.rs,
# the pull model's hierarchy (src/migration/tests.rs: the state word's
# sequence-counter race, the last idle worker's wake-up, a new timer racing
# it) and remote expiry (src/nohz/pull.rs: a stalled worker and its
# migrator sharing a base, delete_sync against a remote expiry, a stall
# racing the stalled worker's return to work and its next arm).
# tests/loom_hrtimer.rs models the hrtimer expiry against cancel-and-wait,
# restarts, starts from other threads and the handle's drop;
# tests/loom_sleeper.rs models the intrusive sleepers (HrSleeper, what
# utimer-async's Sleep is) against their owner's drop, poll and restart;
# src/sync/biased/tests.rs models the biased base lock (the owner's fast
# path against a remote's revocation, and the re-bias), with membarrier
# and the owner's compiler fence as SeqCst fences.
# src/sync/summary/tests.rs models next_expiry's per-worker summary (a
# reader's claim, locked reads and publish against sources changing on
# other threads).
# src/system/serve.rs models the hand-over of the hrtimers between a thread
# that serves them while it sleeps and the workers: a release racing a
# worker going to sleep, an unpark racing its plan.
# src/posix/table/tests.rs models the POSIX ID table's lock-free lookup
# against removal, growth and slot reuse, with crossbeam-epoch itself built
# on loom (--cfg crossbeam_loom).
# Under --cfg loom every atomic, the base lock, the lock-protected cells and
# the thread-locals come from loom (src/sync).
set -euo pipefail
cd "$(dirname "$0")/.."
RUSTFLAGS="--cfg loom --cfg crossbeam_loom ${RUSTFLAGS:-}" CARGO_TARGET_DIR=target/loom \
  cargo test -p utimer --release --lib --test loom --test loom_hrtimer --test loom_sleeper -- --test-threads=1
