//! Timer signals waiting for their turn: the kernel's per-timer `sigq`
//! entries on a pending list, kept in the process's memory.
//!
//! # Why
//!
//! The kernel queues each POSIX timer's signal on its own (a preallocated
//! `sigqueue` per timer, `send_sigqueue()`), whatever its number: two
//! timers on `SIGUSR1` that fire while it is blocked are both delivered,
//! and a `sigqueue()`d `SIGUSR1` pending beside them is a third. A signal
//! that user space queues with `rt_sigqueueinfo` is an ordinary one: a
//! standard signal (below 32) already pending merges with it and is lost.
//! And the kernel takes a deleted or re-armed timer's signal back off the
//! pending list; user space cannot.
//!
//! # How
//!
//! When the program's acceptance of a signal number is reported (the
//! drop-in library's trampoline, `sigwait` family and `signalfd` reads,
//! [`report_acceptance`](super::report_acceptance)), a timer's signal is
//! an entry here, and what the kernel holds is only a *doorbell*: a
//! signal of that number whose `siginfo_t` carries [`DOORBELL_PROCESS`] or
//! [`DOORBELL_THREAD`] in `si_errno`, which says which pending list it sits
//! on. The acceptance of a doorbell takes the first entry of that list
//! (the process's, or the accepting thread's), latches the timer's overrun
//! (`Inner::signal_accepted`) and rewrites the `siginfo_t` to the timer's
//! own. So:
//!
//! * every push rings a doorbell; a real-time doorbell queues, one per
//!   entry, and a standard one may merge with one already pending (ours or
//!   another source's). Whenever a standard signal is accepted, from
//!   whatever source, and entries remain on a list, the doorbell is rung
//!   again ([`ring_remaining`]): while entries wait, one doorbell is
//!   pending or an acceptance is under way that will ring the next;
//! * a deleted or re-armed timer's entry is removed ([`remove`]); the
//!   doorbell it rang then serves the next entry, or, if none is left, is
//!   dropped when accepted. The kernel does the same: the stale signal
//!   stays pending (`sigpending()` shows it, and it takes a standard
//!   signal's slot) until its dequeue drops it (`it_signal_seq`);
//! * a list is rung only while it has entries, so a doorbell that finds
//!   none is one whose entry was removed, never one rung in excess.
//!
//! # Locking
//!
//! One lock per signal number over its list; taken under a timer's
//! `it_lock` (push, remove), never the reverse: an acceptance pops under
//! it, drops it, and only then takes the timer's lock. It is taken only by
//! workers (which block every signal) and by the program's threads inside
//! the library's calls (where the drop-in library holds signals back), so
//! a signal handler never waits for a lock its own thread holds. The
//! lists' room is reserved when a timer is made ([`reserve`]), so a push
//! from a signal handler never allocates.

use super::notify;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// `si_errno` of a doorbell on the process's pending list (`"utmp"`).
pub(crate) const DOORBELL_PROCESS: i32 = 0x7574_6d70;
/// `si_errno` of a doorbell on one thread's pending list (`"utmt"`).
pub(crate) const DOORBELL_THREAD: i32 = 0x7574_6d74;

/// The signals 1..=64 (index `signo - 1`).
const SIGNALS: usize = 64;

/// One timer's signal, waiting.
#[derive(Copy, Clone)]
pub(crate) struct Entry {
    /// The owning system (`PosixTimer::owner`).
    pub(crate) owner: u64,
    /// The timer.
    pub(crate) id: i32,
    /// `si_value`.
    pub(crate) value: usize,
    /// The setting and number it was queued under (`signal_tag`).
    pub(crate) tag: u64,
    /// The thread whose pending list it is on (`SIGEV_THREAD_ID`), or the
    /// process's.
    pub(crate) thread: Option<i32>,
}

/// One signal number's waiting entries, oldest first, and how many timers
/// of that number exist (the room reserved).
struct List {
    entries: VecDeque<Entry>,
    timers: usize,
}

static LISTS: [Mutex<List>; SIGNALS] = [const {
    Mutex::new(List {
        entries: VecDeque::new(),
        timers: 0,
    })
}; SIGNALS];

/// Signal numbers with entries waiting (bit `signo - 1`): a lock-free
/// answer for the common case of none.
static WAITING: AtomicU64 = AtomicU64::new(0);

fn list(signo: i32) -> Option<std::sync::MutexGuard<'static, List>> {
    let i = usize::try_from(signo).ok()?.checked_sub(1)?;
    Some(LISTS.get(i)?.lock().unwrap_or_else(|e| e.into_inner()))
}

fn mark(signo: i32, l: &List) {
    let bit = 1u64 << (signo - 1);
    if l.entries.is_empty() {
        WAITING.fetch_and(!bit, Ordering::AcqRel);
    } else {
        WAITING.fetch_or(bit, Ordering::AcqRel);
    }
}

/// Whether entries of `signo` wait (no lock).
pub(crate) fn waiting(signo: i32) -> bool {
    (1..=64).contains(&signo) && WAITING.load(Ordering::Acquire) & (1 << (signo - 1)) != 0
}

/// Whether `signo` is a standard signal: one pending instance per list.
pub(crate) fn is_standard(signo: i32) -> bool {
    (1..32).contains(&signo)
}

/// A timer of `signo` was made: room for its entry.
pub(crate) fn reserve(signo: i32) {
    if let Some(mut l) = list(signo) {
        l.timers += 1;
        let want = l.timers.saturating_sub(l.entries.len());
        l.entries.reserve(want);
    }
}

/// A timer of `signo` was deleted (its entry removed first).
pub(crate) fn unreserve(signo: i32) {
    if let Some(mut l) = list(signo) {
        l.timers = l.timers.saturating_sub(1);
    }
}

/// Queues `e` and rings its list's doorbell.
pub(crate) fn push(signo: i32, e: Entry, overrun: i32) {
    if let Some(mut l) = list(signo) {
        l.entries.push_back(e);
        mark(signo, &l);
    }
    ring(signo, &e, overrun);
}

/// Rings the doorbell of `e`'s list, with `e`'s value and ID for a reader
/// the library does not see (a raw system call).
fn ring(signo: i32, e: &Entry, overrun: i32) {
    let kind = if e.thread.is_some() {
        DOORBELL_THREAD
    } else {
        DOORBELL_PROCESS
    };
    notify::send_signal(signo, e.value, e.thread, e.id, overrun, e.tag, kind);
}

/// Takes timer `id`'s entry off `signo`'s list, if it is there: the kernel
/// takes a re-armed or deleted timer's signal back.
pub(crate) fn remove(signo: i32, id: i32) {
    if !waiting(signo) {
        return;
    }
    if let Some(mut l) = list(signo) {
        if let Some(i) = l.entries.iter().position(|e| e.id == id) {
            l.entries.remove(i);
        }
        mark(signo, &l);
    }
}

/// Takes the first entry of `signo`'s list for `thread` (None: the
/// process's).
pub(crate) fn pop(signo: i32, thread: Option<i32>) -> Option<Entry> {
    if !waiting(signo) {
        return None;
    }
    let mut l = list(signo)?;
    let i = l.entries.iter().position(|e| e.thread == thread)?;
    let e = l.entries.remove(i);
    mark(signo, &l);
    e
}

/// The first entry of `signo`, whatever its list.
fn pop_any(signo: i32) -> Option<Entry> {
    if !waiting(signo) {
        return None;
    }
    let mut l = list(signo)?;
    let e = l.entries.pop_front();
    mark(signo, &l);
    e
}

/// After a standard signal `signo` was accepted on thread `me`: its
/// pending slot on the process's list, or on `me`'s, is free again, so the
/// doorbell of each list that still has entries is rung (a doorbell still
/// pending merges with it, harmlessly: the list has entries to serve).
pub(crate) fn ring_remaining(signo: i32, me: i32) {
    if !is_standard(signo) || !waiting(signo) {
        return;
    }
    let (process, mine) = {
        let Some(l) = list(signo) else { return };
        (
            l.entries.iter().find(|e| e.thread.is_none()).copied(),
            l.entries.iter().find(|e| e.thread == Some(me)).copied(),
        )
    };
    for e in [process, mine].into_iter().flatten() {
        ring(signo, &e, 0);
    }
}

/// Whether `signo`'s list for `thread` has entries.
pub(crate) fn has_entries(signo: i32, thread: Option<i32>) -> bool {
    waiting(signo) && list(signo).is_some_and(|l| l.entries.iter().any(|e| e.thread == thread))
}

/// The entries of `signo` can no longer be served (the program now
/// ignores the signal, and the kernel discards its pending instances; or
/// it no longer reports its acceptance): their timers go on counting, as
/// the kernel's ignored timers do, and queue again when they may.
///
/// `discarded`: the kernel dropped the pending doorbell (the signal is
/// ignored now); the kernel's timer keeps its one signal, parked, so the
/// expiry that queued it counts toward the overrun of the one it queues
/// next. Otherwise the doorbell stays pending, as the timer's own signal.
pub(crate) fn release_all(signo: i32, discarded: bool) {
    // One at a time, without allocating: this may run in a signal
    // handler's acceptance (`SA_RESETHAND`).
    while let Some(e) = pop_any(signo) {
        super::registry::TABLE.with(e.id, |t| {
            if t.owner == e.owner {
                t.inner.signal_discarded(e.tag, discarded);
            }
        });
    }
}
