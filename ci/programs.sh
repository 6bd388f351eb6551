#!/usr/bin/env bash
# Other projects' real programs, unmodified, on the kernel's timers and on
# libutimer_posix.so, side by side: installs stress-ng and cyclictest
# (Debian's stress-ng and rt-tests) if missing, builds the library and the
# `utimer` tool, and runs `utimer programs`, which runs each program on
# both sides, checks the preload was in effect, and prints the markdown
# table (what runs and what is checked: `utimer programs --help` and the
# essay of crates/utimer-cli/src/programs.rs). Exits non-zero on any
# correctness failure on either side; the performance targets are
# printed, not enforced.
#   ci/programs.sh [LIB]
# LIB defaults to target/release/libutimer_posix.so, built first (cargo
# build --release -p utimer-posix). UTIMER_POSIX_LIB=none (or "none" or an
# empty string as the argument) runs the kernel twice: the run checked end
# to end without the library. Environment:
#   SECONDS_EACH  seconds per stress-ng run, and cyclictest runs
#                 SECONDS_EACH x 1000 loops of 1 ms (default 4: ~1 minute)
#   OUT           also write the markdown to this file (docs/programs.md)
#   CYCLIC_PRIO   cyclictest's SCHED_FIFO priority (-p), used when permitted
#                 (default 80; 0: none)
#   USER_TIMERS   1: also fail when a preload run of timer, hrtimers or
#                 cyclictest (CLOCK_REALTIME/MONOTONIC timers only) shows a
#                 kernel POSIX timer (default 0: marked in the table)
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
default_lib="$target/release/libutimer_posix.so"
lib=${1-${UTIMER_POSIX_LIB-$default_lib}}
[ -n "$lib" ] || lib=none

missing=()
command -v stress-ng >/dev/null 2>&1 || missing+=(stress-ng)
command -v cyclictest >/dev/null 2>&1 || missing+=(rt-tests)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

packages=(-p utimer-cli)
[ "$lib" = "$default_lib" ] && packages+=(-p utimer-posix)
cargo build --release -q "${packages[@]}"

args=(--lib "$lib" --seconds "${SECONDS_EACH:-4}" --cyclic-prio "${CYCLIC_PRIO:-80}")
[ -z "${OUT:-}" ] || args+=(--out "$OUT")
[ "${USER_TIMERS:-0}" != 1 ] || args+=(--user-timers)
exec "$target/release/utimer" programs "${args[@]}"
