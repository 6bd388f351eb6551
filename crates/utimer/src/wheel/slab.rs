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
//! A slot is 16 bytes for pointer-sized values. Vacant slots form a free list
//! through `next`, so re-arming never allocates once the slab has grown to
//! the largest number of entries queued at once.

/// "No slot".
pub(crate) const NIL: u32 = u32::MAX;
/// Marks a `prev` field that names a bucket head instead of a slot.
pub(crate) const HEAD: u32 = 1 << 31;
/// The largest number of entries one wheel can hold.
pub(crate) const MAX_ENTRIES: usize = (HEAD - 1) as usize;

struct Slot<T> {
    value: Option<T>,
    next: u32,
    prev: u32,
}

/// Slots and bucket heads. Knows nothing about time.
pub(crate) struct Lists<T> {
    slots: Vec<Slot<T>>,
    heads: Box<[u32]>,
    free: u32,
    len: usize,
}

impl<T> Lists<T> {
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
        self.slots.capacity() * std::mem::size_of::<Slot<T>>() + self.heads.len() * 4
    }

    /// Reserves room for `additional` more entries.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.slots.reserve(additional);
    }

    /// Stores `value` at the head of `bucket` and returns its slot.
    ///
    /// # Panics
    /// If the wheel already holds [`MAX_ENTRIES`] entries.
    #[inline(always)]
    pub(crate) fn push_front(&mut self, bucket: usize, value: T) -> u32 {
        let first = self.heads[bucket];
        let slot = Slot {
            value: Some(value),
            next: first,
            prev: HEAD | bucket as u32,
        };
        let key = if self.free != NIL {
            let key = self.free;
            let vacant = &mut self.slots[key as usize];
            self.free = vacant.next;
            *vacant = slot;
            key
        } else {
            let key = self.slots.len();
            assert!(key < MAX_ENTRIES, "utimer: wheel is full");
            self.slots.push(slot);
            key as u32
        };
        if first != NIL {
            self.slots[first as usize].prev = key;
        }
        self.heads[bucket] = key;
        self.len += 1;
        key
    }

    /// Unlinks slot `key`. Returns its value and, if it was the last entry of
    /// its bucket, that bucket's index. `None` if `key` is vacant or out of
    /// range.
    #[inline(always)]
    pub(crate) fn remove(&mut self, key: u32) -> Option<(T, Option<usize>)> {
        let slot = self.slots.get_mut(key as usize)?;
        let value = slot.value.take()?;
        let (next, prev) = (slot.next, slot.prev);
        slot.next = self.free;
        self.free = key;
        self.len -= 1;
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
        if key == NIL {
            return None;
        }
        self.remove(key).map(|(value, _)| value)
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

    /// The value stored in slot `key`, if it is occupied.
    #[inline]
    pub(crate) fn get(&self, key: u32) -> Option<&T> {
        self.slots.get(key as usize)?.value.as_ref()
    }

    /// Iterates over every stored value (in no particular order).
    pub(crate) fn values(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().filter_map(|s| s.value.as_ref())
    }

    /// Removes every entry, calling `f` on each.
    pub(crate) fn drain(&mut self, mut f: impl FnMut(T)) {
        for slot in self.slots.drain(..) {
            if let Some(value) = slot.value {
                f(value);
            }
        }
        self.heads.fill(NIL);
        self.free = NIL;
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_is_sixteen_bytes_for_pointers() {
        assert_eq!(std::mem::size_of::<Slot<std::ptr::NonNull<u8>>>(), 16);
    }

    #[test]
    fn link_unlink_in_any_order() {
        let mut l = Lists::new(3, 0);
        let a = l.push_front(0, 'a');
        let b = l.push_front(0, 'b');
        let c = l.push_front(0, 'c');
        assert_eq!(l.remove(b).unwrap(), ('b', None));
        assert_eq!(l.remove(c).unwrap(), ('c', None));
        assert_eq!(l.remove(a).unwrap(), ('a', Some(0)));
        assert!(l.remove(a).is_none());
        assert!(l.is_bucket_empty(0));
        // Freed slots are reused.
        let d = l.push_front(1, 'd');
        assert!(d <= 2);
        l.move_bucket(1, 2);
        assert!(l.is_bucket_empty(1));
        assert_eq!(l.pop_front(2), Some('d'));
        assert_eq!(l.len(), 0);
    }
}
