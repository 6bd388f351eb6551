#!/bin/sh
# Build and run the C conformance tests (see the README comment in check.h).
#   run.sh [OUTDIR]            run against the kernel/glibc
#   PRELOAD=/path/libutimer_posix.so run.sh [OUTDIR]   run under LD_PRELOAD
# Exit status: 0 when every program printed "<name>: ok" and exited 0.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-${TMPDIR:-/tmp}/utimer-c-tests}
cc=${CC:-cc}
mkdir -p "$out"
status=0
for name in timers overrun signals timerfd fork inherit sigsafe sched; do
    if ! "$cc" -std=gnu11 -Wall -Wextra -Werror -O1 -g -pthread \
        "$here/$name.c" -o "$out/$name" -lrt; then
        echo "$name: BUILD FAILED"
        status=1
        continue
    fi
    start=$(date +%s%N)
    if [ -n "${PRELOAD:-}" ]; then
        LD_PRELOAD=$PRELOAD "$out/$name" >"$out/$name.stdout"
    else
        "$out/$name" >"$out/$name.stdout"
    fi
    rc=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    last=$(tail -n 1 "$out/$name.stdout")
    if [ "$rc" -eq 0 ] && [ "$last" = "$name: ok" ]; then
        echo "$name: ok (${ms} ms)"
    else
        echo "$name: FAILED (exit $rc, ${ms} ms, last line: '$last')"
        status=1
    fi
done
exit $status
