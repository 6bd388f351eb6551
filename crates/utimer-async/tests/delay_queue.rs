//! `DelayQueue`: tokio-util's semantics (order, remove, reset, waking,
//! `Ready(None)` when empty), never early in real time, and exact on the
//! paused clock. Bounds hold on a loaded machine: never early is exact,
//! lateness bounds are generous.
#![cfg(feature = "delay-queue")]

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;
use utimer_async::{self as time, DelayQueue, Expired, Instant, Key};

const MS: Duration = Duration::from_millis(1);
const SEC: Duration = Duration::from_secs(1);
const HOUR: Duration = Duration::from_secs(3600);
/// Far beyond any lateness a loaded machine shows, far below "never".
const LATE_BOUND: Duration = Duration::from_secs(3);

/// A waker that counts its wakes.
#[derive(Default)]
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

fn counter() -> (Arc<Count>, Waker) {
    let count = Arc::new(Count::default());
    let waker = Waker::from(count.clone());
    (count, waker)
}

fn wakes(count: &Count) -> usize {
    count.0.load(SeqCst)
}

fn poll<T>(q: &mut DelayQueue<T>, waker: &Waker) -> Poll<Option<Expired<T>>> {
    q.poll_expired(&mut Context::from_waker(waker))
}

async fn next<T>(q: &mut DelayQueue<T>) -> Option<Expired<T>> {
    poll_fn(|cx| q.poll_expired(cx)).await
}

/// Runs `f` under `futures`' `block_on` on a thread of its own (a paused
/// clock belongs to its thread).
fn block_on_thread<F: Future<Output = ()> + 'static>(f: impl FnOnce() -> F + Send + 'static) {
    std::thread::spawn(move || futures::executor::block_on(f()))
        .join()
        .expect("the test thread panicked");
}

#[test]
fn values_come_out_in_deadline_order_never_early() {
    futures::executor::block_on(async {
        let delays = [30, 0, 10, 25, 5, 20].map(|ms| ms * MS);
        let start = Instant::now();
        let mut q = DelayQueue::new();
        for (i, d) in delays.iter().enumerate() {
            q.insert(i, *d);
        }
        assert_eq!(q.len(), delays.len());
        let mut out = Vec::new();
        while let Some(e) = next(&mut q).await {
            let now = Instant::now();
            let d = delays[*e.get_ref()];
            assert!(e.deadline() - start >= d, "deadline before the delay");
            assert!(now >= e.deadline(), "out {:?} early", e.deadline() - now);
            assert!(now - start >= d, "out after {:?} < {d:?}", now - start);
            assert!(
                now - e.deadline() < LATE_BOUND,
                "{:?} late",
                now - e.deadline()
            );
            out.push(e.into_inner());
        }
        assert_eq!(out, [1, 4, 2, 5, 3, 0]);
        assert!(q.is_empty());
    });
}

#[test]
fn equal_deadlines_come_out_first_in_first_out() {
    futures::executor::block_on(async {
        let mut q = DelayQueue::new();
        let past = Instant::now() - SEC;
        let soon = Instant::now() + 3 * MS;
        let mut keys = Vec::new();
        for i in 0..40 {
            keys.push(q.insert_at(100 + i, soon));
            q.insert_at(i, past);
        }
        // A reset goes after the others with its deadline.
        q.reset_at(&keys[0], soon);
        let mut out = Vec::new();
        for _ in 0..80 {
            out.push(next(&mut q).await.unwrap().into_inner());
        }
        let mut expected: Vec<_> = (0..40).chain(101..140).collect();
        expected.push(100);
        assert_eq!(out, expected);
        assert!(Instant::now() >= soon);
        assert!(next(&mut q).await.is_none());
    });
}

#[test]
fn a_passed_deadline_is_due_at_the_first_poll() {
    let (count, waker) = counter();
    let mut q = DelayQueue::new();
    q.insert("zero", Duration::ZERO);
    q.insert_at("past", Instant::now() - SEC);
    q.insert("later", HOUR);
    let Poll::Ready(Some(e)) = poll(&mut q, &waker) else {
        panic!("a passed deadline was not due");
    };
    assert_eq!(*e.get_ref(), "past");
    let Poll::Ready(Some(e)) = poll(&mut q, &waker) else {
        panic!("a zero timeout was not due");
    };
    assert_eq!(*e.get_ref(), "zero");
    assert!(poll(&mut q, &waker).is_pending());
    assert_eq!(wakes(&count), 0);
}

#[test]
fn an_empty_queue_polls_ready_none_and_yields_again_after_an_insert() {
    let (_count, waker) = counter();
    let mut q: DelayQueue<u32> = DelayQueue::new();
    assert!(matches!(poll(&mut q, &waker), Poll::Ready(None)));
    let k = q.insert(1, HOUR);
    assert!(poll(&mut q, &waker).is_pending());
    q.remove(&k);
    assert!(matches!(poll(&mut q, &waker), Poll::Ready(None)));
    q.insert(2, HOUR);
    q.insert(3, Duration::ZERO);
    q.clear();
    assert!(q.is_empty());
    assert!(matches!(poll(&mut q, &waker), Poll::Ready(None)));
    q.insert(4, Duration::ZERO);
    assert!(matches!(poll(&mut q, &waker), Poll::Ready(Some(e)) if *e.get_ref() == 4));
    assert!(matches!(poll(&mut q, &waker), Poll::Ready(None)));
}

#[test]
fn remove_and_try_remove_return_the_value_and_free_the_key() {
    let mut q = DelayQueue::new();
    let at = Instant::now() + HOUR;
    let a = q.insert_at("a", at);
    let b = q.insert("b", 2 * HOUR);
    assert_ne!(a, b);
    assert_eq!(q.deadline(&a), at);
    let e = q.remove(&a);
    assert_eq!((*e.get_ref(), e.deadline(), e.key()), ("a", at, a));
    assert_eq!(q.len(), 1);
    assert!(q.try_remove(&a).is_none());
    assert_eq!(q.try_remove(&b).map(Expired::into_inner), Some("b"));
    assert!(q.try_remove(&b).is_none());
    assert!(q.is_empty());
    // Keys are reused once free, as a slab's.
    let c = q.insert("c", HOUR);
    assert!(c == a || c == b);
    assert_eq!(q.remove(&c).into_inner(), "c");
}

#[test]
#[should_panic(expected = "invalid key")]
fn removing_a_removed_key_panics() {
    let mut q = DelayQueue::new();
    let k = q.insert((), HOUR);
    q.insert((), HOUR);
    q.remove(&k);
    q.remove(&k);
}

#[test]
#[should_panic(expected = "invalid key")]
fn the_deadline_of_a_removed_key_panics() {
    let mut q = DelayQueue::new();
    let k = q.insert((), HOUR);
    q.remove(&k);
    q.deadline(&k);
}

#[test]
#[should_panic(expected = "invalid key")]
fn resetting_an_expired_key_panics() {
    let mut q = DelayQueue::new();
    let k = q.insert((), Duration::ZERO);
    assert!(futures::executor::block_on(next(&mut q)).is_some());
    q.reset(&k, SEC);
}

#[test]
fn reset_moves_a_value_later_or_earlier_never_early() {
    futures::executor::block_on(async {
        let start = Instant::now();
        let mut q = DelayQueue::new();
        let a = q.insert("a", 10 * MS);
        let b = q.insert("b", 20 * MS);
        let c = q.insert("c", HOUR);
        q.reset(&a, 30 * MS);
        assert!(q.deadline(&a) - start >= 30 * MS);
        assert_eq!(q.peek(), Some(b));
        let e = next(&mut q).await.unwrap();
        assert_eq!(*e.get_ref(), "b");
        assert!(Instant::now() - start >= 20 * MS);
        let e = next(&mut q).await.unwrap();
        assert_eq!(*e.get_ref(), "a");
        assert!(
            Instant::now() - start >= 30 * MS,
            "out before its reset deadline"
        );
        // Earlier, to a passed deadline: due at once.
        let now = Instant::now();
        q.reset_at(&c, now);
        assert_eq!(q.deadline(&c), now);
        let e = next(&mut q).await.unwrap();
        assert_eq!((*e.get_ref(), e.key()), ("c", c));
        assert!(Instant::now() - start < HOUR);
    });
}

#[test]
fn peek_names_the_next_value_to_come_out() {
    let mut q = DelayQueue::new();
    assert_eq!(q.peek(), None);
    let foo = q.insert("foo", 10 * SEC);
    let bar = q.insert("bar", 5 * SEC);
    let baz = q.insert("baz", 15 * SEC);
    assert_eq!(q.peek(), Some(bar));
    q.remove(&bar);
    assert_eq!(q.peek(), Some(foo));
    q.reset(&foo, 20 * SEC);
    assert_eq!(q.peek(), Some(baz));
}

#[test]
fn expired_gives_access_to_its_value() {
    let mut q = DelayQueue::new();
    let k = q.insert(vec![1], Duration::ZERO);
    let deadline = q.deadline(&k);
    let mut e = futures::executor::block_on(next(&mut q)).unwrap();
    e.get_mut().push(2);
    assert_eq!(e.get_ref(), &[1, 2]);
    assert_eq!((e.key(), e.deadline()), (k, deadline));
    assert_eq!(e.into_inner(), [1, 2]);
}

#[test]
fn the_waker_is_woken_by_an_earlier_insert_a_due_value_and_emptying() {
    let (count, waker) = counter();
    let mut q = DelayQueue::new();
    assert!(matches!(poll(&mut q, &waker), Poll::Ready(None)));
    let hour = q.insert("hour", HOUR);
    assert_eq!(
        wakes(&count),
        1,
        "an insert into an empty queue did not wake"
    );
    assert!(poll(&mut q, &waker).is_pending());
    let two = q.insert("two hours", 2 * HOUR);
    assert_eq!(wakes(&count), 1, "a later insert woke");
    let start = Instant::now();
    q.insert("soon", 20 * MS);
    assert_eq!(wakes(&count), 2, "an earlier insert did not wake");
    assert!(poll(&mut q, &waker).is_pending());
    // The queue's timer wakes the task at the new first deadline.
    while wakes(&count) < 3 {
        assert!(start.elapsed() < LATE_BOUND, "not woken at the deadline");
        std::thread::sleep(MS);
    }
    let Poll::Ready(Some(e)) = poll(&mut q, &waker) else {
        panic!("woken, not due");
    };
    assert_eq!(*e.get_ref(), "soon");
    assert!(
        start.elapsed() >= 20 * MS,
        "out after {:?}",
        start.elapsed()
    );
    assert!(poll(&mut q, &waker).is_pending());
    // A reset to a passed deadline wakes.
    let before = wakes(&count);
    q.reset_at(&two, Instant::now());
    assert!(wakes(&count) > before, "an earlier reset did not wake");
    assert!(matches!(poll(&mut q, &waker), Poll::Ready(Some(e)) if e.key() == two));
    assert!(poll(&mut q, &waker).is_pending());
    let before = wakes(&count);
    q.remove(&hour);
    assert!(wakes(&count) > before, "emptying the queue did not wake");
    assert!(matches!(poll(&mut q, &waker), Poll::Ready(None)));
    q.insert("x", HOUR);
    assert!(poll(&mut q, &waker).is_pending());
    let before = wakes(&count);
    q.clear();
    assert!(wakes(&count) > before, "clear did not wake");
    assert!(matches!(poll(&mut q, &waker), Poll::Ready(None)));
}

#[test]
fn a_removed_first_value_does_not_wake_the_task() {
    let (count, waker) = counter();
    let mut q = DelayQueue::new();
    let soon = q.insert(1, 5 * MS);
    q.insert(2, HOUR);
    assert!(poll(&mut q, &waker).is_pending());
    q.remove(&soon);
    std::thread::sleep(30 * MS);
    assert_eq!(wakes(&count), 0, "woken for a removed value");
    assert!(poll(&mut q, &waker).is_pending());
}

#[test]
fn capacity_reserve_shrink_and_compact_keep_keys_valid() {
    let q: DelayQueue<u32> = DelayQueue::new();
    assert_eq!(q.capacity(), 0);
    let mut q = DelayQueue::with_capacity(10);
    assert_eq!(q.capacity(), 10);
    let k1 = q.insert(5, 5 * SEC);
    let k2 = q.insert(10, 10 * SEC);
    let k3 = q.insert(15, 15 * SEC);
    q.remove(&k2);
    q.compact();
    assert_eq!(q.capacity(), 2);
    assert!(q.deadline(&k1) < q.deadline(&k3));
    let k4 = q.insert(20, 20 * SEC);
    assert!(k4 != k1 && k4 != k3);
    q.reserve(10);
    assert!(q.capacity() >= 13);
    assert_eq!(q.remove(&k3).into_inner(), 15);
    q.shrink_to_fit();
    assert!(q.capacity() >= q.len());
    assert_eq!(q.remove(&k1).into_inner(), 5);
    assert_eq!(q.remove(&k4).into_inner(), 20);
    assert!(q.is_empty());
}

/// Random inserts, removals, resets, compactions and pops of passed
/// deadlines, against a model: `(deadline, order)` sorted.
#[test]
fn random_operations_match_a_sorted_model() {
    let (_count, waker) = counter();
    let base = Instant::now() - 2 * HOUR;
    let mut q = DelayQueue::new();
    let mut model: Vec<(Instant, u64, u32, Key)> = Vec::new();
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    let mut rand = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let mut order = 0;
    for value in 0..20_000u32 {
        let at = base + Duration::from_millis(rand(50));
        order += 1;
        match rand(10) {
            0..=3 => model.push((at, order, value, q.insert_at(value, at))),
            4 if !model.is_empty() => {
                let (_, _, v, k) = model.swap_remove(rand(model.len() as u64) as usize);
                assert_eq!(q.remove(&k).into_inner(), v);
            }
            5 if !model.is_empty() => {
                let i = rand(model.len() as u64) as usize;
                q.reset_at(&model[i].3, at);
                (model[i].0, model[i].1) = (at, order);
            }
            6 if value % 64 == 0 => q.compact(),
            _ => {
                model.sort_by_key(|m| (m.0, m.1));
                let Poll::Ready(e) = poll(&mut q, &waker) else {
                    panic!("a passed deadline pending");
                };
                let want = (!model.is_empty()).then(|| model.remove(0));
                let got = e.map(|e| (e.deadline(), *e.get_ref(), e.key()));
                assert_eq!(got, want.map(|(at, _, v, k)| (at, v, k)));
            }
        }
        model.sort_by_key(|m| (m.0, m.1));
        assert_eq!(q.len(), model.len());
        assert_eq!(q.peek(), model.first().map(|m| m.3));
    }
}

#[test]
fn paused_clock_values_come_out_exactly_at_their_deadlines() {
    block_on_thread(|| async {
        time::pause();
        let real = std::time::Instant::now();
        let start = Instant::now();
        let mut q = DelayQueue::new();
        q.insert("day", 24 * HOUR);
        q.insert("second", SEC);
        q.insert("hour", HOUR);
        for (v, d) in [("second", SEC), ("hour", HOUR), ("day", 24 * HOUR)] {
            let e = next(&mut q).await.unwrap();
            assert_eq!(*e.get_ref(), v);
            assert_eq!(e.deadline(), start + d);
            assert_eq!(Instant::now(), start + d, "{v} out off its deadline");
        }
        assert!(next(&mut q).await.is_none());
        assert!(real.elapsed() < 5 * SEC, "took {:?}", real.elapsed());
    });
}

// With `test-util`, `pause()` here is tokio's, with its millisecond ticks.
#[cfg(not(feature = "test-util"))]
#[tokio::test]
async fn paused_clock_under_tokio() {
    time::pause();
    let real = std::time::Instant::now();
    let start = Instant::now();
    let mut q = DelayQueue::new();
    let day = q.insert(3, 24 * HOUR);
    q.insert(1, SEC);
    q.insert(2, HOUR);
    q.insert(4, 48 * HOUR);
    q.reset(&day, 12 * HOUR);
    for (v, d) in [(1, SEC), (2, HOUR), (3, 12 * HOUR), (4, 48 * HOUR)] {
        let e = next(&mut q).await.unwrap();
        assert_eq!(*e.get_ref(), v);
        assert_eq!(Instant::now(), start + d, "{v} out off its deadline");
    }
    assert!(next(&mut q).await.is_none());
    assert!(real.elapsed() < 5 * SEC, "took {:?}", real.elapsed());
}

#[test]
fn paused_clock_follows_removals_resets_and_earlier_inserts() {
    block_on_thread(|| async {
        time::pause();
        let real = std::time::Instant::now();
        let start = Instant::now();
        let q = RefCell::new(DelayQueue::new());
        let second = q.borrow_mut().insert("second", SEC);
        let hour = q.borrow_mut().insert("hour", HOUR);
        q.borrow_mut().remove(&second);
        q.borrow_mut().reset(&hour, 2 * HOUR);
        // One task waits on the queue (due in 2 h); another inserts a
        // value due at 2 s, at 1 s: the waiting one gets it at 2 s.
        let waiting = poll_fn(|cx| q.borrow_mut().poll_expired(cx));
        let inserting = async {
            time::sleep(SEC).await;
            q.borrow_mut().insert("early", SEC);
        };
        let (e, ()) = futures::future::join(waiting, inserting).await;
        assert_eq!(e.unwrap().into_inner(), "early");
        assert_eq!(Instant::now(), start + 2 * SEC);
        let mut q = q.into_inner();
        let e = next(&mut q).await.unwrap();
        assert_eq!((e.into_inner(), Instant::now()), ("hour", start + 2 * HOUR));
        assert!(real.elapsed() < 5 * SEC, "took {:?}", real.elapsed());
    });
}

#[test]
fn paused_clock_advance_releases_exactly_the_due_values() {
    block_on_thread(|| async {
        time::pause();
        let (_count, waker) = counter();
        let mut q = DelayQueue::new();
        for s in [3, 1, 2] {
            q.insert(s, s * SEC);
        }
        assert!(poll(&mut q, &waker).is_pending());
        time::advance(2 * SEC - Duration::from_nanos(1)).await;
        assert!(matches!(poll(&mut q, &waker), Poll::Ready(Some(e)) if *e.get_ref() == 1));
        assert!(poll(&mut q, &waker).is_pending(), "out a nanosecond early");
        time::advance(Duration::from_nanos(1)).await;
        assert!(matches!(poll(&mut q, &waker), Poll::Ready(Some(e)) if *e.get_ref() == 2));
        assert!(poll(&mut q, &waker).is_pending());
    });
}

#[cfg(feature = "stream")]
mod stream {
    use super::*;
    use futures::StreamExt;

    #[test]
    fn the_stream_yields_in_order_ends_when_empty_and_resumes_after_an_insert() {
        futures::executor::block_on(async {
            let start = Instant::now();
            let mut q = DelayQueue::new();
            q.insert('b', 4 * MS);
            q.insert('a', 2 * MS);
            q.insert('c', 6 * MS);
            let mut out = Vec::new();
            while let Some(e) = q.next().await {
                assert!(Instant::now() >= e.deadline());
                out.push(e.into_inner());
            }
            assert_eq!(out, ['a', 'b', 'c']);
            assert!(start.elapsed() >= 6 * MS);
            assert!(q.next().await.is_none(), "not empty");
            // Not fused: it yields again after an insert.
            q.insert('d', MS);
            assert_eq!(q.next().await.map(Expired::into_inner), Some('d'));
            assert!(q.next().await.is_none());
        });
    }

    #[test]
    fn the_stream_follows_the_paused_clock() {
        block_on_thread(|| async {
            time::pause();
            let start = Instant::now();
            let mut q = DelayQueue::new();
            for h in [24, 1, 5] {
                q.insert(h, h * HOUR);
            }
            let out: Vec<_> = q
                .by_ref()
                .map(|e| (e.into_inner(), Instant::now() - start))
                .collect()
                .await;
            assert_eq!(out, [(1, HOUR), (5, 5 * HOUR), (24, 24 * HOUR)]);
        });
    }
}

#[test]
fn it_is_send_sync_unpin_default_and_debug_as_tokio_utils() {
    fn traits<Q: Send + Sync + Unpin + Default + std::fmt::Debug>() {}
    traits::<DelayQueue<String>>();
    fn unpin<Q: Unpin>() {}
    unpin::<DelayQueue<std::marker::PhantomPinned>>();
    let mut q = DelayQueue::default();
    let k = q.insert("shown", HOUR);
    let s = format!("{q:?}");
    assert!(s.contains("shown") && s.contains("len: 1"), "{s}");
    assert!(format!("{k:?}").starts_with("Key"));
}
