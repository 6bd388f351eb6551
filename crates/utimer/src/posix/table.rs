//! The POSIX timer ID table: `id -> timer` without a lock that other
//! lookups take and without a write to memory that other lookups write
//! (the kernel's `posix_timer_by_id()` under RCU, since 2011).
//!
//! # Structure
//!
//! ```text
//!   IdTable
//!   ├── array ──► Slots { mask = cap - 1, [slot 0, slot 1, … slot cap-1] }
//!   │                                        │
//!   │                                        └──► Entry { id, value }
//!   └── writer: Mutex<Writer { next, len }>       (one entry per slot)
//! ```
//!
//! An ID lives in slot `id & mask`. The array is a power of two long and at
//! most half full, so the writer finds a free slot within a few steps, and
//! doubling the array keeps every live ID in a slot of its own (two IDs in
//! different slots of `cap` differ in their low bits, so also in `2 cap`).
//! The array never shrinks: its memory is 8 bytes per slot, at most four
//! slots per timer at the peak.
//!
//! **IDs** come from a cursor, as the kernel's since its 2025 rework: the
//! first ID at or after `next` whose slot is free, then `next = id + 1`,
//! wrapping from `INT_MAX` to 0. A deleted ID is therefore not issued again
//! until the cursor has gone round all 2³¹ IDs, and a stale ID finds either
//! nothing or (once the slot is reused) an entry with another ID, which the
//! lookup refuses: it compares the entry's ID with the one asked for.
//!
//! # Lookup
//!
//! [`IdTable::with`] pins the epoch (crossbeam-epoch: a store to this
//! thread's own, cache-padded epoch word), loads the array and the slot, and
//! runs the caller's function on the entry while pinned. The caller then
//! takes the timer's own lock and rechecks, under it, that the timer is
//! alive and belongs to the asking system: the kernel's `__lock_timer()`.
//! Nothing in the lookup writes memory that another lookup writes, with one
//! amortized exception that belongs to reclamation: one pin in 128 tries to
//! advance the global epoch (it reads every thread's epoch word and, if all
//! are current, stores the global one), which is where the kernel's RCU
//! spends its grace-period work too.
//!
//! # Why epochs
//!
//! Reclamation must wait until no lookup can still see a deleted timer. Of
//! the well-kept schemes, epoch-based reclamation (crossbeam-epoch) makes
//! the read side cheapest: one store and fence per lookup, nothing per
//! pointer followed, and the two loads of a lookup need no validation.
//! Hazard pointers (e.g. `haphazard`) bound the garbage better but cost a
//! store, a full fence and a re-load for each of the two pointers a lookup
//! follows; garbage here is rare (one entry per `timer_delete`, one array
//! per doubling), so the read side decides. A lookup that waits inside its
//! function (settime waiting for a running callback) keeps its epoch
//! pinned meanwhile: that delays the freeing of deleted timers, never
//! blocks anybody.
//!
//! # Lifetime rules
//!
//! * Only the writer (holding `writer`) stores to `array` and to slots.
//! * An entry is freed only through `defer_destroy` after it was unlinked
//!   from the current array; an array is freed the same way after it was
//!   replaced. Both happen under the writer lock, array retirements before
//!   the retirement of any entry they still point to.
//! * A reader reaches an entry only through an array it loaded while
//!   pinned. If that array was the current one, the entry was linked when
//!   the reader loaded it and its retirement follows the reader's pin. If
//!   it was a replaced array, the reader's pin is old enough to keep that
//!   array alive, and every entry reached through it is retired no earlier
//!   than the array was: their frees wait for the same or a later epoch.
//! * The entry's `value` is only read through `&T` by readers; the writer
//!   never mutates a linked entry. The value is dropped exactly once: by
//!   the deferred destruction after removal, or by the table's drop.
//!
//! # Lookups from signal handlers
//!
//! `epoch::pin()` is not async-signal-safe: a thread's first pin registers
//! it (an allocation), and every 128th pin collects garbage (frees). A
//! handler that interrupted `malloc` and then looked a timer up would wait
//! for the allocator's lock that its own thread holds. So a lookup made in
//! a signal handler ([`with_unpinned`](IdTable::with_unpinned)) does not
//! pin: it raises `SIGNAL_READERS`, loads, reads, and lowers it, with no
//! allocation and no lock. Every deferred free (of an entry or an array)
//! first waits until `SIGNAL_READERS` is zero. Why that is enough:
//!
//! ```text
//!   handler reader                      writer, then a collector
//!   R1 SIGNAL_READERS += 1  (RMW)       D0 unlink: store null / swap (Release)
//!   R2 load array, slot     (Acquire)   ... the epoch advances ...
//!   R3 use the entry                    D1 wait: SIGNAL_READERS == 0 (RMW)
//!   R4 SIGNAL_READERS -= 1  (RMW)       D2 free
//! ```
//!
//! R1, R4 and D1 are read-modify-writes of one counter, so they are
//! totally ordered and each reads the one before it. If D1 comes after
//! R1, it reads a count that includes the reader and waits for R4. If D1
//! comes before R1, R1 reads from D1 and so synchronizes with it: D0, which
//! happens before D1 (the same thread, or the collector that took the
//! deferred free after D0 queued it), happens before R2, which then cannot
//! load the unlinked pointer. (A plain load in D1 would not do: a load and
//! a store on each side is the store-buffering pattern, which loom's
//! models break.) The wait never deadlocks: the reader
//! waits for nothing, so a collector spinning in D1 on another thread waits
//! for a handler that runs to its end, and a collector interrupted by the
//! handler on its own thread resumes only after the handler returned. The
//! counter is shared, so this path is for handlers only: ordinary lookups
//! keep the pin, which writes nothing shared.
//!
//! # Locking rules
//!
//! `writer` serializes inserts and removals (the kernel's
//! `hash_lock`); lookups take no lock. Callers take a timer's own lock only
//! after (and inside) the lookup; the writer lock is taken with no timer
//! lock held, except inside `make` of an insert, which creates the timer.
//!
//! The seed's "before", a global lock around every lookup, is kept for the
//! benchmark as `PosixTimers::timer_gettime_global_lock` (feature
//! `bench-internals`).

// Under loom only the table's models use it.
#![cfg_attr(loom, allow(dead_code))]

use crate::sync::AtomicUsize;
use crate::sync::Mutex;
use crossbeam_epoch::{self as epoch, Atomic, Guard, Owned, Shared};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};

#[cfg(test)]
mod tests;

/// The first array's length.
const MIN_CAP: usize = 64;
/// The longest array: one slot per non-negative `int`.
const MAX_CAP: usize = 1 << 31;
/// The most IDs in use at once (half of `MAX_CAP`: the array stays at
/// most half full).
const MAX_LEN: usize = MAX_CAP / 2;

/// The ID space is full (the kernel's `-EAGAIN` from `posix_timer_add()`).
#[derive(Debug)]
pub(crate) struct TableFull;

struct Entry<T> {
    id: i32,
    value: T,
}

struct Slots<T> {
    mask: usize,
    slots: Box<[Atomic<Entry<T>>]>,
}

impl<T> Slots<T> {
    fn new(cap: usize) -> Slots<T> {
        debug_assert!(cap.is_power_of_two());
        Slots {
            mask: cap - 1,
            slots: (0..cap).map(|_| Atomic::null()).collect(),
        }
    }

    fn slot(&self, id: i32) -> &Atomic<Entry<T>> {
        debug_assert!(id >= 0);
        &self.slots[id as usize & self.mask]
    }
}

/// The writer's state, under `IdTable::writer`.
struct Writer {
    /// The cursor: the next ID to try.
    next: i32,
    /// Entries linked.
    len: usize,
}

/// The ID table (see the module docs).
pub(crate) struct IdTable<T> {
    /// The current array; never null. Stored only under `writer`.
    array: Atomic<Slots<T>>,
    writer: Mutex<Writer>,
    /// Handler lookups running (module docs).
    readers: Readers,
}

/// Lookups running in signal handlers, unpinned (module docs). One for
/// every table: a static, so that a deferred free (which may run after its
/// table is gone) needs no reference to it.
#[cfg(not(loom))]
static SIGNAL_READERS: AtomicUsize = AtomicUsize::new(0);

/// The counter of handler lookups, as the deferred frees reach it: the
/// static (nothing to carry) natively; under loom, whose statics end before
/// the collector's last frees run, a counter per table that each free
/// carries.
#[cfg(not(loom))]
#[derive(Clone)]
struct Readers;

#[cfg(not(loom))]
impl Readers {
    fn new() -> Readers {
        Readers
    }

    fn get(&self) -> &AtomicUsize {
        &SIGNAL_READERS
    }
}

#[cfg(loom)]
#[derive(Clone)]
struct Readers(std::sync::Arc<AtomicUsize>);

#[cfg(loom)]
impl Readers {
    fn new() -> Readers {
        Readers(std::sync::Arc::new(AtomicUsize::new(0)))
    }

    fn get(&self) -> &AtomicUsize {
        &self.0
    }
}

/// Waits until no handler lookup runs (module docs, D1). A
/// read-modify-write, not a load: it reads the latest value of the counter,
/// and if a handler's increment comes after it, that increment reads from
/// it and so sees the unlink that came before (module docs).
fn wait_signal_readers(readers: &Readers) {
    let mut backoff = crate::sync::Backoff::new();
    while readers.get().fetch_add(0, SeqCst) != 0 {
        backoff.snooze();
    }
}

/// Frees `p` (an `Owned` turned raw) once the epoch allows and no handler
/// lookup runs.
///
/// # Safety
/// `p` came from `Shared::as_raw` of an unlinked pointer that nobody else
/// frees.
unsafe fn retire<U: 'static>(guard: &Guard, readers: &Readers, p: *const U) {
    let readers = readers.clone();
    let p = p as usize;
    // SAFETY: the closure frees an unlinked pointer once no pinned reader
    // can hold it (the deferral) and no handler reader runs (the wait): the
    // caller's promise makes that the only free. It captures an integer
    // and the counter's handle, so running it on another thread is sound.
    unsafe {
        guard.defer_unchecked(move || {
            wait_signal_readers(&readers);
            drop(Owned::from_raw(p as *mut U));
        });
    }
}

impl<T: Send + Sync + 'static> IdTable<T> {
    /// An empty table whose first ID is 0.
    pub(crate) fn new() -> Self {
        Self::with_capacity(MIN_CAP, 0)
    }

    /// An empty table with `cap` slots (a power of two) and its cursor at
    /// `next` (tests: growth from tiny arrays, the wrap at `INT_MAX`).
    fn with_capacity(cap: usize, next: i32) -> Self {
        IdTable {
            array: Atomic::new(Slots::new(cap)),
            writer: Mutex::new(Writer { next, len: 0 }),
            readers: Readers::new(),
        }
    }

    fn lock_writer(&self) -> crate::sync::MutexGuard<'_, Writer> {
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current array.
    fn current<'g>(&self, guard: &'g Guard) -> &'g Slots<T> {
        let array = self.array.load(Acquire, guard);
        // SAFETY: `array` is never null (set in the constructor, replaced
        // only by another array), and a replaced array is retired through
        // `defer_destroy`, so it outlives every guard pinned before then.
        unsafe { array.deref() }
    }

    /// Runs `f` on the value with ID `id`, if there is one: the lookup.
    /// Takes no lock; `f` runs with the epoch pinned, so the value cannot
    /// be freed under it, but it may have been removed meanwhile: the
    /// caller rechecks under the value's own lock.
    #[inline]
    pub(crate) fn with<R>(&self, id: i32, f: impl FnOnce(&T) -> R) -> Option<R> {
        if id < 0 {
            return None;
        }
        let guard = &epoch::pin();
        let entry = self.current(guard).slot(id).load(Acquire, guard);
        // SAFETY: an entry is retired only after it was unlinked from every
        // array a reader pinned later can load (module docs, "Lifetime
        // rules"), so one loaded under `guard` is alive while it lasts.
        let entry = unsafe { entry.as_ref() }?;
        (entry.id == id).then(|| f(&entry.value))
    }

    /// [`with`](Self::with) for a signal handler: no pin, so no allocation,
    /// no free and no lock (module docs, "Lookups from signal handlers").
    #[inline]
    pub(crate) fn with_unpinned<R>(&self, id: i32, f: impl FnOnce(&T) -> R) -> Option<R> {
        if id < 0 {
            return None;
        }
        self.readers.get().fetch_add(1, SeqCst);
        // SAFETY: an unprotected guard is only used to load: what is loaded
        // stays alive until `SIGNAL_READERS` drops back (module docs: every
        // free waits for it).
        let r = unsafe {
            let guard = epoch::unprotected();
            let array = self.array.load(Acquire, guard).deref();
            let entry = array.slot(id).load(Acquire, guard);
            match entry.as_ref() {
                Some(e) if e.id == id => Some(f(&e.value)),
                _ => None,
            }
        };
        self.readers.get().fetch_sub(1, SeqCst);
        r
    }

    /// Links a value made by `make` from its new ID and returns the ID.
    /// `make` runs under the writer lock.
    ///
    /// # Errors
    /// [`TableFull`] when `MAX_LEN` IDs are in use.
    pub(crate) fn insert(&self, make: impl FnOnce(i32) -> T) -> Result<i32, TableFull> {
        let mut w = self.lock_writer();
        if w.len >= MAX_LEN {
            return Err(TableFull);
        }
        let guard = &epoch::pin();
        let mut array = self.current(guard);
        if (w.len + 1) * 2 > array.slots.len() {
            array = self.grow(array, guard);
        }
        let id = free_id(array, w.next, guard);
        let entry = Owned::new(Entry {
            id,
            value: make(id),
        });
        array.slot(id).store(entry, Release);
        w.next = if id == i32::MAX { 0 } else { id + 1 };
        w.len += 1;
        Ok(id)
    }

    /// Replaces `old` by an array twice as long holding the same entries,
    /// and retires `old`. Under the writer lock.
    fn grow<'g>(&self, old: &Slots<T>, guard: &'g Guard) -> &'g Slots<T> {
        let cap = old.slots.len() * 2;
        debug_assert!(cap <= MAX_CAP);
        let new = Slots::new(cap);
        for slot in old.slots.iter() {
            let entry = slot.load(Relaxed, guard);
            // SAFETY: linked entries are alive (only this writer unlinks).
            if let Some(e) = unsafe { entry.as_ref() } {
                new.slot(e.id).store(entry, Relaxed);
            }
        }
        // The entries' contents were published by their own Release
        // stores; this one publishes the new array and its slots.
        let old = self.array.swap(Owned::new(new), Release, guard);
        // SAFETY: `old` is unlinked (no later load of `array` returns it);
        // readers pinned before now may still use it, which the deferral
        // waits for, and handler readers, which `retire` waits for. Its
        // slots are bare pointers: freeing the array does not free the
        // entries, which the new array holds.
        unsafe { retire(guard, &self.readers, old.as_raw()) };
        self.current(guard)
    }

    /// Unlinks the value with ID `id` if `pred` accepts it; it is dropped
    /// once no lookup can still see it. Returns whether it was unlinked.
    pub(crate) fn remove_if(&self, id: i32, pred: impl FnOnce(&T) -> bool) -> bool {
        if id < 0 {
            return false;
        }
        let mut w = self.lock_writer();
        let guard = &epoch::pin();
        let slot = self.current(guard).slot(id);
        let entry = slot.load(Relaxed, guard);
        // SAFETY: linked entries are alive (only this writer unlinks).
        match unsafe { entry.as_ref() } {
            Some(e) if e.id == id && pred(&e.value) => {}
            _ => return false,
        }
        slot.store(Shared::null(), Release);
        // SAFETY: unlinked from the current array just now; older arrays
        // that still hold it were retired before (module docs), so every
        // reader that can reach it is pinned before this point or counted
        // in `SIGNAL_READERS`.
        unsafe { retire(guard, &self.readers, entry.as_raw()) };
        w.len -= 1;
        true
    }

    /// The IDs whose values satisfy `pred`, under the writer lock (so
    /// none is linked or unlinked meanwhile): a walk of the whole array,
    /// for a system's end, not for a hot path.
    pub(crate) fn ids_where(&self, pred: impl Fn(&T) -> bool) -> Vec<i32> {
        let _w = self.lock_writer();
        let guard = &epoch::pin();
        self.current(guard)
            .slots
            .iter()
            .filter_map(|slot| {
                // SAFETY: as in `with`: loaded while pinned, and nothing is
                // unlinked while the writer lock is held.
                let entry = unsafe { slot.load(Acquire, guard).as_ref() }?;
                pred(&entry.value).then_some(entry.id)
            })
            .collect()
    }

    /// The number of IDs in use (tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock_writer().len
    }

    /// The array's length (tests).
    #[cfg(test)]
    fn capacity(&self) -> usize {
        self.current(&epoch::pin()).slots.len()
    }
}

/// The first ID at or after `next` (wrapping at `INT_MAX`) whose slot is
/// free. The array is less than half full, so this ends within a few steps
/// on average and within `cap` steps always.
fn free_id<T>(array: &Slots<T>, mut id: i32, guard: &Guard) -> i32 {
    loop {
        if array.slot(id).load(Relaxed, guard).is_null() {
            return id;
        }
        id = if id == i32::MAX { 0 } else { id + 1 };
    }
}

impl<T> Drop for IdTable<T> {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no lookup or writer is running on this
        // table, so nothing else can reach the array or its entries; each
        // linked entry is owned by the array alone (removed ones were
        // unlinked and handed to the collector).
        unsafe {
            let guard = epoch::unprotected();
            let array = self.array.load(Relaxed, guard).into_owned();
            for slot in array.slots.iter() {
                let entry = slot.load(Relaxed, guard);
                if !entry.is_null() {
                    drop(entry.into_owned());
                }
            }
        }
    }
}
