#!/usr/bin/env bash
# The unsafe core under Miri: timer allocation and freeing (entry/, timer/),
# the sleepers' intrusive heap (hrtimer/sleeper/),
# the base lock guard and lock_timer_base, migration, callbacks (a handle
# dropped inside its own callback, and while its callback runs elsewhere:
# the deferred free), the state word, shutdown, and the hot-unplug's batch
# move of pending timers (timer_list/base/hotplug.rs); the pull model's hierarchy
# (migration::) has no unsafe code but runs here too. The wheel has no unsafe
# code and is tested natively. Installs a nightly toolchain with Miri if
# needed.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^miri'; then
  rustup toolchain install nightly --profile minimal --component miri,rust-src
fi
cargo +nightly miri setup
# Isolation off: the monotonic clock is read through libc. Few proptest cases:
# Miri is ~1000x slower than native code.
MIRIFLAGS="-Zmiri-disable-isolation ${MIRIFLAGS:-}" PROPTEST_CASES=4 CARGO_TARGET_DIR=target/miri \
  cargo +nightly miri test -p utimer --lib --test callbacks --test bad_input --test model --test delete_sync \
  --test defects --test hotplug \
  -- --skip posix::table timer:: base:: sync::summary:: entry:: clock:: migration:: an_offline_workers arms_on_an_offline bad_hotplug callback rearm drop delete past huge outliving misuse panicking \
  timers_match_model waits pending from_its try_ shutdown reduce_never stale just_before_the_last_tick saturates \
  hrtimer::sleeper
# A cancelled timer's entry kept as the wheel's ghost (wheel/ghost.rs):
# cancelled, dropped and its memory reused while the ghost still holds its
# address; hot-unplug and shutdown with a ghost present. And a stale base's
# forward, which marks the timers of the buckets it takes out due
# (BaseGuard::forward: a pointer dereferenced per timer, under the lock).
MIRIFLAGS="-Zmiri-disable-isolation ${MIRIFLAGS:-}" CARGO_TARGET_DIR=target/miri \
  cargo +nightly miri test -p utimer --test cancel_rearm --test stale_base
# The intrusive sleepers (HrSleeper: raw pointers into pinned memory, a
# pairing heap): every test of the file, the threaded race included.
MIRIFLAGS="-Zmiri-disable-isolation ${MIRIFLAGS:-}" CARGO_TARGET_DIR=target/miri \
  cargo +nightly miri test -p utimer --test hr_sleeper
# The POSIX ID table (posix::table: epoch-reclaimed slots, racing lookups)
# under Tree Borrows: crossbeam-epoch's intrusive list of threads is known
# not to fit Stacked Borrows and to be clean under Tree Borrows, the model
# crossbeam's own CI runs it under (crossbeam-rs/crossbeam#545, #996).
# Leaks are not checked here: garbage still queued in the process-wide
# collector at exit is never freed (by design), and crossbeam keeps its
# pointers as integers, so Miri cannot see them as reachable. That each
# value is dropped exactly once is what the table's own tests count.
MIRIFLAGS="-Zmiri-disable-isolation -Zmiri-tree-borrows -Zmiri-ignore-leaks -Zmiri-permissive-provenance ${MIRIFLAGS:-}" PROPTEST_CASES=4 CARGO_TARGET_DIR=target/miri \
  cargo +nightly miri test -p utimer --lib -- posix::table
