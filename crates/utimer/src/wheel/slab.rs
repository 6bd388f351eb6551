//! Entry storage: a slab of slots linked into per-bucket lists by index.
//!
//! The kernel links `timer_list` nodes into `hlist`s with `next` and `pprev`
//! pointers. utimer keeps the same shape with 32-bit slot indices instead of
//! pointers, which keeps the wheel free of `unsafe` and lets it move in memory:
//!
//! * `next` is the following slot in the bucket, or [`NIL`];
//! * `prev` is the previous slot, or — for the first slot of a bucket —
//!   [`HEAD`] ORed with the bucket index (the role of the kernel's `pprev`
//!   pointing at the bucket head).
//!
//! A slot is 16 bytes for pointer-sized values, plus the generation of the
//! slot when keys are checked (see [`Generation`]). Vacant slots form a free
//! list through `next`, so re-arming never allocates once the slab has grown
//! to the largest number of entries queued at once.

use super::key::Generation;

/// "No slot".
pub(crate) const NIL: u32 = u32::MAX;
/// Marks a `prev` field that names a bucket head instead of a slot.
pub(crate) const HEAD: u32 = 1 << 31;
/// The largest number of entries one wheel can hold.
pub(crate) const MAX_ENTRIES: usize = (HEAD - 1) as usize;

struct Slot<T, G> {
    value: Option<T>,
    next: u32,
    prev: u32,
    /// Bumped each time the slot is vacated; a key names the slot only
    /// while its generation matches.
    gen: G,
}

/// Slots and bucket heads. Knows nothing about time.
pub(crate) struct Lists<T, G> {
    slots: Vec<Slot<T, G>>,
    heads: Box<[u32]>,
    free: u32,
    len: usize,
}

impl<T, G: Generation> Lists<T, G> {
    pub(crate) fn new(buckets: usize, capacity: usize) -> Self {
        Lists {
            slots: Vec::with_capacity(capacity),
            heads: vec![NIL; buckets].into_boxed_slice(),
            free: NIL,
            len: 0,
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(crate) fn is_bucket_empty(&self, bucket: usize) -> bool {
        self.heads[bucket] == NIL
    }

    /// Bytes held by this structure's heap allocations.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot<T, G>>() + self.heads.len() * 4
    }

    /// Reserves room for `additional` more entries.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.slots.reserve(additional);
    }

    /// Stores `value` at the head of `bucket` and returns its slot and the
    /// slot's generation.
    ///
    /// # Panics
    /// If the wheel already holds [`MAX_ENTRIES`] entries.
    #[inline(always)]
    pub(crate) fn push_front(&mut self, bucket: usize, value: T) -> (u32, G) {
        let first = self.heads[bucket];
        let prev = HEAD | bucket as u32;
        let (key, gen) = if self.free != NIL {
            let key = self.free;
            let vacant = &mut self.slots[key as usize];
            self.free = vacant.next;
            vacant.value = Some(value);
            vacant.next = first;
            vacant.prev = prev;
            (key, vacant.gen)
        } else {
            let key = self.slots.len();
            assert!(key < MAX_ENTRIES, "utimer: wheel is full");
            self.slots.push(Slot {
                value: Some(value),
                next: first,
                prev,
                gen: G::FIRST,
            });
            (key as u32, G::FIRST)
        };
        if first != NIL {
            self.slots[first as usize].prev = key;
        }
        self.heads[bucket] = key;
        self.len += 1;
        (key, gen)
    }

    /// Unlinks slot `key` if it is occupied in generation `gen`. Returns its
    /// value and, if it was the last entry of its bucket, that bucket's
    /// index. `None` if `key` is vacant, of another generation or out of
    /// range.
    #[inline(always)]
    pub(crate) fn remove(&mut self, key: u32, gen: G) -> Option<(T, Option<usize>)> {
        let slot = self.slots.get_mut(key as usize)?;
        if slot.gen != gen {
            return None;
        }
        let value = slot.value.take()?;
        let (next, prev) = (slot.next, slot.prev);
        self.len -= 1;
        // A slot whose generation is used up is retired, never reused:
        // no key can name a later entry (one slot per 2^32 reuses).
        if let Some(gen) = slot.gen.next() {
            slot.gen = gen;
            slot.next = self.free;
            self.free = key;
        }
        let mut emptied = None;
        if next != NIL {
            self.slots[next as usize].prev = prev;
        }
        if prev & HEAD != 0 {
            let bucket = (prev & !HEAD) as usize;
            self.heads[bucket] = next;
            if next == NIL {
                emptied = Some(bucket);
            }
        } else {
            self.slots[prev as usize].next = next;
        }
        Some((value, emptied))
    }

    /// Removes and returns the first entry of `bucket`.
    #[inline]
    pub(crate) fn pop_front(&mut self, bucket: usize) -> Option<T> {
        let key = self.heads[bucket];
        let gen = self.slots.get(key as usize)?.gen;
        self.remove(key, gen).map(|(value, _)| value)
    }

    /// Moves every entry of `from` to the empty bucket `to` in O(1).
    pub(crate) fn move_bucket(&mut self, from: usize, to: usize) {
        debug_assert_eq!(self.heads[to], NIL);
        let first = self.heads[from];
        self.heads[from] = NIL;
        self.heads[to] = first;
        if first != NIL {
            self.slots[first as usize].prev = HEAD | to as u32;
        }
    }

    /// The first value of `bucket`, and the slot of the one after it.
    #[inline]
    pub(crate) fn front(&self, bucket: usize) -> Option<(&T, Option<&impl Sized>)> {
        let slot = self.slots.get(self.heads[bucket] as usize)?;
        Some((slot.value.as_ref()?, self.slots.get(slot.next as usize)))
    }

    /// The value stored in slot `key`, if it is occupied in generation
    /// `gen`.
    #[inline]
    pub(crate) fn get(&self, key: u32, gen: G) -> Option<&T> {
        let slot = self.slots.get(key as usize)?;
        if slot.gen != gen {
            return None;
        }
        slot.value.as_ref()
    }

    /// Iterates over every stored value (in no particular order).
    pub(crate) fn values(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().filter_map(|s| s.value.as_ref())
    }

    /// Removes every entry, calling `f` on each.
    /// Keys handed out before stay stale: every slot keeps its
    /// generation, bumped, on the free list.
    pub(crate) fn drain(&mut self, mut f: impl FnMut(T)) {
        self.heads.fill(NIL);
        self.free = NIL;
        self.len = 0;
        for (key, slot) in self.slots.iter_mut().enumerate().rev() {
            if let Some(value) = slot.value.take() {
                f(value);
                match slot.gen.next() {
                    Some(gen) => slot.gen = gen,
                    None => continue,
                }
            } else if slot.gen.next().is_none() {
                continue; // retired
            }
            slot.next = self.free;
            self.free = key as u32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::wheel::key::Unchecked;

    #[test]
    fn slot_size() {
        type P = std::ptr::NonNull<u8>;
        assert_eq!(std::mem::size_of::<Slot<P, Unchecked>>(), 16);
        assert_eq!(std::mem::size_of::<Slot<P, u32>>(), 24);
    }

    #[test]
    fn link_unlink_in_any_order() {
        let mut l = Lists::<char, u32>::new(3, 0);
        let a = l.push_front(0, 'a');
        let b = l.push_front(0, 'b');
        let c = l.push_front(0, 'c');
        assert_eq!(l.remove(b.0, b.1).unwrap(), ('b', None));
        assert_eq!(l.remove(c.0, c.1).unwrap(), ('c', None));
        assert_eq!(l.remove(a.0, a.1).unwrap(), ('a', Some(0)));
        assert!(l.remove(a.0, a.1).is_none());
        assert!(l.is_bucket_empty(0));
        // Freed slots are reused, in a new generation: old keys miss.
        let d = l.push_front(1, 'd');
        assert!(d.0 <= 2);
        assert_ne!(d.1, 0);
        for old in [a, b, c] {
            assert!(l.get(old.0, old.1).is_none());
            assert!(old.0 != d.0 || l.remove(old.0, old.1).is_none());
        }
        assert_eq!(l.get(d.0, d.1), Some(&'d'));
        l.move_bucket(1, 2);
        assert!(l.is_bucket_empty(1));
        assert_eq!(l.pop_front(2), Some('d'));
        assert_eq!(l.len(), 0);
    }
}
