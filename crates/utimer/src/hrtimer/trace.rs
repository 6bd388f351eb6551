//! Tracepoints named after the kernel's hrtimer events
//! (`include/trace/events/timer.h`), through the `tracing` crate when the
//! `tracing` feature is on (target `utimer::hrtimer`); empty inline
//! functions otherwise.
//!
//! | kernel tracepoint | where |
//! |---|---|
//! | `hrtimer_start` | queued or moved in its base's queue (`enqueue`, `place`) |
//! | `hrtimer_cancel` | taken off its queue (`dequeue`) |
//! | `hrtimer_expire_entry` / `hrtimer_expire_exit` | around each callback |

use crate::time::ClockId;

#[inline(always)]
pub(crate) fn hrtimer_start(timer: usize, worker: usize, clock: ClockId, soft: u64, hard: u64) {
    #[cfg(feature = "tracing")]
    tracing::trace!(
        target: "utimer::hrtimer",
        hrtimer = format_args!("{timer:#x}"),
        worker,
        clock = ?clock,
        softexpires = soft,
        expires = hard,
        "hrtimer_start"
    );
    #[cfg(not(feature = "tracing"))]
    let _ = (timer, worker, clock, soft, hard);
}

#[inline(always)]
pub(crate) fn hrtimer_cancel(timer: usize) {
    #[cfg(feature = "tracing")]
    tracing::trace!(target: "utimer::hrtimer", hrtimer = format_args!("{timer:#x}"), "hrtimer_cancel");
    #[cfg(not(feature = "tracing"))]
    let _ = timer;
}

#[inline(always)]
pub(crate) fn hrtimer_expire_entry(timer: usize, worker: usize, now: u64) {
    #[cfg(feature = "tracing")]
    tracing::trace!(
        target: "utimer::hrtimer",
        hrtimer = format_args!("{timer:#x}"),
        worker,
        now,
        "hrtimer_expire_entry"
    );
    #[cfg(not(feature = "tracing"))]
    let _ = (timer, worker, now);
}

#[inline(always)]
pub(crate) fn hrtimer_expire_exit(timer: usize, worker: usize) {
    #[cfg(feature = "tracing")]
    tracing::trace!(target: "utimer::hrtimer", hrtimer = format_args!("{timer:#x}"), worker, "hrtimer_expire_exit");
    #[cfg(not(feature = "tracing"))]
    let _ = (timer, worker);
}
