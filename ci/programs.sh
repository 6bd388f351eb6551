#!/usr/bin/env bash
# Other projects' real programs, unmodified, on the kernel's timers and on
# libutimer_posix.so: each program runs twice in the same run, once with no
# preload and once with LD_PRELOAD=LIB (the order alternates from row to
# row), and a markdown table compares the two. Exits non-zero on any
# correctness failure on either side; the performance targets (stress-ng
# bogo-ops/s >= the kernel's, cyclictest avg and p99 within 1.2x of the
# kernel's) are printed, not enforced.
#   ci/programs.sh [LIB]
# LIB defaults to target/release/libutimer_posix.so, built first (cargo
# build --release -p utimer-posix). UTIMER_POSIX_LIB=none (or "none" or an empty string as the
# argument) runs the kernel twice: the script checked end to end
# without the library. Environment:
#   SECONDS_EACH  seconds per stress-ng run, and cyclictest runs
#                 SECONDS_EACH x 1000 loops of 1 ms (default 4: ~1 minute)
#   OUT           also write the markdown to this file (docs/results.md...)
#   CYCLIC_PRIO   cyclictest's SCHED_FIFO priority (-p), used when permitted
#                 (default 80; 0: none)
#   USER_TIMERS   1: also fail when a preload run of timer, hrtimers or
#                 cyclictest (CLOCK_REALTIME/MONOTONIC timers only) shows a
#                 kernel POSIX timer (default 0: marked in the table)
#
# stress-ng (Debian's stress-ng, installed if missing), one instance each,
# with --verify, ops/s from its --yaml metrics (real time):
#   timer     POSIX timer (CLOCK_REALTIME, SIGEV_SIGNAL SIGRTMIN) re-armed by
#             timer_settime() in its signal handler, timer_getoverrun() there,
#             at --timer-freq 100000 (and --timer-rand: +-12.5% jitter);
#   timerfd   timerfd_create/settime/gettime, poll() + read() (and
#             --timerfd-rand: re-armed after every expiry);
#   clock     timer_create() on CLOCK_REALTIME, CLOCK_MONOTONIC and
#             CLOCK_THREAD_CPUTIME_ID (SIGEV_NONE), one-shot timer_settime()
#             of 1-5000 ns, timer_gettime/getoverrun/delete, beside the
#             clock_* calls (its CPU-time timer may stay the kernel's);
#   hrtimers  8 forked processes, each with its own POSIX timer at random
#             periods of 1 to 65536 ns, signal handler.
# stress-ng 0.15.06's timer and timerfd stressors declare no --verify mode
# (`stress-ng --verifiable`): they check every call's return and fail
# regardless; clock checks its calls only under --verify; hrtimers always.
# A run fails on a non-zero exit, zero bogo-ops, a hang (killed at
# SECONDS_EACH + 60 s) or any fail/verify/error line in its output.
#
# cyclictest (rt-tests) -x: a POSIX timer per thread (SIGEV_THREAD_ID,
# TIMER_ABSTIME, periodic) waited for with sigwait(); -v gives every cycle's
# latency, from which min/avg/p99/max and the first cycle's are computed.
# It needs RT scheduling rights even without -p: as non-root it runs under
# `sudo -n` when that works, else it is skipped (printed, not a failure).
# A run fails on a non-zero exit, a hang, or fewer samples than loops.
#
# The preload is checked, not assumed (unless LIB=none): in every preload
# run ld.so must have loaded and initialised LIB (each run has
# LD_DEBUG=files, whose log says "calling init: LIB"; /proc/PID/maps of
# the program, sampled while it runs, counts too), no kernel run may have
# it, and one LD_DEBUG=bindings run of each program must bind every
# timer_*/timerfd_* symbol that the program itself imports (those it binds
# to libc without the preload) to LIB. The table also shows the most
# kernel POSIX timers seen in /proc/PID/timers during each run: a
# user-space timer is not one of them, so a preload run of timer, hrtimers
# or cyclictest that shows one is marked (a failure with USER_TIMERS=1):
# the library forwarded the call to the kernel.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${SECONDS_EACH:-4}
out=${OUT:-}
prio=${CYCLIC_PRIO:-80}
user_timers=${USER_TIMERS:-0}
target="${CARGO_TARGET_DIR:-target}"
default_lib="$target/release/libutimer_posix.so"
lib=${1-${UTIMER_POSIX_LIB-$default_lib}}
[ "$lib" = none ] && lib=""
case "$secs" in '' | *[!0-9]* | 0)
  echo "SECONDS_EACH must be a positive integer" >&2
  exit 2
  ;;
esac

missing=()
command -v stress-ng >/dev/null 2>&1 || missing+=(stress-ng)
command -v cyclictest >/dev/null 2>&1 || missing+=(rt-tests)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ -n "$lib" ]; then
  if [ "$lib" = "$default_lib" ]; then
    cargo build --release -q -p utimer-posix
  fi
  if [ ! -f "$lib" ]; then
    echo "no such library: $lib" >&2
    exit 2
  fi
  lib=$(realpath "$lib")
  label_b=preload
else
  label_b="kernel (2nd)"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/run"
failures=()
fail() {
  failures+=("$1")
  echo "FAIL: $1" >&2
}

# --- process helpers -------------------------------------------------------

run_priv=() # sudo -n for a program that needs it (cyclictest as non-root)
pcat() {
  if [ ${#run_priv[@]} -gt 0 ]; then
    "${run_priv[@]}" cat "$@" 2>/dev/null || true
  else
    cat "$@" 2>/dev/null || true
  fi
}
alive() {
  local s
  { read -r s <"/proc/$1/stat"; } 2>/dev/null || return 1
  s=${s##*) }
  [ "${s%% *}" != Z ]
}
# ROOT and all its descendants (no /proc/PID/task/*/children on every
# kernel: the parent links come from /proc/*/stat).
tree_pids() {
  local f line pid rest i=0
  local -A kids=()
  for f in /proc/[0-9]*/stat; do
    { read -r line <"$f"; } 2>/dev/null || continue
    pid=${line%% *}
    rest=${line##*) }
    rest=${rest#* }
    kids[${rest%% *}]+=" $pid"
  done
  local -a todo=("$1")
  while [ $i -lt ${#todo[@]} ]; do
    pid=${todo[$i]}
    i=$((i + 1))
    echo "$pid"
    # shellcheck disable=SC2206
    [ -n "${kids[$pid]:-}" ] && todo+=(${kids[$pid]})
  done
  return 0
}

# run_side SIDE LOG TIMEOUT CMD...: runs CMD on the kernel (SIDE k) or
# with the preload (SIDE p; the kernel again when LIB=none), output in LOG,
# and samples its process tree (every 0.1 s, then every 0.5 s). Sets
# run_rc, run_hung, run_mapped (yes/no: ld.so initialised LIB in this run,
# or LIB seen in a /proc/PID/maps) and run_ktimers (the most kernel POSIX
# timers in the tree's /proc/PID/timers at one sample; a busy program can
# starve the sampler, so this one can only undercount).
run_side() {
  local side=$1 log=$2 limit=$3
  shift 3
  # LD_DEBUG=files on both sides: ld.so logs, at startup only, each
  # object it loads and initialises.
  local envs=(env -u LD_PRELOAD LD_DEBUG=files LD_DEBUG_OUTPUT="$log.ld")
  [ "$side" = p ] && [ -n "$lib" ] && envs=(env LD_PRELOAD="$lib" LD_DEBUG=files LD_DEBUG_OUTPUT="$log.ld")
  # In the scratch directory: stress-ng wants its working directory
  # writable and leaves its temporary files there.
  (cd "$tmp/run" && exec "${run_priv[@]}" timeout -k 5 "$limit" "${envs[@]}" "$@") >"$log" 2>&1 &
  local pid=$! p n comm start=$SECONDS samples=0
  run_limit=$limit
  run_mapped=no
  run_ktimers=0
  while alive "$pid"; do
    # The first samples early: a busy program (hrtimers' SCHED_RR
    # children) can starve this loop for the rest of its run.
    if [ $samples -lt 5 ]; then sleep 0.1; else sleep 0.5; fi
    samples=$((samples + 1))
    n=0
    for p in $(tree_pids "$pid"); do
      # Not the wrappers (GNU timeout has a POSIX timer of its own).
      { read -r comm <"/proc/$p/comm"; } 2>/dev/null || continue
      case "$comm" in timeout | sudo) continue ;; esac
      # Read whole: `grep -q` on a pipe can fail under pipefail.
      if [ -n "$lib" ] && [ $run_mapped = no ] && grep -qF "$lib" <<<"$(pcat "/proc/$p/maps")"; then
        run_mapped=yes
      fi
      n=$((n + $(pcat "/proc/$p/timers" | grep -c '^ID:' || true)))
    done
    [ $n -gt "$run_ktimers" ] && run_ktimers=$n
  done
  run_rc=0
  wait "$pid" || run_rc=$?
  if [ -n "$lib" ] && grep -qF "calling init: $lib" "$log".ld.* 2>/dev/null; then
    run_mapped=yes
  fi
  run_hung=no
  [ $((SECONDS - start)) -ge "$limit" ] && run_hung=yes
  return 0
}
# why a run failed, from run_rc and run_hung
run_why() {
  if [ "$run_hung" = yes ]; then
    echo "hung (killed after $run_limit s)"
  elif [ "$run_rc" -gt 128 ]; then
    echo "killed by signal $((run_rc - 128))"
  else
    echo "exit $run_rc"
  fi
}

# The preload check of one program: LD_DEBUG=bindings without and with the
# preload. bind_check NAME PROG ARGS... appends a line to $bind_report.
timer_syms="timer_create timer_settime timer_gettime timer_getoverrun timer_delete timerfd_create timerfd_settime timerfd_gettime"
signal_syms="sigaction signal sigwait sigwaitinfo sigtimedwait"
bind_report=()
# "SYMBOL TARGET" for each symbol that the main program (argv[0] PROG)
# binds, from the LD_DEBUG output files given.
main_bindings() {
  local prog=$1
  shift
  cat "$@" 2>/dev/null |
    sed -nE "s|.*binding file ([^ ]*/)?${prog} \[[0-9]+\] to ([^ ]+) \[[0-9]+\]: normal symbol \`([^']+)'.*|\3 \2|p" |
    sort -u
}
bind_check() {
  local name=$1 prog=$2
  shift 2
  local sym tgt req=() bound=() unbound=() sig_lib=() sig_other=()
  (cd "$tmp/run" && exec "${run_priv[@]}" timeout -k 5 30 env -u LD_PRELOAD LD_DEBUG=bindings \
    LD_DEBUG_OUTPUT="$tmp/ldk-$name" "$prog" "$@") >"$tmp/ldk-$name.log" 2>&1 || true
  for sym in $timer_syms; do
    grep -q "^$sym " <(main_bindings "$prog" "$tmp/ldk-$name".*) && req+=("$sym")
  done
  if [ ${#req[@]} -eq 0 ]; then
    if [ -n "$lib" ]; then
      fail "$name: LD_DEBUG=bindings showed no timer symbol bound by $prog: cannot check the preload"
    fi
    bind_report+=("- $name: LD_DEBUG=bindings showed no timer_*/timerfd_* binding of its own")
    return
  fi
  if [ -z "$lib" ]; then
    bind_report+=("- $name imports ${req[*]}: not checked (LIB=none)")
    return
  fi
  (cd "$tmp/run" && exec "${run_priv[@]}" timeout -k 5 30 env LD_PRELOAD="$lib" LD_DEBUG=bindings \
    LD_DEBUG_OUTPUT="$tmp/ldp-$name" "$prog" "$@") >"$tmp/ldp-$name.log" 2>&1 || true
  main_bindings "$prog" "$tmp/ldp-$name".* >"$tmp/ldp-$name.syms"
  for sym in "${req[@]}"; do
    tgt=$(awk -v s="$sym" '$1 == s { print $2; exit }' "$tmp/ldp-$name.syms")
    if [ "$tgt" = "$lib" ]; then bound+=("$sym"); else unbound+=("$sym -> ${tgt##*/}"); fi
  done
  for sym in $signal_syms; do
    tgt=$(awk -v s="$sym" '$1 == s { print $2; exit }' "$tmp/ldp-$name.syms")
    [ -n "$tgt" ] || continue
    if [ "$tgt" = "$lib" ]; then sig_lib+=("$sym"); else sig_other+=("$sym -> ${tgt##*/}"); fi
  done
  local line="- $name: ${#bound[@]}/${#req[@]} of its timer symbols bound to ${lib##*/}"
  [ ${#bound[@]} -gt 0 ] && line+=" (${bound[*]})"
  [ ${#unbound[@]} -gt 0 ] && line+="; NOT: ${unbound[*]}"
  [ ${#sig_lib[@]} -gt 0 ] && line+="; signal calls bound to it: ${sig_lib[*]}"
  [ ${#sig_other[@]} -gt 0 ] && line+="; elsewhere: ${sig_other[*]}"
  bind_report+=("$line")
  if [ ${#unbound[@]} -gt 0 ]; then
    fail "$name: preload not in effect for ${unbound[*]}"
  fi
  if grep -q 'cannot be preloaded' "$tmp/ldp-$name.log"; then
    fail "$name: ld.so could not preload $lib: $(grep -m1 'cannot be preloaded' "$tmp/ldp-$name.log")"
  fi
}

# kernel_timers_note WHAT COUNT: for a preload run whose program's timers
# are all ones the library keeps in user space: sets ktn to a note (and
# fails with USER_TIMERS=1) if the kernel held POSIX timers during it.
kernel_timers_note() {
  ktn=""
  [ -n "$lib" ] && [ "$2" -gt 0 ] || return 0
  ktn="; $2 kernel POSIX timer(s) in the preload run"
  if [ "$user_timers" = 1 ]; then
    fail "$1: $2 kernel POSIX timer(s) in /proc/PID/timers during the preload run"
  fi
}

# A preload run that did not have the library is a failure, not a result,
# and so is a kernel run that had it: check_mapped SIDE WHAT LOG sets
# unmapped to why (empty if all is well).
check_mapped() {
  local side=$1 what=$2 log=$3
  unmapped=""
  [ -n "$lib" ] || return 0
  if [ "$side" = k ]; then
    [ "$run_mapped" = no ] || unmapped="library mapped in the kernel run (/etc/ld.so.preload?)"
  elif grep -q 'cannot be preloaded' "$log"; then
    unmapped="not preloaded: $(grep -m1 'cannot be preloaded' "$log" | sed 's/^ERROR: ld.so: //')"
  elif [ "$run_mapped" != yes ]; then
    unmapped="library not loaded (no \"calling init\" from ld.so, not in /proc/PID/maps)"
  fi
  [ -z "$unmapped" ] || fail "$what: $unmapped"
}

fmt_num() { awk -v x="$1" 'BEGIN { printf "%.0f", x }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.2f×", b / a; else printf "–" }'; }

stamp=$(date -u '+%Y-%m-%d %H:%M UTC')
sng_version=$(stress-ng --version 2>/dev/null | awk '{ print $3 }' | tr -d ,)
cyc_version=$(cyclictest --help 2>&1 | awk '/^cyclictest V/ && !v { v = $3 } END { print v }')
echo "programs: $stamp, Linux $(uname -r), $(nproc) CPUs, stress-ng $sng_version, cyclictest ${cyc_version:-?}; library: ${lib:-none (the kernel twice)}" >&2

# --- stress-ng -------------------------------------------------------------

stressors=(
  "timer|--timer 1 --timer-freq 100000"
  "timer|--timer 1 --timer-freq 100000 --timer-rand"
  "timerfd|--timerfd 1"
  "timerfd|--timerfd 1 --timerfd-rand"
  "clock|--clock 1"
  "hrtimers|--hrtimers 1"
)
bind_check stress-ng stress-ng --timer 1 --timer-ops 1000 --timerfd 1 --timerfd-ops 1000 -t 2

# ops/s (real time) of STRESSOR in a --yaml file; empty if absent.
yaml_rate() {
  awk -v s="$1" '
    $1 == "-" && $2 == "stressor:" { cur = $3 }
    cur == s && $1 == "bogo-ops:" { ops = $2 }
    cur == s && $1 == "bogo-ops-per-second-real-time:" { rate = $2 }
    END { if (ops > 0) print rate }' "$2" 2>/dev/null
}

sng_rows=()
row=0
for entry in "${stressors[@]}"; do
  name=${entry%%|*}
  args=${entry#*|}
  opts=${args#--"$name" 1}
  opts=${opts# }
  declare -A rate=() status=() ktimers=()
  sides=(k p)
  [ $((row % 2)) -eq 1 ] && sides=(p k)
  row=$((row + 1))
  for side in "${sides[@]}"; do
    base="$tmp/sng-$row-$side"
    # shellcheck disable=SC2086
    run_side "$side" "$base.log" $((secs + 60)) \
      stress-ng $args --verify -t "$secs" --metrics-brief --yaml "$base.yaml"
    ktimers[$side]=$run_ktimers
    what="stress-ng --$name ${opts:+$opts }($([ "$side" = k ] && echo kernel || echo "$label_b"))"
    r=$(yaml_rate "$name" "$base.yaml")
    # Its fail:/error:/warn: lines (info: ones can say "may fail").
    bad=$(grep -iE 'fail|verif|error|counters are zero' "$base.log" |
      grep -vE '^stress-ng: (info|metrc|debug): |cannot be preloaded' | head -3 || true)
    if [ "$run_rc" -ne 0 ] || [ -z "$r" ] || [ -n "$bad" ]; then
      why=$(run_why)
      [ -z "$r" ] && why+=", no bogo-ops"
      [ -n "$bad" ] && why+=": $(echo "$bad" | head -1 | sed 's/^stress-ng: //')"
      status[$side]="FAIL ($why)"
      fail "$what: $why"
      tail -20 "$base.log" >&2
    else
      status[$side]=ok
    fi
    rate[$side]=${r:-0}
    check_mapped "$side" "$what" "$base.log"
    [ -z "$unmapped" ] || status[$side]="FAIL ($unmapped)"
    echo "$what: ${r:-?} bogo-ops/s, ${status[$side]}" >&2
  done
  if [ "${status[k]}" = ok ] && [ "${status[p]}" = ok ]; then
    rk=${rate[k]} rp=${rate[p]}
    met=$(awk -v a="$rk" -v b="$rp" 'BEGIN { print (b >= a) ? "yes" : "no" }')
    result=ok
    case "$name" in timer | hrtimers)
      kernel_timers_note "stress-ng --$name" "${ktimers[p]}"
      result+=$ktn
      ;;
    esac
    cells="$(fmt_num "$rk") | $(fmt_num "$rp") | $(ratio "$rk" "$rp")"
  else
    met="–"
    result="kernel: ${status[k]}; $label_b: ${status[p]}"
    cells=""
    for side in k p; do
      if [ "${status[$side]}" = ok ]; then cells+="$(fmt_num "${rate[$side]}") | "; else cells+="– | "; fi
    done
    cells+="–"
  fi
  sng_rows+=("| $name | ${opts:+\`$opts\`} | $cells | $met | ${ktimers[k]} / ${ktimers[p]} | $result |")
  unset rate status ktimers
done

# --- cyclictest ------------------------------------------------------------

loops=$((secs * 1000))
cyc=(cyclictest -x -t1 -i 1000)
cyc_ok() { "${run_priv[@]}" timeout -k 5 30 env -u LD_PRELOAD "${cyc[@]}" -l 2 -q "$@" >/dev/null 2>&1; }
cyc_flags=()
cyc_state=ok
if [ "$prio" -gt 0 ] && cyc_ok -p "$prio"; then
  cyc_flags=(-p "$prio")
elif cyc_ok; then
  :
elif [ "$(id -u)" -ne 0 ] && sudo -n true 2>/dev/null; then
  run_priv=(sudo -n)
  if [ "$prio" -gt 0 ] && cyc_ok -p "$prio"; then
    cyc_flags=(-p "$prio")
  elif ! cyc_ok; then
    cyc_state=skip
  fi
else
  cyc_state=skip
fi

# "n first min avg p99 max" (µs) of a cyclictest -v log ("thread:cycle:
# latency" lines; cycle 0 is the first), or nothing.
cyc_stats() {
  awk -F: 'NF == 3 && $1 ~ /^ *[0-9]+$/ && $2 ~ /^ *[0-9]+$/ && $3 ~ /^ *-?[0-9]+$/ {
             print $2 + 0, $3 + 0 }' "$1" >"$1.vals"
  local first
  first=$(awk '$1 == 0 { print $2; exit }' "$1.vals")
  cut -d' ' -f2 "$1.vals" | sort -n | awk -v first="${first:-0}" '
    { v[NR] = $1; sum += $1 }
    END {
      if (NR == 0) exit
      k = int(NR * 0.99); if (k < NR * 0.99) k++; if (k < 1) k = 1
      printf "%d %d %d %.1f %d %d\n", NR, first, v[1], sum / NR, v[k], v[NR]
    }'
}

cyc_md=()
if [ "$cyc_state" = skip ]; then
  msg="cyclictest skipped: it needs RT scheduling rights (root, RLIMIT_RTPRIO or passwordless sudo)"
  echo "$msg" >&2
  cyc_md+=("" "### cyclictest" "" "$msg.")
else
  [ ${#run_priv[@]} -gt 0 ] && echo "cyclictest: run with sudo -n (needs RT scheduling rights)" >&2
  bind_check cyclictest cyclictest -x -t1 -i 1000 -l 100 -q "${cyc_flags[@]}"
  declare -A cstat=() cstatus=() ktimers_c=()
  for side in k p; do
    base="$tmp/cyc-$side"
    run_side "$side" "$base.log" $((loops / 1000 + 60)) "${cyc[@]}" -l "$loops" -v -q "${cyc_flags[@]}"
    what="cyclictest -x ($([ "$side" = k ] && echo kernel || echo "$label_b"))"
    s=$(cyc_stats "$base.log")
    n=${s%% *}
    if [ "$run_rc" -ne 0 ] || [ -z "$s" ] || [ "${n:-0}" -lt "$loops" ]; then
      why=$(run_why)
      why+=", ${n:-0} of $loops samples"
      cstatus[$side]="FAIL ($why)"
      fail "$what: $why"
      { grep -vE '^ *[0-9]+: *[0-9]+: *-?[0-9]+$' "$base.log" || true; } | tail -20 >&2
    else
      cstatus[$side]=ok
    fi
    [ "${cstatus[$side]}" = ok ] || s="${n:-0} – – – – –"
    cstat[$side]=$s
    check_mapped "$side" "$what" "$base.log"
    [ -z "$unmapped" ] || cstatus[$side]="FAIL ($unmapped)"
    echo "$what: n first min avg p99 max = ${s:-none} (µs), ${cstatus[$side]}, kernel timers seen: $run_ktimers" >&2
    ktimers_c[$side]=$run_ktimers
  done
  kernel_timers_note "cyclictest -x" "${ktimers_c[p]}"
  read -r _ kf kmin kavg kp99 kmax <<<"${cstat[k]}"
  read -r _ pf pmin pavg pp99 pmax <<<"${cstat[p]}"
  read -r kn _ <<<"${cstat[k]}"
  read -r pn _ <<<"${cstat[p]}"
  both_ok=no
  [ "${cstatus[k]}" = ok ] && [ "${cstatus[p]}" = ok ] && both_ok=yes
  within() {
    [ $both_ok = yes ] || {
      echo "–"
      return
    }
    awk -v a="$1" -v b="$2" 'BEGIN { print (b <= 1.2 * a) ? "yes" : "no" }'
  }
  r() { if [ $both_ok = yes ]; then ratio "$1" "$2"; else echo "–"; fi; }
  cyc_md+=(""
    "### cyclictest \`-x\`: POSIX timer + sigwait() (1 thread, 1000 µs interval, $loops loops${cyc_flags[*]:+, \`${cyc_flags[*]}\`})"
    ""
    "| latency (µs) | kernel | $label_b | $label_b/kernel | within 1.2×? |"
    "|---|--:|--:|--:|---|"
    "| first cycle | $kf | $pf | $(r "$kf" "$pf") | |"
    "| min | $kmin | $pmin | $(r "$kmin" "$pmin") | |"
    "| avg | $kavg | $pavg | $(r "$kavg" "$pavg") | $(within "$kavg" "$pavg") |"
    "| p99 | $kp99 | $pp99 | $(r "$kp99" "$pp99") | $(within "$kp99" "$pp99") |"
    "| max | $kmax | $pmax | $(r "$kmax" "$pmax") | |"
    "| samples | $kn | $pn | | |"
    "| kernel POSIX timers seen | ${ktimers_c[k]} | ${ktimers_c[p]} | | |"
    "| result | ${cstatus[k]} | ${cstatus[p]}$ktn | | |")
fi

# --- the page --------------------------------------------------------------

{
  echo "## Real programs: the kernel vs \`LD_PRELOAD=libutimer_posix.so\`"
  echo
  cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
  echo "Generated by \`ci/programs.sh\` on $stamp: ${cpu:-unknown CPU}, $(nproc) CPUs, Linux $(uname -r), stress-ng $sng_version, cyclictest ${cyc_version:-?}."
  if [ -n "$lib" ]; then
    echo "Each program ran twice in the same run, once on the kernel and once with \`LD_PRELOAD=${lib##*/}\` (the order alternating from row to row)."
  else
    echo "LIB=none: each program ran twice on the kernel (the script checked without the library)."
  fi
  echo
  echo "### stress-ng (1 instance each, \`--verify\`, $secs s each; bogo-ops/s, real time)"
  echo
  echo "| stressor | options | kernel | $label_b | $label_b/kernel | ≥ kernel? | kernel POSIX timers seen (kernel / $label_b) | result |"
  echo "|---|---|--:|--:|--:|---|---|---|"
  printf '%s\n' "${sng_rows[@]}"
  printf '%s\n' "${cyc_md[@]}"
  echo
  echo "### The preload in effect"
  echo
  if [ -n "$lib" ]; then
    echo "Every preload run had the library loaded and initialised (its \`LD_DEBUG=files\` log, or \`/proc/PID/maps\` during the run), or it failed. \`LD_DEBUG=bindings\`, one run of each program:"
  else
    echo "Not checked (LIB=none). The timer symbols that each program binds itself (from \`LD_DEBUG=bindings\`):"
  fi
  echo
  printf '%s\n' "${bind_report[@]}"
  echo
  echo "Targets (printed, not enforced): stress-ng bogo-ops/s ≥ the kernel's; cyclictest avg and p99 within 1.2× of the kernel's."
  echo "\"Kernel POSIX timers seen\" is the most timers listed in \`/proc/PID/timers\` over the program's processes at one sample (every 0.1 s, then 0.5 s): timers the kernel keeps, which a user-space timer is not."
} >"$tmp/table.md"
cat "$tmp/table.md"
if [ -n "$out" ]; then
  cp "$tmp/table.md" "$out"
fi

if [ ${#failures[@]} -gt 0 ]; then
  echo >&2
  echo "${#failures[@]} failure(s):" >&2
  printf '  %s\n' "${failures[@]}" >&2
  exit 1
fi
