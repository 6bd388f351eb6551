//! Tracepoints named after the kernel's timer events
//! (`include/trace/events/timer.h`), through the `tracing` crate when the
//! `tracing` feature is on (target `utimer::timer`); empty inline
//! functions otherwise, so they cost nothing.
//!
//! | kernel tracepoint | here | where |
//! |---|---|---|
//! | `timer_start` | `timer_start` | a timer is queued on a wheel (`enqueue`) |
//! | `timer_cancel` | `timer_cancel` | a queued timer is taken off (`detach_if_pending`: cancels and re-arms to another bucket, as the kernel's `detach_timer`) |
//! | `timer_expire_entry` / `timer_expire_exit` | the same | around each callback of an expiry run |
//!
//! The same-bucket re-arm, which takes no lock and queues nothing, emits
//! nothing (as the kernel's `mod_timer` fast path). A timer is named by its
//! address, as the kernel's events print `timer=%p`.

#[inline(always)]
pub(crate) fn timer_start(timer: usize, worker: usize, expires: u64, bucket_expiry: u64) {
    #[cfg(feature = "tracing")]
    tracing::trace!(
        target: "utimer::timer",
        timer = format_args!("{timer:#x}"),
        worker,
        expires,
        bucket_expiry,
        "timer_start"
    );
    #[cfg(not(feature = "tracing"))]
    let _ = (timer, worker, expires, bucket_expiry);
}

#[inline(always)]
pub(crate) fn timer_cancel(timer: usize, worker: usize) {
    #[cfg(feature = "tracing")]
    tracing::trace!(target: "utimer::timer", timer = format_args!("{timer:#x}"), worker, "timer_cancel");
    #[cfg(not(feature = "tracing"))]
    let _ = (timer, worker);
}

#[inline(always)]
pub(crate) fn timer_expire_entry(timer: usize, worker: usize, now: u64) {
    #[cfg(feature = "tracing")]
    tracing::trace!(
        target: "utimer::timer",
        timer = format_args!("{timer:#x}"),
        worker,
        now,
        "timer_expire_entry"
    );
    #[cfg(not(feature = "tracing"))]
    let _ = (timer, worker, now);
}

#[inline(always)]
pub(crate) fn timer_expire_exit(timer: usize, worker: usize) {
    #[cfg(feature = "tracing")]
    tracing::trace!(target: "utimer::timer", timer = format_args!("{timer:#x}"), worker, "timer_expire_exit");
    #[cfg(not(feature = "tracing"))]
    let _ = (timer, worker);
}
