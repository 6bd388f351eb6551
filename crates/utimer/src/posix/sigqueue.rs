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

use super::{notify, SignalSet};
use std::collections::VecDeque;
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

/// Signal numbers with entries waiting: a lock-free answer for the common
/// case of none.
static WAITING: SignalSet = SignalSet::new();

fn list(signo: i32) -> Option<std::sync::MutexGuard<'static, List>> {
    let i = usize::try_from(signo).ok()?.checked_sub(1)?;
    Some(LISTS.get(i)?.lock().unwrap_or_else(|e| e.into_inner()))
}

fn mark(signo: i32, l: &List) {
    WAITING.set(signo, !l.entries.is_empty());
}

/// Whether entries of `signo` wait (no lock).
pub(crate) fn waiting(signo: i32) -> bool {
    WAITING.contains(signo)
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
    #[cfg(test)]
    if let Some(hook) = tests::RING.with(std::cell::Cell::get) {
        return hook(signo, e);
    }
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

/// A doorbell of `signo` on `thread`'s list (`None`: the process's) was
/// accepted on thread `me` (given for a standard signal): its first entry that `resolve` accepts (the
/// timer latches its overrun; a stale one, re-armed or deleted since, is
/// passed over) becomes the signal delivered. `None`: no entry was left,
/// drop the doorbell. Entries still waiting on a standard signal's list
/// get their doorbell rung again: this one was the list's one pending
/// instance.
pub(crate) fn doorbell_accepted<R>(
    signo: i32,
    thread: Option<i32>,
    me: Option<i32>,
    mut resolve: impl FnMut(&Entry) -> Option<R>,
) -> Option<R> {
    let mut delivered = None;
    while let Some(e) = pop(signo, thread) {
        delivered = resolve(&e);
        if delivered.is_some() {
            break;
        }
    }
    if let Some(me) = me {
        if is_standard(signo) && has_entries(signo, thread) {
            ring_remaining(signo, me);
        }
    }
    delivered
}

std::thread_local! {
    /// Every list's lock, held by the thread that forks, from
    /// [`fork_prepare`] to [`fork_parent`] or [`fork_child`].
    static HELD_FOR_FORK: std::cell::RefCell<Vec<std::sync::MutexGuard<'static, List>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Before `fork`: takes every list's lock, so that the child's copy of
/// the lists is not left locked by a thread it does not have.
pub fn fork_prepare() {
    let guards: Vec<_> = LISTS
        .iter()
        .map(|l| l.lock().unwrap_or_else(|e| e.into_inner()))
        .collect();
    HELD_FOR_FORK.with(|h| *h.borrow_mut() = guards);
}

/// After `fork`, in the parent: the lists as they were.
pub fn fork_parent() {
    HELD_FOR_FORK.with(|h| h.borrow_mut().clear());
}

/// After `fork`, in the child: no entry is left. The kernel gives the
/// child no pending signal and none of the parent's timers, so none of
/// the parent's entries may ever be served there.
pub fn fork_child() {
    HELD_FOR_FORK.with(|h| {
        let mut held = h.borrow_mut();
        for l in held.iter_mut() {
            l.entries.clear();
            l.timers = 0;
        }
        held.clear();
    });
    WAITING.clear();
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

#[cfg(test)]
mod tests {
    //! The lists against a model of the kernel's pending signals, with
    //! fixed seeds: every entry pushed and not withdrawn is delivered
    //! exactly once, however doorbells merge with one another and with
    //! other sources' signals, and a doorbell never takes another
    //! source's signal down with it unless the kernel would have merged
    //! that signal anyway.
    use super::*;
    use std::cell::{Cell, RefCell};

    /// A test's stand-in for the kernel's signal queueing.
    pub(super) type Ring = fn(i32, &Entry);

    thread_local! {
        /// Where a test's doorbells go instead of the kernel.
        pub(super) static RING: Cell<Option<Ring>> = const { Cell::new(None) };
        /// The model kernel's pending instances of the test's signal on the
        /// process's list, oldest first (`true`: a doorbell).
        static PENDING: RefCell<Vec<bool>> = const { RefCell::new(Vec::new()) };
        static STANDARD: Cell<bool> = const { Cell::new(true) };
    }

    /// The kernel's `__send_signal_locked()` for one signal number: a
    /// standard signal already pending merges (the newcomer is dropped).
    fn send(doorbell: bool) -> bool {
        PENDING.with(|p| {
            let mut p = p.borrow_mut();
            if STANDARD.get() && !p.is_empty() {
                return false;
            }
            p.push(doorbell);
            true
        })
    }

    fn ring_hook(_signo: i32, _e: &Entry) {
        send(true);
    }

    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// One run: `timers` timers of `signo` fire, are withdrawn (re-armed or
    /// deleted) and have their signals accepted, beside another source
    /// that sends the same number, in an order drawn from `seed`.
    fn run(signo: i32, seed: u64, timers: i32) {
        const ME: i32 = 1;
        STANDARD.set(is_standard(signo));
        RING.set(Some(ring_hook));
        PENDING.with(|p| p.borrow_mut().clear());
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        // Per timer: the tag of its waiting entry, if any.
        let mut queued: Vec<Option<u64>> = vec![None; timers as usize];
        let mut next_tag = 1u64;
        let (mut delivered, mut withdrawn, mut pushed) = (0u64, 0u64, 0u64);
        let (mut foreign_sent, mut foreign_got) = (0u64, 0u64);
        let id = |i: usize| 1000 + i as i32;
        let accept = |queued: &mut Vec<Option<u64>>| -> Option<bool> {
            let doorbell = PENDING.with(|p| {
                let mut p = p.borrow_mut();
                (!p.is_empty()).then(|| p.remove(0))
            })?;
            if !doorbell {
                ring_remaining(signo, ME);
                return Some(false);
            }
            doorbell_accepted(signo, None, Some(ME), |e| {
                let i = (e.id - 1000) as usize;
                (queued[i] == Some(e.tag)).then(|| queued[i] = None)
            })
            .map(|()| true)
        };
        for _ in 0..400 {
            let i = rng.below(timers as u64) as usize;
            match rng.below(10) {
                0..=3 if queued[i].is_none() => {
                    let tag = next_tag;
                    next_tag += 1;
                    queued[i] = Some(tag);
                    pushed += 1;
                    let e = Entry {
                        owner: 1,
                        id: id(i),
                        value: i,
                        tag,
                        thread: None,
                    };
                    push(signo, e, 0);
                }
                4 if queued[i].is_some() => {
                    queued[i] = None;
                    withdrawn += 1;
                    remove(signo, id(i));
                }
                5 => {
                    foreign_sent += u64::from(send(false));
                }
                _ => match accept(&mut queued) {
                    Some(true) => delivered += 1,
                    Some(false) => foreign_got += 1,
                    None => {}
                },
            }
        }
        // Drain: accept until nothing is pending.
        for _ in 0..10_000 {
            match accept(&mut queued) {
                Some(true) => delivered += 1,
                Some(false) => foreign_got += 1,
                None => {}
            }
            if PENDING.with(|p| p.borrow().is_empty()) {
                break;
            }
        }
        let stranded: Vec<usize> = (0..queued.len()).filter(|&i| queued[i].is_some()).collect();
        assert!(
            stranded.is_empty(),
            "signal {signo}, seed {seed}: entries of timers {stranded:?} never delivered \
             (pushed {pushed}, delivered {delivered}, withdrawn {withdrawn})"
        );
        assert_eq!(
            delivered + withdrawn,
            pushed,
            "signal {signo}, seed {seed}: every entry delivered or withdrawn, once"
        );
        assert_eq!(
            foreign_got, foreign_sent,
            "signal {signo}, seed {seed}: another source's signal that the kernel queued was lost"
        );
        assert!(
            !waiting(signo),
            "signal {signo}, seed {seed}: the list is not empty"
        );
        RING.set(None);
    }

    /// Seeds per test: a few under Miri, which runs them ~1000x slower.
    const SEEDS: u64 = if cfg!(miri) { 4 } else { 300 };

    #[test]
    fn standard_signal_entries_are_each_delivered_once() {
        for seed in 1..=SEEDS {
            run(20, seed, 1 + (seed % 6) as i32);
        }
    }

    #[test]
    fn real_time_signal_entries_are_each_delivered_once() {
        for seed in 1..=SEEDS {
            run(40, seed, 1 + (seed % 6) as i32);
        }
    }
}
