#!/usr/bin/env bash
# `make install` as a C user meets it, into a prefix that the dynamic
# loader does not search (a scratch directory), with the steps that the
# README and the Makefile's header give for one:
# - the installed libraries are stripped (no debug sections; the shared
#   ones without a static symbol table) and still export and link utimer's
#   functions; `make install` prints the loader step for such a prefix;
# - every ```c block of README.md and docs/*.md is a complete program
#   (the README's is crates/utimer-capi/examples/hello.c, as it says),
#   built with PKG_CONFIG_PATH and pkg-config alone: it does not start
#   without a step (libutimer.so.0 not found), and runs with each one:
#   LD_LIBRARY_PATH, an rpath; statically against libutimer.a too;
# - the installed drop-in, preloaded by its path with
#   UTIMER_POSIX=verbose, prints its one line on stderr, and the README's
#   checks of a running program (/proc/PID/maps, the threads' names) find
#   it.
# Installs Debian's make, pkg-config, binutils and gcc if missing, as the
# other scripts install what they need.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v make >/dev/null 2>&1 || missing+=(make)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
command -v readelf >/dev/null 2>&1 || missing+=(binutils)
command -v "${CC:-cc}" >/dev/null 2>&1 || missing+=(gcc)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
lib="$prefix/lib"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# --- make install ----------------------------------------------------------
make -s install PREFIX="$prefix" >"$tmp/install.log"
cat "$tmp/install.log"
grep -qF "LD_LIBRARY_PATH=$lib" "$tmp/install.log" ||
  fail "make install did not print the loader step for $prefix"
for so in "$lib/libutimer.so.0.1.0" "$lib/libutimer_posix.so"; do
  sections=$(readelf -SW "$so")
  if grep -qE ' \.(debug_[a-z_]+|symtab) ' <<<"$sections"; then
    fail "${so##*/} is not stripped: $(grep -oE ' \.(debug_[a-z_]+|symtab) ' <<<"$sections" | tr -d ' ' | tr '\n' ' ')"
  fi
  echo "${so##*/}: stripped, $(stat -c %s "$so") bytes"
done
# Read whole, then searched: `grep -q` stops at the first match, and under
# pipefail the writer it leaves behind (killed by SIGPIPE) would fail the
# check once the symbol table outgrows a pipe's buffer.
dynsyms=$(readelf -sW --dyn-syms "$lib/libutimer.so.0.1.0")
grep -qw utimer_open <<<"$dynsyms" ||
  fail "libutimer.so exports no utimer_open"
archive=$(readelf -SW "$lib/libutimer.a")
if grep -qE ' \.debug_' <<<"$archive"; then
  fail "libutimer.a keeps debug sections"
fi
echo "libutimer.a: no debug sections, $(stat -c %s "$lib/libutimer.a") bytes"

# --- the docs' C programs against the installed library ---------------------
# hello.c as the README shows it, byte for byte.
awk '/^```c$/ { f = 1; next } /^```/ { f = 0 } f' README.md |
  diff - crates/utimer-capi/examples/hello.c >/dev/null ||
  fail "README.md's C program is not crates/utimer-capi/examples/hello.c"
n=0
for md in README.md docs/*.md; do
  n0=$n
  n=$(awk -v dir="$tmp" -v base="$n" -v name="${md//\//_}" '
    /^```c$/ { f = 1; n++; file = sprintf("%s/snippet-%d-%s.c", dir, base + n, name); next }
    /^```/ { f = 0 }
    f { print > file }
    END { print base + n }' "$md")
  [ "$n" -gt "$n0" ] && echo "$md: $((n - n0)) C block(s)"
done
[ "$n" -ge 1 ] || fail "no C block in README.md"
export PKG_CONFIG_PATH="$lib/pkgconfig"
for src in "$tmp"/snippet-*.c; do
  name=$(basename "$src" .c)
  # The README's command line, then the documented rpath variant.
  # shellcheck disable=SC2046
  "$cc" -std=c11 -Wall -Wextra -Werror "$src" $(pkg-config --cflags --libs utimer) -o "$tmp/$name"
  # shellcheck disable=SC2046
  "$cc" -std=c11 -Wall -Wextra -Werror "$src" $(pkg-config --cflags --libs utimer) \
    -Wl,-rpath,"$lib" -o "$tmp/$name-rpath"
  # shellcheck disable=SC2046
  "$cc" -std=c11 -Wall -Wextra -Werror "$src" $(pkg-config --cflags utimer) "$lib/libutimer.a" \
    $(pkg-config --static --libs-only-l utimer | sed 's/-lutimer//') -o "$tmp/$name-static"
  if env -u LD_LIBRARY_PATH "$tmp/$name" >"$tmp/$name.out" 2>&1; then
    fail "$name ran without the loader step: is $lib a system directory?"
  fi
  grep -q 'libutimer.so.0: cannot open shared object file' "$tmp/$name.out" ||
    fail "$name without the loader step: $(cat "$tmp/$name.out")"
  LD_LIBRARY_PATH="$lib" "$tmp/$name" || fail "$name with LD_LIBRARY_PATH=$lib"
  env -u LD_LIBRARY_PATH "$tmp/$name-rpath" || fail "$name built with -Wl,-rpath,$lib"
  "$tmp/$name-static" || fail "$name linked with libutimer.a"
  echo "$name: runs with LD_LIBRARY_PATH, with an rpath and static (not without a step)"
done

# --- the drop-in from the prefix ----------------------------------------------
cat >"$tmp/periodic.c" <<'EOF'
#include <stdint.h>
#include <stdio.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
int main(void) { /* 20 expirations of a 50 ms timerfd: a second */
    struct itimerspec every50ms = {{0, 50000000}, {0, 50000000}};
    int fd = timerfd_create(CLOCK_MONOTONIC, 0);
    uint64_t n, total = 0;
    if (fd < 0 || timerfd_settime(fd, 0, &every50ms, NULL)) return perror("timerfd"), 1;
    while (total < 20 && read(fd, &n, sizeof n) == sizeof n) total += n;
    printf("expirations: %llu\n", (unsigned long long)total);
    return total >= 20 ? 0 : 1;
}
EOF
"$cc" -std=gnu11 -Wall -Wextra -Werror "$tmp/periodic.c" -o "$tmp/periodic"
UTIMER_POSIX=verbose LD_PRELOAD="$lib/libutimer_posix.so" "$tmp/periodic" \
  >"$tmp/periodic.out" 2>"$tmp/periodic.err" &
pid=$!
sleep 0.5
# The README's checks of a running program.
maps=$(grep -c libutimer_posix "/proc/$pid/maps" || true)
workers=$(grep -h utimer "/proc/$pid/task/"*/comm 2>/dev/null | grep -c '^utimer-worker-' || true)
wait "$pid" || fail "the preloaded program: exit $?: $(cat "$tmp/periodic.out" "$tmp/periodic.err")"
[ "$maps" -gt 0 ] || fail "libutimer_posix.so not in /proc/$pid/maps"
[ "$workers" -gt 0 ] || fail "no utimer-worker thread in /proc/$pid/task/*/comm"
lines=$(grep -c utimer "$tmp/periodic.err" || true)
[ "$lines" -eq 1 ] || fail "UTIMER_POSIX=verbose: $lines lines naming utimer on stderr: $(cat "$tmp/periodic.err")"
grep -q "^utimer-posix: pid $pid: " "$tmp/periodic.err" || fail "verbose line: $(cat "$tmp/periodic.err")"
cat "$tmp/periodic.out" "$tmp/periodic.err"
echo "drop-in: preloaded from $lib, in /proc/PID/maps, $workers utimer-worker thread(s), one verbose line"
LD_PRELOAD="$lib/libutimer_posix.so" "$tmp/periodic" >/dev/null 2>"$tmp/quiet.err" || fail "the preloaded program, not verbose"
[ ! -s "$tmp/quiet.err" ] || fail "stderr without UTIMER_POSIX=verbose: $(cat "$tmp/quiet.err")"
echo "install: ok"
