//! [`DelayQueue`]: `tokio_util::time::DelayQueue`, a queue of values that
//! come out at their deadlines, on one [`Sleep`] (the `delay-queue`
//! feature).
//!
//! # Structure
//!
//! * `entries`: the values, dense (a removal moves the last entry into
//!   the hole), so the capacity is the values' and
//!   [`compact`](DelayQueue::compact) is a shrink.
//! * `keys`: what a [`Key`] indexes: the entry's place in `entries`, or,
//!   for a key not in use, the next free key (a free list, reused last in
//!   first out, as a slab's). A key stays valid until its value leaves.
//! * `order`: the deadline index, `(deadline, sequence number) → key`, a
//!   `BTreeMap`: the first entry is the next to come out; the sequence
//!   number (one per insert or reset) keeps equal deadlines first in,
//!   first out.
//! * `timer`: one [`Sleep`], boxed, made by the first poll that has to
//!   wait. Its deadline is never later than the first deadline: every
//!   change that moves the first deadline moves it (the kernel's
//!   `hrtimer_start()` on a queued timer), and a queue left empty by a
//!   removal drops it. Polls compare it with the first deadline and move
//!   it there, so the queue wakes at each deadline, to the nanosecond plus
//!   the wake-up latency, and follows a [paused](crate::pause) clock as
//!   any `Sleep` does.

use crate::{sleep_until, Instant, Sleep};
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// About 30 years: where a deadline past `Instant`'s range goes, as for
/// [`sleep`](crate::sleep).
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// A queue of values, each yielded once its deadline is reached:
/// `tokio_util::time::DelayQueue`, with its methods and their semantics.
///
/// [`insert`](DelayQueue::insert) and [`insert_at`](DelayQueue::insert_at)
/// queue a value and return its [`Key`], which
/// [`remove`](DelayQueue::remove), [`reset`](DelayQueue::reset) and
/// [`deadline`](DelayQueue::deadline) take. [`poll_expired`]
/// (and, with the `stream` feature, the `futures_core::Stream` impl)
/// yields the values whose deadlines have been reached as [`Expired`]s,
/// returns `Pending` (and wakes the task at the next deadline) while none
/// has, and `Ready(None)` while the queue is empty; an insert after that
/// makes it yield again, as tokio-util's.
///
/// * **Order.** Values come out in deadline order, and values with equal
///   deadlines in the order they were inserted (or last
///   [reset](DelayQueue::reset_at)); tokio-util leaves that order open.
/// * **Precise, never early.** Deadlines are kept as given, not rounded
///   to tokio-util's milliseconds: [`Expired::deadline`] and
///   [`deadline`](DelayQueue::deadline) return the instant passed in, and
///   a value comes out once the clock has read its deadline, never
///   before, woken by one hrtimer ([`Sleep`]) for the whole queue. A
///   deadline already passed comes out at the next poll.
/// * **Paused clock.** The queue's timer is a [`Sleep`], so on a
///   [paused](crate::pause) thread values come out at their deadlines by
///   the paused clock, auto-advance included.
/// * **Waking.** The task that last polled is woken when a value is due,
///   when an insert or reset moves the first deadline earlier, and when a
///   removal or [`clear`](DelayQueue::clear) empties the queue.
/// * **Keys** are reused once their value leaves the queue (expired or
///   removed), as tokio-util's slab keys: do not use a key after that.
///   [`compact`](DelayQueue::compact) keeps keys valid.
/// * **Limits.** No `max entries` panic, and a deadline beyond
///   `Instant`'s range is put about 30 years away, where tokio-util
///   panics past its wheel's two years.
///
/// ```
/// use std::future::poll_fn;
/// use std::time::Duration;
/// use utimer_async::DelayQueue;
///
/// futures::executor::block_on(async {
///     let mut queue = DelayQueue::new();
///     queue.insert("later", Duration::from_millis(2));
///     let key = queue.insert("never", Duration::from_millis(1));
///     queue.insert("first", Duration::from_millis(1));
///     queue.remove(&key);
///     let first = poll_fn(|cx| queue.poll_expired(cx)).await.unwrap();
///     assert_eq!(first.into_inner(), "first");
///     let later = poll_fn(|cx| queue.poll_expired(cx)).await.unwrap();
///     assert_eq!(*later.get_ref(), "later");
///     assert!(poll_fn(|cx| queue.poll_expired(cx)).await.is_none());
/// });
/// ```
///
/// [`poll_expired`]: DelayQueue::poll_expired
pub struct DelayQueue<T> {
    entries: Vec<Entry<T>>,
    keys: Vec<Slot>,
    /// The first free key, if any.
    free: Option<usize>,
    order: BTreeMap<(Instant, u64), usize>,
    /// The next sequence number.
    seq: u64,
    timer: Option<Pin<Box<Sleep>>>,
    /// The waker of the latest poll, for the wake-ups a timer cannot give.
    waker: Option<Waker>,
}

/// A queued value.
struct Entry<T> {
    value: T,
    deadline: Instant,
    seq: u64,
    /// Its key's index in `keys`.
    key: usize,
}

/// What a key points at.
#[derive(Clone, Copy)]
enum Slot {
    /// The value's index in `entries`.
    Live(usize),
    /// Not in use; the next free key.
    Free(Option<usize>),
}

/// The token of a value in a [`DelayQueue`]:
/// `tokio_util::time::delay_queue::Key`. Returned by
/// [`insert`](DelayQueue::insert) and [`insert_at`](DelayQueue::insert_at),
/// valid until the value leaves the queue; then reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    index: usize,
}

/// A value out of a [`DelayQueue`], with its deadline and key:
/// `tokio_util::time::delay_queue::Expired`. Returned by
/// [`poll_expired`](DelayQueue::poll_expired) (the deadline was reached)
/// and by [`remove`](DelayQueue::remove) (it may not have been).
#[derive(Debug)]
pub struct Expired<T> {
    value: T,
    deadline: Instant,
    key: Key,
}

impl<T> Expired<T> {
    /// The value (`tokio_util::time::delay_queue::Expired::get_ref`).
    pub fn get_ref(&self) -> &T {
        &self.value
    }

    /// The value, mutably
    /// (`tokio_util::time::delay_queue::Expired::get_mut`).
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.value
    }

    /// The value, taken out
    /// (`tokio_util::time::delay_queue::Expired::into_inner`).
    pub fn into_inner(self) -> T {
        self.value
    }

    /// The deadline the value had, exactly as inserted or reset
    /// (`tokio_util::time::delay_queue::Expired::deadline`).
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The key the value had, now free for reuse
    /// (`tokio_util::time::delay_queue::Expired::key`).
    pub fn key(&self) -> Key {
        self.key
    }
}

impl<T> DelayQueue<T> {
    /// An empty queue, which allocates nothing until a value is inserted
    /// (`tokio_util::time::DelayQueue::new`).
    pub fn new() -> DelayQueue<T> {
        DelayQueue::with_capacity(0)
    }

    /// An empty queue with room for `capacity` values
    /// (`tokio_util::time::DelayQueue::with_capacity`).
    pub fn with_capacity(capacity: usize) -> DelayQueue<T> {
        DelayQueue {
            entries: Vec::with_capacity(capacity),
            keys: Vec::with_capacity(capacity),
            free: None,
            order: BTreeMap::new(),
            seq: 0,
            timer: None,
            waker: None,
        }
    }

    /// Queues `value` to come out once `timeout` has elapsed from now
    /// (`tokio_util::time::DelayQueue::insert`): [`insert_at`]
    /// `(value, Instant::now() + timeout)`. A zero `timeout` makes it due at
    /// once. A deadline past `Instant`'s range is about 30 years away.
    ///
    /// [`insert_at`]: DelayQueue::insert_at
    #[track_caller]
    pub fn insert(&mut self, value: T, timeout: Duration) -> Key {
        self.insert_at(value, deadline_after(timeout))
    }

    /// Queues `value` to come out at `when`, at once if `when` has passed
    /// (`tokio_util::time::DelayQueue::insert_at`). Returns its key, valid
    /// until the value leaves the queue. Wakes the polling task if `when`
    /// is before every other deadline.
    #[track_caller]
    pub fn insert_at(&mut self, value: T, when: Instant) -> Key {
        let seq = self.next_seq();
        let key = match self.free {
            Some(k) => {
                self.free = match self.keys[k] {
                    Slot::Free(next) => next,
                    Slot::Live(_) => unreachable!("a live key on the free list"),
                };
                k
            }
            None => {
                self.keys.push(Slot::Free(None));
                self.keys.len() - 1
            }
        };
        self.keys[key] = Slot::Live(self.entries.len());
        self.entries.push(Entry {
            value,
            deadline: when,
            seq,
            key,
        });
        let earlier = self.head().is_none_or(|head| when < head);
        self.order.insert((when, seq), key);
        if earlier {
            self.rearm();
            self.wake();
        }
        Key { index: key }
    }

    /// The next value whose deadline has been reached, in deadline order
    /// (`tokio_util::time::DelayQueue::poll_expired`): `Ready(Some(_))`
    /// with it, `Pending` if none is due yet (the task is woken at the
    /// next deadline, or when an insert moves it earlier), `Ready(None)`
    /// if the queue is empty (it yields again after an insert).
    ///
    /// Never early: a value comes out only once the queue's clock (the
    /// paused one on a paused thread) has read its deadline.
    ///
    /// # Panics
    /// If the timer system refuses timers (it has shut down), as
    /// [`Sleep`]'s poll.
    pub fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<Option<Expired<T>>> {
        if !self.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            self.waker = Some(cx.waker().clone());
        }
        let Some(head) = self.head() else {
            self.timer = None;
            return Poll::Ready(None);
        };
        // The timer fired at or after `head`: the clock has read it, no
        // need to read it again.
        let fired = self
            .timer
            .as_ref()
            .is_some_and(|t| t.deadline() >= head && t.is_elapsed());
        // Under a paused tokio clock the queue follows tokio-util's: a value
        // comes out when the timer fires (at tokio's millisecond tick at or
        // after its deadline), not when the clock reads its deadline.
        if !fired && (Instant::now() < head || follows_tokio()) {
            let t = self
                .timer
                .get_or_insert_with(|| Box::pin(sleep_until(head)));
            if t.deadline() != head {
                t.as_mut().reset(head);
            }
            if t.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
        Poll::Ready(Some(self.pop()))
    }

    /// The deadline of the value of `key`, as inserted or last reset
    /// (`tokio_util::time::DelayQueue::deadline`; exact, where
    /// tokio-util's is rounded to its milliseconds).
    ///
    /// # Panics
    /// If `key` is not in the queue.
    #[track_caller]
    pub fn deadline(&self, key: &Key) -> Instant {
        self.entries[self.live(key)].deadline
    }

    /// Takes the value of `key` out of the queue, due or not
    /// (`tokio_util::time::DelayQueue::remove`). Wakes the polling task if
    /// the queue is left empty (its next poll is `Ready(None)`).
    ///
    /// # Panics
    /// If `key` is not in the queue ("invalid key").
    #[track_caller]
    pub fn remove(&mut self, key: &Key) -> Expired<T> {
        let idx = self.live(key);
        let e = &self.entries[idx];
        let at = (e.deadline, e.seq);
        let was_first = self.order.first_key_value().is_some_and(|(&k, _)| k == at);
        self.order.remove(&at);
        let out = self.take(idx);
        if was_first {
            self.rearm();
        }
        if self.entries.is_empty() {
            self.wake();
        }
        out
    }

    /// [`remove`](DelayQueue::remove), or `None` if `key` is not in the
    /// queue (`tokio_util::time::DelayQueue::try_remove`).
    pub fn try_remove(&mut self, key: &Key) -> Option<Expired<T>> {
        self.slot(key)?;
        Some(self.remove(key))
    }

    /// Moves the deadline of the value of `key` to `when`, earlier or
    /// later; due at once if `when` has passed
    /// (`tokio_util::time::DelayQueue::reset_at`). The value goes after
    /// the others with the same deadline. Wakes the polling task if the
    /// first deadline moves earlier.
    ///
    /// # Panics
    /// If `key` is not in the queue.
    #[track_caller]
    pub fn reset_at(&mut self, key: &Key, when: Instant) {
        let idx = self.live(key);
        let seq = self.next_seq();
        let before = self.head();
        let e = &mut self.entries[idx];
        self.order.remove(&(e.deadline, e.seq));
        e.deadline = when;
        e.seq = seq;
        self.order.insert((when, seq), key.index);
        let after = self.head();
        if after != before {
            self.rearm();
        }
        if after < before {
            self.wake();
        }
    }

    /// Moves the deadline of the value of `key` to `timeout` from now
    /// (`tokio_util::time::DelayQueue::reset`): [`reset_at`]
    /// `(key, Instant::now() + timeout)`.
    ///
    /// # Panics
    /// If `key` is not in the queue.
    ///
    /// [`reset_at`]: DelayQueue::reset_at
    #[track_caller]
    pub fn reset(&mut self, key: &Key, timeout: Duration) {
        self.reset_at(key, deadline_after(timeout));
    }

    /// The key of the value that [`poll_expired`] yields next, once due,
    /// or `None` if the queue is empty
    /// (`tokio_util::time::DelayQueue::peek`).
    ///
    /// [`poll_expired`]: DelayQueue::poll_expired
    pub fn peek(&self) -> Option<Key> {
        self.order
            .first_key_value()
            .map(|(_, &index)| Key { index })
    }

    /// Removes every value; the capacity stays
    /// (`tokio_util::time::DelayQueue::clear`). The next poll is
    /// `Ready(None)`; the polling task is woken if there were values.
    pub fn clear(&mut self) {
        let had = !self.entries.is_empty();
        self.entries.clear();
        self.keys.clear();
        self.free = None;
        self.order.clear();
        self.timer = None;
        if had {
            self.wake();
        }
    }

    /// How many values the queue holds without allocating
    /// (`tokio_util::time::DelayQueue::capacity`).
    pub fn capacity(&self) -> usize {
        self.entries.capacity()
    }

    /// How many values are queued, due or not
    /// (`tokio_util::time::DelayQueue::len`).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no value is queued (`tokio_util::time::DelayQueue::is_empty`).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Makes room for at least `additional` more values
    /// (`tokio_util::time::DelayQueue::reserve`).
    ///
    /// # Panics
    /// If the capacity overflows `usize`, as `Vec::reserve`.
    #[track_caller]
    pub fn reserve(&mut self, additional: usize) {
        self.entries.reserve(additional);
        let free_keys = self.keys.len() - self.entries.len();
        self.keys.reserve(additional.saturating_sub(free_keys));
    }

    /// Gives back unused memory
    /// (`tokio_util::time::DelayQueue::shrink_to_fit`). The values are
    /// stored densely, so the capacity becomes the length, as after
    /// [`compact`](DelayQueue::compact).
    pub fn shrink_to_fit(&mut self) {
        self.entries.shrink_to_fit();
        self.keys.shrink_to_fit();
    }

    /// Shrinks the capacity to the number of values, keeping every key
    /// valid (`tokio_util::time::DelayQueue::compact`); also drops the
    /// unused keys past the last one in use.
    pub fn compact(&mut self) {
        while let Some(Slot::Free(_)) = self.keys.last() {
            self.keys.pop();
        }
        self.free = None;
        for k in (0..self.keys.len()).rev() {
            if let Slot::Free(next) = &mut self.keys[k] {
                *next = self.free;
                self.free = Some(k);
            }
        }
        self.shrink_to_fit();
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// The first deadline.
    fn head(&self) -> Option<Instant> {
        self.order.first_key_value().map(|(&(d, _), _)| d)
    }

    /// The index in `entries` of `key`'s value, if it is in the queue.
    fn slot(&self, key: &Key) -> Option<usize> {
        match self.keys.get(key.index) {
            Some(Slot::Live(idx)) => Some(*idx),
            _ => None,
        }
    }

    /// [`slot`](Self::slot), which must be there.
    #[track_caller]
    fn live(&self, key: &Key) -> usize {
        match self.slot(key) {
            Some(idx) => idx,
            None => panic!("invalid key"),
        }
    }

    /// Takes out the entry at `idx` (already out of `order`) and frees
    /// its key.
    fn take(&mut self, idx: usize) -> Expired<T> {
        let e = self.entries.swap_remove(idx);
        if let Some(moved) = self.entries.get(idx) {
            self.keys[moved.key] = Slot::Live(idx);
        }
        self.keys[e.key] = Slot::Free(self.free);
        self.free = Some(e.key);
        Expired {
            value: e.value,
            deadline: e.deadline,
            key: Key { index: e.key },
        }
    }

    /// Takes out the first value (due). The timer, at or before its
    /// deadline, stays for the next; an empty queue drops it.
    fn pop(&mut self) -> Expired<T> {
        let Some((_, key)) = self.order.pop_first() else {
            unreachable!("popped an empty queue");
        };
        let Slot::Live(idx) = self.keys[key] else {
            unreachable!("a queued value with a free key");
        };
        if self.order.is_empty() {
            self.timer = None;
        }
        self.take(idx)
    }

    /// Moves the timer, if there is one, to the first deadline, or drops
    /// it if the queue is empty: it never waits past the first deadline,
    /// nor wakes for a value that left.
    fn rearm(&mut self) {
        match (self.head(), &mut self.timer) {
            (None, _) => self.timer = None,
            (Some(head), Some(t)) if t.deadline() != head => t.as_mut().reset(head),
            _ => {}
        }
    }

    fn wake(&mut self) {
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }
}

/// `now + d`, or about 30 years from now if that overflows; the default
/// runtime, which the queue's timer uses, started first (so the deadline
/// is not late by its start).
fn deadline_after(d: Duration) -> Instant {
    crate::handle::start_global();
    let now = Instant::now();
    now.checked_add(d)
        .or_else(|| now.checked_add(FAR_FUTURE))
        .unwrap_or(now)
}

/// Whether the calling thread's tokio runtime has a paused (or resumed,
/// offset) clock, which the queue's timer then waits on: a constant false
/// unless tokio was built with `test-util`.
#[inline]
fn follows_tokio() -> bool {
    #[cfg(feature = "tokio")]
    if crate::tokio_clock::CAN_PAUSE {
        return crate::clock::paused().is_none() && crate::tokio_clock::clock_is_virtual();
    }
    false
}

impl<T> Default for DelayQueue<T> {
    /// An empty queue (`tokio_util::time::DelayQueue::default`).
    fn default() -> DelayQueue<T> {
        DelayQueue::new()
    }
}

/// As tokio-util's: the values are never pinned.
impl<T> Unpin for DelayQueue<T> {}

impl<T: fmt::Debug> fmt::Debug for DelayQueue<T> {
    /// The values in the order they come out, with their keys and
    /// deadlines (tokio-util's `Debug` shows its internals).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Queued<'a, T>(&'a DelayQueue<T>);
        impl<T: fmt::Debug> fmt::Debug for Queued<'_, T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let q = self.0;
                f.debug_list()
                    .entries(q.order.values().filter_map(|&index| {
                        let e = &q.entries[q.slot(&Key { index })?];
                        Some((Key { index }, e.deadline, &e.value))
                    }))
                    .finish()
            }
        }
        f.debug_struct("DelayQueue")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .field("queued", &Queued(self))
            .finish()
    }
}

#[cfg(feature = "stream")]
impl<T> futures_core::Stream for DelayQueue<T> {
    type Item = Expired<T>;

    /// [`DelayQueue::poll_expired`], as tokio-util's `Stream` impl: the
    /// stream yields `None` while the queue is empty, and values again
    /// after an insert (it is not fused).
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Expired<T>>> {
        self.get_mut().poll_expired(cx)
    }
}
