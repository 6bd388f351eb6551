//! The vtable registry: a timer names how to call and free it by a 28-bit
//! number instead of a pointer, so that its header fits in 24 bytes (the
//! number shares a word with the timer's flags).
//!
//! # Why
//!
//! Every pending timer costs its header, its handle and its wheel entry.
//! With an 8-byte vtable pointer the header was 32 bytes (and a 32-byte
//! request takes a 48-byte chunk from glibc's malloc, where 24 takes 32).
//! A program has a handful of callback types, each with one vtable made at
//! compile time; numbering them costs a look-up when a timer is *created*
//! (not when it is armed, re-armed or cancelled) and one load of a hot line
//! when its callback runs or it is freed.
//!
//! # How
//!
//! * Numbers are handed out in order of first use, under a mutex, and never
//!   taken back: a vtable is `'static`. The same callback type may show up
//!   under two addresses (a `const` promoted in two codegen units) and then
//!   gets two numbers, which is harmless.
//! * Number to vtable is a lock-free read of an append-only table: the
//!   first 64 numbers in a static array (one check and one load), the
//!   rest in chunks doubling in size, each made once. A number is
//!   handed out only after its slot is set, and reaches other threads only
//!   inside a timer, which is published to them by a lock or a handle
//!   hand-over, so the slot is always found set.
//! * Address to number is a small per-thread cache in front of the mutex,
//!   so creating timers from many threads does not serialize on it.
//!
//! No `unsafe` here: the table is `OnceLock`s all the way down.

use super::VTable;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// Entries in the first chunk; chunk `c` holds `FIRST << c`.
const FIRST: usize = 64;
/// Chunks: together with the static array they hold every number below
/// `2^VTableId::BITS`.
const CHUNKS: usize = 22;
const _: () = assert!(FIRST * (1 << CHUNKS) >= 1 << VTableId::BITS);
/// Entries of the per-thread cache (a power of two).
const CACHE: usize = 16;

type Slot = OnceLock<&'static VTable>;
type Chunk = Box<[Slot]>;

/// Numbers `0..FIRST`: what nearly every program needs.
static STATIC: [Slot; FIRST] = [const { OnceLock::new() }; FIRST];
/// Numbers from `FIRST` on, by [`place`].
static TABLE: [OnceLock<Chunk>; CHUNKS] = [const { OnceLock::new() }; CHUNKS];

/// Address to number, and the next number.
static NUMBERS: Mutex<Option<(HashMap<usize, u32>, u32)>> = Mutex::new(None);

std::thread_local! {
    /// `(address, number)` by `address / 16 % CACHE`; address 0: empty.
    static CACHED: [Cell<(usize, u32)>; CACHE] = const { [const { Cell::new((0, 0)) }; CACHE] };
}

/// A vtable's number (see the module docs).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct VTableId(u32);

/// The chunk and the position in it of number `FIRST + n`.
#[inline(always)]
fn place(n: u32) -> (usize, usize) {
    let j = n as usize / FIRST + 1;
    let c = j.ilog2() as usize;
    (c, n as usize - FIRST * ((1 << c) - 1))
}

impl VTableId {
    /// Numbers fit in this many bits (the timer header keeps its flags
    /// above them).
    pub(crate) const BITS: u32 = 28;

    /// The number, for storing.
    #[inline(always)]
    pub(crate) fn number(self) -> u32 {
        self.0
    }

    /// A number read back from where [`number`](Self::number) stored it.
    #[inline(always)]
    pub(crate) fn from_number(n: u32) -> VTableId {
        VTableId(n)
    }

    /// The number of `vtable`, handing out a new one on first use.
    #[inline]
    pub(crate) fn of(vtable: &'static VTable) -> VTableId {
        let addr = vtable as *const VTable as usize;
        let hit = CACHED.try_with(|c| {
            let (a, n) = c[addr / 16 % CACHE].get();
            (a == addr).then_some(VTableId(n))
        });
        if let Ok(Some(id)) = hit {
            return id;
        }
        let id = Self::register(vtable, addr);
        // (A thread being torn down just skips its cache.)
        let _ = CACHED.try_with(|c| c[addr / 16 % CACHE].set((addr, id.0)));
        id
    }

    #[cold]
    fn register(vtable: &'static VTable, addr: usize) -> VTableId {
        let mut numbers = NUMBERS.lock().unwrap_or_else(|e| e.into_inner());
        let (map, next) = numbers.get_or_insert_with(|| (HashMap::new(), 0));
        if let Some(&n) = map.get(&addr) {
            return VTableId(n);
        }
        let n = *next;
        assert!(n < 1 << Self::BITS, "utimer: too many callback types");
        // Set before the number leaves this function (module docs).
        let _ = Self::slot(n, true).set(vtable);
        map.insert(addr, n);
        *next = n + 1;
        VTableId(n)
    }

    /// The slot of number `n`, making its chunk if `make`.
    #[inline(always)]
    fn slot(n: u32, make: bool) -> &'static Slot {
        if let Some(slot) = STATIC.get(n as usize) {
            return slot;
        }
        let (c, i) = place(n - FIRST as u32);
        let chunk = match TABLE[c].get() {
            Some(chunk) => chunk,
            None if make => {
                TABLE[c].get_or_init(|| (0..FIRST << c).map(|_| OnceLock::new()).collect())
            }
            None => unreachable!("utimer: a timer names an unregistered vtable"),
        };
        &chunk[i]
    }

    /// The vtable this number stands for.
    #[inline(always)]
    pub(crate) fn get(self) -> &'static VTable {
        match Self::slot(self.0, false).get() {
            Some(vtable) => vtable,
            // Numbers come only from `of`, which sets the slot first.
            None => unreachable!("utimer: a timer names an unregistered vtable"),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::ptr::NonNull;

    unsafe fn nop(_: NonNull<super::super::RawTimer>) {}

    #[test]
    fn chunks_cover_every_number() {
        assert_eq!(place(0), (0, 0));
        assert_eq!(place(63), (0, 63));
        assert_eq!(place(64), (1, 0));
        assert_eq!(place(191), (1, 127));
        assert_eq!(place(192), (2, 0));
        let (c, i) = place((1 << VTableId::BITS) - 1 - FIRST as u32);
        assert!(c < CHUNKS && i < FIRST << c, "{c} {i}");
        // Consecutive numbers fill each chunk exactly.
        for n in 0..10_000u32 {
            let (c, i) = place(n);
            let (c2, i2) = place(n + 1);
            assert!((c2 == c && i2 == i + 1) || (c2 == c + 1 && i2 == 0 && i + 1 == FIRST << c));
        }
    }

    #[test]
    fn numbers_are_stable_and_distinct_across_threads() {
        // Leaked, so each is a distinct 'static address.
        let vts: Vec<&'static VTable> = (0..200)
            .map(|_| {
                &*Box::leak(Box::new(VTable {
                    call: nop,
                    free: nop,
                }))
            })
            .collect();
        let ids: Vec<VTableId> = vts.iter().map(|v| VTableId::of(v)).collect();
        for (v, id) in vts.iter().zip(&ids) {
            assert!(std::ptr::eq(id.get(), *v));
            assert_eq!(VTableId::of(v), *id, "the cache and the map agree");
        }
        let mut sorted: Vec<u32> = ids.iter().map(|i| i.0).collect();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(
            sorted.len(),
            vts.len(),
            "distinct vtables get distinct numbers"
        );
        let vts2 = vts.clone();
        let theirs =
            std::thread::spawn(move || vts2.iter().map(|v| VTableId::of(v)).collect::<Vec<_>>())
                .join()
                .unwrap();
        assert_eq!(
            theirs, ids,
            "another thread (cold cache) finds the same numbers"
        );
    }
}
