//! `UTIMER_POSIX=verbose`: one line on stderr when the process's timer
//! system starts (its first timer call), so that a user can see that the
//! preload is in effect, what runs on utimer and what goes to the kernel.
//! Off by default: a program's output is its own.
//!
//! ```text
//! utimer-posix: pid 4242: timers and timerfds on CLOCK_REALTIME, CLOCK_MONOTONIC and
//!   CLOCK_BOOTTIME run on utimer, 2 workers (threads utimer-worker-*, one pinned to each CPU);
//!   to the kernel: the CPU-time clocks, CLOCK_TAI, the _ALARM clocks, TFD_TIMER_CANCEL_ON_SET
//! ```
//!
//! (one line, wrapped here). A system that cannot start is reported
//! whatever the setting (`global.rs`): every call then goes to the kernel. A `fork` child that makes a timer
//! starts a system of its own, and prints its own line.

use utimer_capi::utimer_t;

/// The value of `UTIMER_POSIX` that asks for the line.
const VERBOSE: &str = "verbose";

/// Whether `UTIMER_POSIX=verbose`.
fn requested() -> bool {
    std::env::var_os("UTIMER_POSIX").is_some_and(|v| v == VERBOSE)
}

/// The line for a system that started with `workers` workers, pinned one
/// to each CPU or not.
fn started_line(pid: u32, workers: u32, pinned: bool) -> String {
    let placement = if pinned {
        "one pinned to each CPU"
    } else {
        "unpinned, as UTIMER_WORKERS asks"
    };
    format!(
        "utimer-posix: pid {pid}: timers and timerfds on CLOCK_REALTIME, CLOCK_MONOTONIC and \
         CLOCK_BOOTTIME run on utimer, {workers} worker{s} (threads utimer-worker-*, {placement}); \
         to the kernel: the CPU-time clocks, CLOCK_TAI, the _ALARM clocks, \
         TFD_TIMER_CANCEL_ON_SET\n",
        s = if workers == 1 { "" } else { "s" },
    )
}

/// Writes `line` to stderr with glibc's own `write` (the library's
/// interposed one would look at the descriptor first).
pub(crate) fn emit(line: &str) {
    let mut rest = line.as_bytes();
    while !rest.is_empty() {
        // SAFETY: glibc's `write` of a live buffer of `rest.len()` bytes.
        let n = unsafe { (crate::real::real().write)(2, rest.as_ptr().cast(), rest.len()) };
        if n <= 0 {
            if n < 0 && crate::real::errno() == libc::EINTR {
                continue;
            }
            return;
        }
        rest = &rest[n as usize..];
    }
}

/// Called once the system `u` has started: the line, if asked for.
/// `pinned`: one worker pinned to each CPU (no `UTIMER_WORKERS`).
pub(crate) fn started(u: &utimer_t, pinned: bool) {
    if !requested() {
        return;
    }
    let workers = u.workers() as std::ffi::c_uint;
    emit(&started_line(std::process::id(), workers, pinned));
}
