//! Entry storage: each bucket is an unrolled list of 16-entry blocks.
//!
//! The kernel links each `timer_list` into its bucket's `hlist` through
//! pointers inside the timer. An expiry run then walks a chain of pointers,
//! one timer at a time: every step is a cache miss whose address is only
//! known when the step before it has arrived, so with a million timers due
//! the run waits on memory once per timer and no prefetch can start early.
//! The same chain of 16-byte slots linked by index costs a run over 1M
//! due timers 55–100 ns per timer, most of it waiting on two such misses
//! (`examples/expiry.rs` under `perf`).
//!
//! Here a bucket is a doubly linked list of **blocks**, each holding up to
//! [`BLOCK`] entries side by side:
//!
//! ```text
//!  list of bucket 70 ──► block 9 ─────────► block 4 ─────────► block 12
//!                        live 0b0000_0101   live 0xffff        live 0xffff
//!                        [a . b . . … .]    [c d e f g … r]    [s t u … z]
//!                        (has room)         (full)             (full)
//! ```
//!
//! * A [`Key`](super::Key) is `block * 16 + position`, plus the position's
//!   generation: entries never move, so keys stay valid, and removal is
//!   O(1) (clear a bit of the block's `live` mask; unlink the block when it
//!   empties).
//! * A run walks one block per 16 entries, and the addresses of the next
//!   block's 16 entries are all known at once: an expiry loop prefetches
//!   them together ([`Lists::lookahead`]) and the misses overlap.
//! * An entry costs 8 bytes for a pointer-sized value, plus 16 bytes of
//!   block header per 16 entries: 9 bytes, where a linked slot cost 16.
//!
//! # Keeping blocks full
//!
//! Removals punch holes into blocks. So that holes are reused before a new
//! block is allocated, each list keeps the invariant
//!
//! > **no full block comes before a block with room.**
//!
//! * An insert goes to the first block. If it has no room, by the invariant
//!   no block has, and a new first block is allocated. If the insert fills
//!   the first block and others follow, the full block moves to the end.
//! * A removal from a full block that is not first moves it to the front.
//! * A block that empties is unlinked and goes to the free list.
//!
//! Each step is O(1). A new block is allocated only when every block of
//! the bucket is full, so a bucket holds at most one block per 16 entries
//! it held at its peak, plus one; blocks freed by one bucket serve every
//! other.
//!
//! # The last block stays
//!
//! The commonest use of a wheel is a timeout armed and cancelled again in
//! a bucket of its own. So that this does not unlink, free, allocate and
//! link a block each time, a list keeps its last block linked when it
//! empties, and the next entry goes straight into it. A wheel thus keeps
//! at most one empty block per bucket it has used (578 buckets, 83 KB for
//! pointer-sized values); every other emptied block goes to the free list.
//!
//! # Moving a bucket
//!
//! An expiry run moves whole buckets to its run list. Blocks name their
//! *list*, not their bucket, and a small table maps lists to buckets, so a
//! move swaps two list heads and updates two table entries instead of
//! rewriting every block. Inserts go from the bucket straight to its list
//! head; only the rarer steps that start from a block (unlinking,
//! reordering, reporting an emptied bucket) look the bucket up.
//!
//! # An ordered list
//!
//! When the run list already holds entries (several buckets due at one
//! tick, buckets that a forward took out, the due list in front of them),
//! further lists are *spliced* onto it: their blocks are renamed to the
//! run list and linked at its back (or front), one step per block, and
//! every key stays valid. The run list is handed out from its front in
//! the order it was built, so it never reorders its blocks: a removal
//! from a full block leaves the block where it is, and nothing is ever
//! pushed onto it, so the invariant above is not needed there (the model
//! test checks it everywhere else). The same holds for the list that
//! keeps what a forward took out during a run for the next one: the
//! ordered lists are the last buckets, from the one `Lists::new` names.

use super::key::Generation;

/// "No block".
pub(crate) const NIL: u32 = u32::MAX;
/// Entries per block: one bit each in a block's masks.
pub(crate) const BLOCK: usize = 16;
/// A mask with every position taken.
const FULL: u32 = 0xffff;
/// The largest number of blocks (block indices stay below [`NIL`] / 16, so
/// a key `block * 16 + position` fits in 32 bits): 2^32 - 16 entries.
const MAX_BLOCKS: usize = (u32::MAX as usize) / BLOCK;

/// Up to [`BLOCK`] entries of one list.
struct Block<T, G> {
    values: [Option<T>; BLOCK],
    /// Bumped each time a position is vacated; a key names the position
    /// only while its generation matches.
    gens: [G; BLOCK],
    /// The previous block of the list, or `NIL` for the first.
    prev: u32,
    /// The next block of the list, or `NIL` for the last; on the free
    /// list, the next free block.
    next: u32,
    /// Positions holding an entry (bits 0–15) and positions whose
    /// generation is used up, never used again (bits 16–31). One word,
    /// always read and written whole: the compiler widens a 16-bit load to
    /// 32 bits, and such a load right after a 16-bit store to the same
    /// place cannot be forwarded from it and stalls (a quarter of a
    /// wheel-alone insert + remove).
    masks: u32,
    /// The list the block is on (meaningless while free).
    list: u16,
    /// The bucket of that list, kept up to date only while the block is
    /// first in it (`prev == NIL`), so that emptying a bucket's last block
    /// reads it from the block itself rather than from the table.
    bucket: u16,
}

impl<T, G: Generation> Block<T, G> {
    fn new() -> Self {
        Block {
            values: std::array::from_fn(|_| None),
            gens: [G::FIRST; BLOCK],
            prev: NIL,
            next: NIL,
            masks: 0,
            list: 0,
            bucket: 0,
        }
    }

    /// Positions holding an entry.
    #[inline(always)]
    fn live(&self) -> u32 {
        self.masks & FULL
    }

    /// Positions that can take an entry.
    #[inline(always)]
    fn room(&self) -> u32 {
        !(self.masks | self.retired()) & FULL
    }

    /// Positions that can never take an entry again (none, and no work,
    /// for a generation that never runs out).
    #[inline(always)]
    fn retired(&self) -> u32 {
        if G::RUNS_OUT {
            self.masks >> 16
        } else {
            0
        }
    }
}

/// A list's two ends, and its number (what its blocks name).
#[derive(Copy, Clone)]
struct ListHead {
    first: u32,
    last: u32,
    id: u16,
}

/// Blocks, lists and the list → bucket table. Knows nothing about time.
pub(crate) struct Lists<T, G> {
    blocks: Vec<Block<T, G>>,
    /// By bucket: its list.
    lists: Box<[ListHead]>,
    /// By list number: the bucket that list serves.
    bucket_of: Box<[u16]>,
    /// The first bucket whose list keeps its order (see "An ordered
    /// list"): it and every bucket after it.
    ordered: u16,
    /// First free block, or `NIL`.
    free: u32,
    len: usize,
}

impl<T, G: Generation> Lists<T, G> {
    /// Storage for `buckets` buckets (at most 65 536) and room for
    /// `capacity` entries. Buckets `ordered..buckets` keep their order:
    /// entries reach them only by [`splice`](Self::splice) and
    /// [`move_bucket`](Self::move_bucket), never by [`push`](Self::push).
    pub(crate) fn new(buckets: usize, capacity: usize, ordered: usize) -> Self {
        assert!(buckets <= 1 << 16, "utimer: too many buckets");
        assert!(ordered < buckets);
        Lists {
            ordered: ordered as u16,
            blocks: Vec::with_capacity(capacity.div_ceil(BLOCK)),
            lists: (0..buckets)
                .map(|b| ListHead {
                    first: NIL,
                    last: NIL,
                    id: b as u16,
                })
                .collect(),
            bucket_of: (0..buckets).map(|b| b as u16).collect(),
            free: NIL,
            len: 0,
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    fn head(&self, bucket: usize) -> &ListHead {
        &self.lists[bucket]
    }

    /// The bucket whose list holds slot `key` (for assertions).
    pub(crate) fn bucket_of_slot(&self, key: u32) -> usize {
        self.bucket_of_block(key / BLOCK as u32)
    }

    /// The bucket whose list block `b` is on.
    #[inline(always)]
    fn bucket_of_block(&self, b: u32) -> usize {
        self.bucket_of[self.blocks[b as usize].list as usize] as usize
    }

    #[inline]
    pub(crate) fn is_bucket_empty(&self, bucket: usize) -> bool {
        let first = self.head(bucket).first;
        first == NIL || self.blocks[first as usize].live() == 0
    }

    /// Bytes held by this structure's heap allocations.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.blocks.capacity() * std::mem::size_of::<Block<T, G>>()
            + self.lists.len() * (std::mem::size_of::<ListHead>() + 2)
    }

    /// Reserves room for `additional` more entries.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.blocks.reserve(additional.div_ceil(BLOCK));
    }

    /// Stores `value` in `bucket` and returns its key and the key's
    /// generation.
    ///
    /// # Panics
    /// If the wheel already holds 2^32 - 16 entries.
    #[inline(always)]
    pub(crate) fn push(&mut self, bucket: usize, value: T) -> (u32, G) {
        let first = self.lists[bucket].first;
        let (b, block) = match self.blocks.get_mut(first as usize) {
            Some(block) if block.room() != 0 => (first, block),
            // By the invariant, no block of this list has room.
            _ => {
                let b = self.new_first_block(bucket);
                (b, &mut self.blocks[b as usize])
            }
        };
        let room = block.room();
        // `room` is not zero: the mask keeps the index in bounds for free.
        let pos = room.trailing_zeros() as usize % BLOCK;
        block.values[pos] = Some(value);
        block.masks |= 1 << pos;
        let gen = block.gens[pos];
        if room & (room - 1) == 0 && block.next != NIL {
            // That was its last free position.
            self.move_block(b, false);
        }
        self.len += 1;
        (b * BLOCK as u32 + pos as u32, gen)
    }

    /// Unlinks the entry `key` if it is there in generation `gen`. Returns
    /// its value and, if it was the last entry of its bucket, that bucket's
    /// index. `None` if `key` names nothing (vacant, another generation or
    /// out of range).
    #[inline(always)]
    pub(crate) fn remove(&mut self, key: u32, gen: G) -> Option<(T, Option<usize>)> {
        let (b, pos) = (key / BLOCK as u32, key as usize % BLOCK);
        let block = self.blocks.get_mut(b as usize)?;
        if block.gens[pos] != gen {
            return None;
        }
        // A position holds a value exactly while its `live` bit is set.
        let value = block.values[pos].take()?;
        let bit: u32 = 1 << pos;
        let was_full = block.room() == 0;
        block.masks &= !bit;
        match block.gens[pos].next() {
            Some(next) => block.gens[pos] = next,
            // Used up: a key can never name a later entry here.
            None => block.masks |= bit << 16,
        }
        self.len -= 1;
        let mut emptied = None;
        if block.live() == 0 {
            if block.prev == NIL && block.next == NIL && block.retired() != FULL {
                // The list's last block stays, empty, for its next entry.
                emptied = Some(block.bucket as usize);
            } else {
                let bucket = self.bucket_of_block(b);
                self.unlink(b);
                self.release(b);
                if self.lists[bucket].first == NIL {
                    emptied = Some(bucket);
                }
            }
        } else if was_full && block.prev != NIL && self.bucket_of_block(b) < self.ordered as usize {
            self.move_block(b, true);
        }
        Some((value, emptied))
    }

    /// Removes and returns the first entry of `bucket`.
    #[inline]
    pub(crate) fn pop_front(&mut self, bucket: usize) -> Option<T> {
        let b = self.head(bucket).first;
        let block = self.blocks.get(b as usize)?;
        if block.live() == 0 {
            return None; // a kept last block
        }
        let pos = block.live().trailing_zeros() as usize;
        let gen = block.gens[pos];
        self.remove(b * BLOCK as u32 + pos as u32, gen)
            .map(|(value, _)| value)
    }

    /// Moves every entry of `from` to the empty bucket `to` in O(1): the
    /// two buckets swap lists.
    pub(crate) fn move_bucket(&mut self, from: usize, to: usize) {
        debug_assert!(self.is_bucket_empty(to));
        self.lists.swap(from, to);
        for bucket in [from, to] {
            let ListHead { first, id, .. } = self.lists[bucket];
            self.bucket_of[id as usize] = bucket as u16;
            if first != NIL {
                self.blocks[first as usize].bucket = bucket as u16;
            }
        }
    }

    /// Moves every entry of `from` to the front or the back of `to` (whose
    /// order the entries keep: all of `from`'s, then all of `to`'s, or the
    /// reverse), calling `f` on each entry moved. Keys stay valid: the
    /// blocks themselves move, each renamed to `to`'s list, so the cost is
    /// one step per block (and one per entry with `f`). An empty block
    /// kept in `to` is given up first.
    ///
    /// Only an [ordered](Self::new) list takes spliced entries: in any
    /// other, a block with room behind a full one would break the
    /// invariant that [`push`](Self::push) relies on.
    pub(crate) fn splice<'f>(
        &mut self,
        from: usize,
        to: usize,
        at_front: bool,
        mut f: Option<&mut (dyn FnMut(&T) + 'f)>,
    ) {
        debug_assert_ne!(from, to);
        debug_assert!(to >= self.ordered as usize);
        let kept = self.lists[to].first;
        if kept != NIL && self.blocks[kept as usize].live() == 0 {
            // A kept last block, empty: give it up, or it would hide the
            // entries put behind it from `pop_front` and `is_bucket_empty`.
            self.lists[to].first = NIL;
            self.lists[to].last = NIL;
            self.release(kept);
        }
        let ListHead { first, last, id } = self.lists[to];
        let ListHead {
            first: head,
            last: tail,
            ..
        } = self.lists[from];
        if head == NIL || self.blocks[head as usize].live() == 0 {
            return; // nothing to move (maybe a kept empty block: it stays)
        }
        let mut b = head;
        while b != NIL {
            let block = &mut self.blocks[b as usize];
            block.list = id;
            if let Some(f) = f.as_mut() {
                for value in block.values.iter().flatten() {
                    f(value);
                }
            }
            b = block.next;
        }
        self.lists[from].first = NIL;
        self.lists[from].last = NIL;
        if first == NIL {
            self.lists[to].first = head;
            self.lists[to].last = tail;
        } else if at_front {
            self.blocks[tail as usize].next = first;
            self.blocks[first as usize].prev = tail;
            self.lists[to].first = head;
        } else {
            self.blocks[last as usize].next = head;
            self.blocks[head as usize].prev = last;
            self.lists[to].last = tail;
        }
        let first = self.lists[to].first;
        self.blocks[first as usize].bucket = to as u16;
    }

    /// For prefetching: once per first block of `bucket` (`*seen` remembers
    /// the last one), the entries of the block after it, and the storage
    /// of the block after that. An expiry loop that prefetches what these
    /// point to while it hands out the current block's entries has them in
    /// cache 16 to 32 entries later.
    #[inline]
    pub(crate) fn lookahead(
        &self,
        bucket: usize,
        seen: &mut u32,
    ) -> Option<(impl Iterator<Item = &T>, Option<&impl Sized>)> {
        let first = self.head(bucket).first;
        if first == *seen {
            return None;
        }
        *seen = first;
        let next = self
            .blocks
            .get(self.blocks.get(first as usize)?.next as usize)?;
        let values = next.values.iter().filter_map(Option::as_ref);
        Some((values, self.blocks.get(next.next as usize)))
    }

    /// The value of entry `key`, if it is there in generation `gen`.
    #[inline]
    pub(crate) fn get(&self, key: u32, gen: G) -> Option<&T> {
        let (b, pos) = (key as usize / BLOCK, key as usize % BLOCK);
        let block = self.blocks.get(b)?;
        if block.gens[pos] != gen {
            return None;
        }
        block.values[pos].as_ref()
    }

    /// Iterates over every stored value (in no particular order).
    pub(crate) fn values(&self) -> impl Iterator<Item = &T> {
        self.blocks
            .iter()
            .flat_map(|b| b.values.iter().filter_map(Option::as_ref))
    }

    /// Removes every entry, calling `f` on each. Keys handed out before
    /// stay stale: every vacated position's generation is bumped.
    pub(crate) fn drain(&mut self, mut f: impl FnMut(T)) {
        for head in self.lists.iter_mut() {
            (head.first, head.last) = (NIL, NIL);
        }
        self.free = NIL;
        self.len = 0;
        for b in (0..self.blocks.len()).rev() {
            let block = &mut self.blocks[b];
            for pos in 0..BLOCK {
                if let Some(value) = block.values[pos].take() {
                    f(value);
                    match block.gens[pos].next() {
                        Some(next) => block.gens[pos] = next,
                        None => block.masks |= 1 << (pos + 16),
                    }
                }
            }
            block.masks &= !FULL;
            self.release(b as u32);
        }
    }

    /// Allocates a block and links it first in `bucket`'s list.
    fn new_first_block(&mut self, bucket: usize) -> u32 {
        let b = if self.free != NIL {
            let b = self.free;
            self.free = self.blocks[b as usize].next;
            b
        } else {
            let b = self.blocks.len();
            assert!(b < MAX_BLOCKS, "utimer: wheel is full");
            self.blocks.push(Block::new());
            b as u32
        };
        let ListHead { first: old, id, .. } = self.lists[bucket];
        let block = &mut self.blocks[b as usize];
        (block.prev, block.next, block.list) = (NIL, old, id);
        self.link_before(b, old, bucket);
        b
    }

    /// Makes `b` (already set up with `next == old`) the first block of
    /// `bucket`'s list, whose first block was `old`.
    #[inline(always)]
    fn link_before(&mut self, b: u32, old: u32, bucket: usize) {
        match old {
            NIL => self.lists[bucket].last = b,
            _ => self.blocks[old as usize].prev = b,
        }
        self.lists[bucket].first = b;
        self.blocks[b as usize].bucket = bucket as u16;
    }

    /// Takes block `b` out of its list.
    #[inline(always)]
    fn unlink(&mut self, b: u32) {
        let Block { prev, next, .. } = self.blocks[b as usize];
        let bucket = self.bucket_of_block(b);
        match prev {
            NIL => self.lists[bucket].first = next,
            _ => self.blocks[prev as usize].next = next,
        }
        match next {
            NIL => self.lists[bucket].last = prev,
            _ => {
                let after = &mut self.blocks[next as usize];
                after.prev = prev;
                if prev == NIL {
                    after.bucket = bucket as u16; // now first
                }
            }
        }
    }

    /// Puts the empty, unlinked block `b` on the free list, unless every
    /// position of it is retired.
    #[inline(always)]
    fn release(&mut self, b: u32) {
        let block = &mut self.blocks[b as usize];
        if block.retired() != FULL {
            block.next = self.free;
            self.free = b;
        }
    }

    /// Moves block `b` within its list: to the back when it filled up as
    /// the first block (and is not last), to the front when it just got
    /// room (and is not first).
    #[cold]
    fn move_block(&mut self, b: u32, to_front: bool) {
        let bucket = self.bucket_of_block(b);
        self.unlink(b);
        let ListHead { first, last, .. } = self.lists[bucket];
        if to_front {
            (self.blocks[b as usize].prev, self.blocks[b as usize].next) = (NIL, first);
            self.link_before(b, first, bucket);
        } else {
            (self.blocks[b as usize].prev, self.blocks[b as usize].next) = (last, NIL);
            self.blocks[last as usize].next = b;
            self.lists[bucket].last = b;
        }
    }

    /// Checks the structure against its invariants (tests only).
    #[cfg(test)]
    pub(crate) fn check(&self) {
        let mut seen = 0;
        for (bucket, head) in self.lists.iter().enumerate() {
            assert_eq!(self.bucket_of[head.id as usize] as usize, bucket);
            let (mut b, mut prev, mut seen_full) = (head.first, NIL, false);
            while b != NIL {
                let block = &self.blocks[b as usize];
                assert_eq!(block.prev, prev);
                assert_eq!(block.list, head.id);
                if prev == NIL {
                    assert_eq!(block.bucket as usize, bucket);
                }
                let sole = head.first == head.last;
                assert!(block.live() != 0 || sole, "an empty block stays linked");
                let full = block.room() == 0;
                assert!(
                    full || !seen_full || bucket >= self.ordered as usize,
                    "a block with room after a full one"
                );
                seen_full |= full;
                seen += block.live().count_ones() as usize;
                (prev, b) = (b, block.next);
            }
            assert_eq!(head.last, prev);
        }
        assert_eq!(seen, self.len);
    }
}

#[cfg(test)]
mod tests;
