//! The per-worker next-event summary: "when must this worker wake?" in one
//! load.
//!
//! It lives here, below both kinds of timer, because the wheel bases and
//! the hrtimer bases both feed it and it needs nothing but atomics.
//!
//! `TimerSystem::next_expiry` answers over five sources: the worker's local
//! and global wheel bases and its three hrtimer bases, each with its own
//! lock and its own lock-free mirror, and the hrtimers' nanoseconds
//! converted to ticks. Reading all of that costs a few nanoseconds even
//! when nothing changed since the last question. The summary keeps the
//! last answer in one word per worker (on its own cache-line pair), valid
//! until any source changes.
//!
//! # The word
//!
//! | value | meaning |
//! |-------|---------|
//! | below [`NONE`] | exact: the earliest tick of the worker's events |
//! | [`NONE`] | exact: no event at all |
//! | [`UNKNOWN`] | a source changed: compute it again |
//! | `UNKNOWN \| n` | reader `n` is computing it (a *claim*) |
//!
//! # The protocol
//!
//! * A **source** whose next event may have changed stores [`UNKNOWN`]
//!   (one relaxed store, and only when the word is not already
//!   [`UNKNOWN`]), **while holding that source's lock**: a wheel base when
//!   its `next` mirror leaves a known value, an hrtimer base when its
//!   first hard expiry changes. Arms and cancels that find the mirror
//!   already unknown pay nothing more.
//! * A **reader** that finds the word exact returns it. Otherwise it
//!   *claims* the word (a compare-exchange to a claim with a number no
//!   other claim ever had), then reads each source's next event **under
//!   that source's lock**, one lock at a time, and finally publishes the
//!   answer with a compare-exchange from its claim.
//!
//! Why that is enough, for one source: the reader's claim comes before its
//! critical section on the source, and a change comes in a critical section
//! of the same lock. If the change's section came first, the reader sees
//! the change. If it came after, the change's store of [`UNKNOWN`] happens
//! after the claim, so it is later in the word's modification order than
//! the claim: either before the publish, which then finds no claim and
//! fails, or after it, overwriting the answer. A source changed without
//! the reader seeing it never leaves a published answer standing. Claim
//! numbers are unique, so a claim overwritten and written again (ABA)
//! cannot fool the publish. The locks are what make this hold for several
//! sources at once: a relaxed store per source gives no order between two
//! sources' stores and the reader's reads of their mirrors, and reading
//! the mirrors without the locks would need a `SeqCst` fence in every
//! source's store path. The reader pays the locks only when the word is
//! not exact, once per change.
//!
//! A wheel base's mirror entering a known value from [`UNKNOWN`] (a reader
//! or the idle path computed it) needs no store: the mirror's move to
//! unknown already stored one, after the last published answer that used
//! the old value.
//!
//! Everything above rests on the word's modification order being total
//! and on a compare-exchange reading the last value before its own write
//! (RMW atomicity): a source's store that follows the claim it saw is
//! therefore after the publish that replaced that claim, even when the
//! source did not see the publish.
//!
//! # Loom
//!
//! Loom keeps the modification order partial (ordered only by what each
//! thread saw and what happened before it) and does not enforce RMW
//! atomicity against a plain store that comes later: it lets a source's
//! relaxed store land between a claim and the publish that read it, a
//! false alarm. Under `cfg(loom)` the source's store is a swap, which loom
//! orders after every write it could have read; the models in
//! `summary/tests.rs` then explore the protocol itself.
//!
//! # What is cached
//!
//! Only answers that stay right while no source changes: an hrtimer of
//! `CLOCK_BOOTTIME` or `CLOCK_REALTIME` is converted to monotonic time with
//! the clocks' current offset, which moves (suspend, a clock set), so a
//! worker with one queued answers through the slow path every time. A
//! deferrable base's changes go to a sink that nobody reads: deferrable
//! timers are no event.

use crate::sync::AtomicU64;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};

/// The word: no event.
pub(crate) const NONE: u64 = (1 << 63) - 1;
/// The word: unknown (with a claim number in the low bits: being computed).
pub(crate) const UNKNOWN: u64 = 1 << 63;

/// One worker's summary (module docs), on its own cache-line pair.
#[repr(align(128))]
#[derive(Debug)]
pub(crate) struct NextSummary {
    word: AtomicU64,
    /// Claim numbers handed out (`UNKNOWN | n`, `n >= 1`).
    claims: AtomicU64,
}

/// A reader's claim on a summary, to give back to [`NextSummary::publish`].
#[must_use]
pub(crate) struct Claim(u64);

impl NextSummary {
    fn new() -> NextSummary {
        NextSummary {
            word: AtomicU64::new(UNKNOWN),
            claims: AtomicU64::new(0),
        }
    }

    /// The exact answer (`Ok(None)`: no event), or `Err` if it must be
    /// computed: one load.
    #[inline(always)]
    pub(crate) fn read(&self) -> Result<Option<u64>, ()> {
        decode(self.word.load(Acquire))
    }

    /// A source's next event may have changed. Call with that source's
    /// lock held.
    #[inline(always)]
    pub(crate) fn invalidate(&self) {
        if self.word.load(Relaxed) != UNKNOWN {
            #[cfg(not(loom))]
            self.word.store(UNKNOWN, Relaxed);
            // Loom keeps the modification order partial and does not
            // enforce RMW atomicity against a later plain store (see
            // "Loom" in the module docs): a swap gives it that order.
            #[cfg(loom)]
            self.word.swap(UNKNOWN, Relaxed);
        }
    }

    /// Claims the word before reading the sources under their locks; `Ok`
    /// with the answer if another reader published one meanwhile.
    /// A claim that is not published (the answer cannot be cached) stays
    /// in the word: it reads as unknown, and the next reader claims over it.
    pub(crate) fn claim(&self) -> Result<Option<u64>, Claim> {
        // (2^63 claims would wrap to a bare UNKNOWN: never reached.)
        let claim = UNKNOWN | ((self.claims.fetch_add(1, Relaxed) + 1) & NONE);
        let mut word = self.word.load(Acquire);
        loop {
            if let Ok(answer) = decode(word) {
                return Ok(answer);
            }
            match self
                .word
                .compare_exchange_weak(word, claim, AcqRel, Acquire)
            {
                Ok(_) => return Err(Claim(claim)),
                Err(now) => word = now,
            }
        }
    }

    /// Publishes `next` (`None`: no event), computed under the sources'
    /// locks after `claim`, unless a source changed since (or another
    /// reader claimed the word). A tick that does not fit the word is not
    /// cached.
    pub(crate) fn publish(&self, claim: Claim, next: Option<u64>) {
        if next.is_some_and(|tick| tick >= NONE) {
            return;
        }
        let word = next.unwrap_or(NONE);
        let _ = self.word.compare_exchange(claim.0, word, AcqRel, Relaxed);
    }
}

#[inline(always)]
fn decode(word: u64) -> Result<Option<u64>, ()> {
    if word < NONE {
        Ok(Some(word))
    } else if word == NONE {
        Ok(None)
    } else {
        Err(())
    }
}

/// Every worker's summary, and the sink for deferrable bases.
pub(crate) struct Summaries(Box<[NextSummary]>);

impl Summaries {
    pub(crate) fn new(workers: usize) -> Summaries {
        Summaries((0..=workers).map(|_| NextSummary::new()).collect())
    }

    /// `worker`'s summary (checked by the caller).
    #[inline(always)]
    pub(crate) fn of(&self, worker: usize) -> &NextSummary {
        &self.0[worker]
    }

    /// Where a deferrable base's changes go: nobody reads it.
    pub(crate) fn sink(&self) -> &NextSummary {
        &self.0[self.0.len() - 1]
    }
}

#[cfg(test)]
mod tests;
