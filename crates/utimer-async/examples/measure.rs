//! Costs of utimer-async's futures against tokio::time's, and the memory of
//! a pending `Sleep`. Run with
//! `cargo run --release -p utimer-async --example measure`.
//!
//! Each figure is the best of several rounds of `N` operations on one
//! thread, with the futures polled by hand with a no-op waker (no
//! executor in the loop). tokio's run inside a current-thread runtime's
//! context with its time driver.

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::{pending, Future};
use std::hint::black_box;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::task::{Context, Waker};
use std::time::Duration;
use utimer_async::Instant;

/// Counts the bytes and blocks allocated by the main thread (the
/// runtimes' threads allocate on their own, at their own times).
struct Counting;

static BYTES: AtomicUsize = AtomicUsize::new(0);
static BLOCKS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static COUNTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

// SAFETY: forwards to the system allocator, counting on the side.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTED.with(|c| c.get()) {
            BYTES.fetch_add(layout.size(), Relaxed);
            BLOCKS.fetch_add(1, Relaxed);
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const N: u32 = 100_000;
const ROUNDS: usize = 5;

/// Best ns per operation over `ROUNDS` rounds of `N`.
fn best(mut round: impl FnMut()) -> f64 {
    (0..ROUNDS)
        .map(|_| {
            let t = Instant::now();
            round();
            t.elapsed().as_nanos() as f64 / f64::from(N)
        })
        .fold(f64::INFINITY, f64::min)
}

fn poll<F: Future + ?Sized>(f: Pin<&mut F>, cx: &mut Context<'_>) -> bool {
    f.poll(cx).is_pending()
}

fn main() {
    COUNTED.with(|c| c.set(true));
    let mut cx = Context::from_waker(Waker::noop());
    let far = Duration::from_secs(3600);

    // Start the default runtime outside the measurements.
    let mut warm = Box::pin(utimer_async::sleep(Duration::from_millis(1)));
    while !poll(warm.as_mut(), &mut cx) {}

    // Memory of one pending Sleep: the future, plus what its first poll
    // allocates.
    let s = utimer_async::sleep(far);
    let mut s = std::pin::pin!(s);
    let (b0, k0) = (BYTES.load(Relaxed), BLOCKS.load(Relaxed));
    assert!(poll(s.as_mut(), &mut cx));
    let (heap, blocks) = (BYTES.load(Relaxed) - b0, BLOCKS.load(Relaxed) - k0);
    let b1 = BYTES.load(Relaxed);
    for _ in 0..1000 {
        poll(s.as_mut(), &mut cx);
        s.as_mut().reset(Instant::now() + far);
    }
    let later = BYTES.load(Relaxed) - b1;
    let inline = std::mem::size_of::<utimer_async::Sleep>();
    println!(
        "utimer-async Sleep: {inline} B inline + {heap} B heap in {blocks} blocks = {} B pending; \
         1000 polls + resets after that allocated {later} B on this thread",
        inline + heap
    );
    let tokio_rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let _enter = tokio_rt.enter();
    let mut ts = Box::pin(tokio::time::sleep(far));
    let b0 = BYTES.load(Relaxed);
    assert!(poll(ts.as_mut(), &mut cx));
    let theap = BYTES.load(Relaxed) - b0;
    drop(ts);
    println!(
        "tokio Sleep: {} B inline, its first poll allocated {theap} B (the driver's wheel levels, shared)",
        std::mem::size_of::<tokio::time::Sleep>()
    );

    let u = best(|| {
        for _ in 0..N {
            let s = utimer_async::sleep(far);
            let mut s = std::pin::pin!(s);
            poll(black_box(s.as_mut()), &mut cx);
        }
    });
    let t = best(|| {
        for _ in 0..N {
            let mut s = Box::pin(tokio::time::sleep(far));
            poll(s.as_mut(), &mut cx);
            drop(black_box(s));
        }
    });
    let ts = best(|| {
        for _ in 0..N {
            let s = tokio::time::sleep(far);
            let mut s = std::pin::pin!(s);
            poll(s.as_mut(), &mut cx);
        }
    });
    println!(
        "create+poll+drop, ns: utimer-async Sleep {u:.0}, tokio Sleep {ts:.0} (on the stack), {t:.0} (boxed)"
    );

    let mut s = Box::pin(utimer_async::sleep(far));
    poll(s.as_mut(), &mut cx);
    let base = Instant::now() + far;
    let mut i = 0u64;
    let u = best(|| {
        for _ in 0..N {
            i += 1;
            s.as_mut().reset(base + Duration::from_nanos(i % 1_000_000));
        }
    });
    let up = best(|| {
        for _ in 0..N {
            i += 1;
            s.as_mut().reset(base + Duration::from_nanos(i % 1_000_000));
            poll(s.as_mut(), &mut cx);
        }
    });
    let mut ts = Box::pin(tokio::time::sleep(far));
    poll(ts.as_mut(), &mut cx);
    let base = tokio::time::Instant::now() + far;
    let t = best(|| {
        for _ in 0..N {
            i += 1;
            ts.as_mut()
                .reset(base + Duration::from_nanos(i % 1_000_000));
        }
    });
    let tp = best(|| {
        for _ in 0..N {
            i += 1;
            ts.as_mut()
                .reset(base + Duration::from_nanos(i % 1_000_000));
            poll(ts.as_mut(), &mut cx);
        }
    });
    println!(
        "reset, ns: utimer-async {u:.0} (+poll {up:.0}), tokio {t:.0} (+poll {tp:.0}); deadlines an hour out, spread over 1 ms"
    );

    let u = best(|| {
        for _ in 0..N {
            let mut f = std::pin::pin!(utimer_async::timeout(far, pending::<()>()));
            poll(f.as_mut(), &mut cx);
        }
    });
    let t = best(|| {
        for _ in 0..N {
            let mut f = std::pin::pin!(tokio::time::timeout(far, pending::<()>()));
            poll(f.as_mut(), &mut cx);
        }
    });
    println!(
        "timeout create+poll(pending)+drop, ns: utimer-async (wheel) {u:.0}, tokio {t:.0} (boxed)"
    );
}
