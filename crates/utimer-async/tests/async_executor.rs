//! Under async-executor (smol's executor), on several threads.

mod common;

use async_executor::Executor;
use common::*;
use futures::executor::block_on;
use std::sync::Arc;
use std::time::Duration;
use utimer_async::Instant;

/// Runs `f` on `ex` on this thread, with `threads` more threads running
/// `ex` until `f` is done.
fn run_on_threads<F: std::future::Future>(ex: &Executor<'_>, threads: usize, f: F) -> F::Output {
    let (stop, done) = async_channel_like();
    std::thread::scope(|s| {
        for _ in 0..threads {
            let done = done.clone();
            s.spawn(move || block_on(ex.run(done.wait())));
        }
        let out = block_on(ex.run(f));
        stop.fire();
        out
    })
}

/// A one-shot "stop" signal for the helper threads.
fn async_channel_like() -> (Stop, Stop) {
    let s = Stop(Arc::new(event_cell::Cell::default()));
    (s.clone(), s)
}

#[derive(Clone)]
struct Stop(Arc<event_cell::Cell>);

impl Stop {
    fn fire(&self) {
        self.0.set();
    }
    async fn wait(self) {
        std::future::poll_fn(|cx| self.0.poll(cx)).await
    }
}

mod event_cell {
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::sync::Mutex;
    use std::task::{Context, Poll, Waker};

    #[derive(Default)]
    pub(crate) struct Cell {
        set: AtomicBool,
        wakers: Mutex<Vec<Waker>>,
    }

    impl Cell {
        pub(crate) fn set(&self) {
            self.set.store(true, SeqCst);
            for w in self.wakers.lock().unwrap().drain(..) {
                w.wake();
            }
        }
        pub(crate) fn poll(&self, cx: &mut Context<'_>) -> Poll<()> {
            if self.set.load(SeqCst) {
                return Poll::Ready(());
            }
            self.wakers.lock().unwrap().push(cx.waker().clone());
            if self.set.load(SeqCst) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        }
    }
}

#[test]
fn sleep_timeout_reset_interval() {
    let ex = Executor::new();
    let tasks = [
        ex.spawn(sleep_never_early()),
        ex.spawn(timeout_fires_and_passes_through()),
        ex.spawn(reset_moves_the_deadline()),
        ex.spawn(interval_ticks_at_multiples()),
        ex.spawn(drop_is_prompt()),
    ];
    run_on_threads(&ex, 1, async {
        for t in tasks {
            t.await;
        }
    });
}

#[test]
fn missed_ticks_single_thread() {
    let ex = Executor::new();
    block_on(ex.run(missed_tick_behaviours()));
}

#[test]
fn ten_thousand_sleeps() {
    let start = Instant::now();
    let ex = Executor::new();
    let tasks: Vec<_> = (0..10_000).map(|i| ex.spawn(one_of_many(i))).collect();
    run_on_threads(&ex, 1, async {
        for t in tasks {
            t.await;
        }
    });
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}
