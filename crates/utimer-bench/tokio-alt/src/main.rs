//! `utimer-bench-tokio-alt`: the helper program behind the "tokio alt timer"
//! rows of `utimer bench`.
//!
//! tokio (1.49 and later) has an *alternative timer*: every worker thread of
//! a multi-thread runtime owns a timer wheel, and a `Sleep` made on a worker
//! goes into that worker's registration queue instead of a runtime-wide
//! wheel behind a mutex. Dropping a `Sleep` only marks its entry cancelled
//! (and queues it for the wheel's owner when it already is in the wheel):
//! the wheel itself is touched when the worker next parks, which moves the
//! registration queue into the wheel, drops the cancelled entries and fires
//! what is due. It is switched on by `Builder::enable_alt_timer`, which only
//! exists when tokio is compiled with `--cfg tokio_unstable`, and it only
//! applies to the multi-thread runtime. Sleeps made off the runtime's worker
//! threads (`Runtime::block_on` on the caller's thread, an entered context)
//! go through a shared "remote" queue instead, so every measurement here
//! runs inside a task spawned on the runtime.
//!
//! That cfg flag is why this is a separate program: see `Cargo.toml` and
//! `.cargo/config.toml` beside this file, and
//! `crates/utimer-bench/src/peers/tokio_alt.rs` for the bench's side.
//!
//! # Protocol
//!
//! `utimer-bench-tokio-alt CASE ARGS...` sets the case up and prints one
//! line, `{"ready":true}` or `{"error":"..."}`. Then each line it reads on
//! stdin is a number `n` (operations for batched cases; ignored by the
//! others) and each answer is one JSON line: `{"ns":T,"ops":K,...}`, the
//! time `T` in nanoseconds that `K` operations took, with extra fields for
//! some cases. It exits at the end of its input.
//!
//! # Cases
//!
//! All single-threaded cases use a runtime with one worker. Deferred work
//! is part of the cost: every timed part ends with one
//! [`tokio::task::yield_now`], which lets the worker park (with a zero
//! timeout) and do what the loop left to it (registering, dropping
//! cancelled entries, firing). Its fixed cost is amortised over the batch.
//!
//! * `arm_cancel PENDING`: `PENDING` background sleeps at random far
//!   deadlines, then a stack-pinned `sleep_until(now + 100 ms)` polled once
//!   and dropped, `n` times.
//! * `rearm JUMP`: one boxed sleep at ~3 s, `Sleep::reset` alternately to
//!   `e + JUMP` ms and `e`.
//! * `rearm_round JUMP`: the same, round `e + JUMP`, `e + 2 * JUMP` and `e`.
//! * `expiry N`: `N` boxed sleeps due over 64 ms, each polled once; the
//!   worker parks once untimed (they enter the wheel), the thread sleeps
//!   past the last deadline, and the timed part is the one park that fires
//!   them. `ops` counts only the sleeps fired in that timed park, `early`
//!   those already fired before it.
//! * `create_poll_drop`, `reset`, `pending N`, `expire N`, `lateness N`: the
//!   `async` group's cases (see `groups/async_timers.rs` in the bench
//!   crate); `pending` adds `bytes` (net heap bytes per future, counted by
//!   this program's allocator on all threads) and `rss` (resident-set
//!   growth per future), `lateness` answers `late` (µs, sorted) and
//!   `early`.
//! * `memory N`: net heap bytes and allocations per sleep with `N` boxed
//!   sleeps armed at random far deadlines, the vector of handles included
//!   (the `memory` group; `bytes` and `allocs`).
//! * `threads T OPS`: a runtime with two workers; `T` tasks start together
//!   and each does `OPS` arm+cancels; `ns` is the mean per task and
//!   `overlap` how much the timed loops overlapped (see the bench crate's
//!   `groups/threads.rs`).

#[cfg(not(tokio_unstable))]
compile_error!(
    "utimer-bench-tokio-alt needs `--cfg tokio_unstable`: build it from its own \
     directory, where .cargo/config.toml sets the flag"
);

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::hint::black_box;
use std::io::{BufRead, Write};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures_util::future::join_all;
use tokio::runtime::Runtime;
use tokio::time::{sleep, sleep_until, Instant, Sleep};

/// Arm+cancel distance in ms.
const ARM_DELTA: u64 = 100;
/// Background sleeps: now + FILL_MIN + uniform(0..FILL_SPAN) ms.
const FILL_MIN: u64 = 1_000;
const FILL_SPAN: u64 = 10_000_000;
/// The expiry case spreads deadlines over this many ms.
const EXPIRY_SPREAD: u64 = 64;
/// Re-arm cases: the sleep sits about this far out (ms).
const REARM_DELTA: u64 = 3_000;
/// The `async` group's far deadline.
const FAR: Duration = Duration::from_secs(3600);

/// Counts the net heap bytes allocated while [`COUNTING`] is set.
struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static NET_BYTES: AtomicI64 = AtomicI64::new(0);
static ALLOCS: AtomicI64 = AtomicI64::new(0);

impl Counting {
    #[inline]
    fn add(bytes: usize, sign: i64) {
        if COUNTING.load(Ordering::Relaxed) {
            NET_BYTES.fetch_add(sign * bytes as i64, Ordering::Relaxed);
            if sign > 0 {
                ALLOCS.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Net bytes and allocations made while `f` runs (all threads).
    fn measure<R>(f: impl FnOnce() -> R) -> (R, i64, i64) {
        let (b0, a0) = (
            NET_BYTES.load(Ordering::Relaxed),
            ALLOCS.load(Ordering::Relaxed),
        );
        COUNTING.store(true, Ordering::Relaxed);
        let r = f();
        COUNTING.store(false, Ordering::Relaxed);
        let b = NET_BYTES.load(Ordering::Relaxed) - b0;
        (r, b, ALLOCS.load(Ordering::Relaxed) - a0)
    }
}

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counter is only a side effect.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Counting::add(layout.size(), 1);
        // SAFETY: the caller's contract is passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        Counting::add(layout.size(), -1);
        // SAFETY: the caller's contract is passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Counted as one allocation (the grown block) and one free.
        Counting::add(new_size, 1);
        Counting::add(layout.size(), -1);
        // SAFETY: the caller's contract is passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The bench's PRNG (xorshift64*), so fills match the other rows'.
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> Self {
        XorShift(seed.max(1))
    }

    fn below(&mut self, n: u64) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A multi-thread runtime with `workers` workers and the alternative timer.
fn runtime(workers: usize) -> Result<Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_alt_timer()
        .build()
        .map_err(|e| format!("cannot build a tokio runtime: {e}"))
}

/// Runs `f` as a task on one of the runtime's workers (outside the
/// cooperative budget, which would turn polls after the 128th into no-ops)
/// and waits for it.
fn on_worker<F>(rt: &Runtime, f: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    rt.block_on(async move {
        tokio::spawn(tokio::task::unconstrained(f))
            .await
            .expect("bench task panicked")
    })
}

/// Lets the worker park once (zero timeout): it registers the queued
/// sleeps in its wheel, drops the cancelled ones and fires what is due.
async fn settle() {
    tokio::task::yield_now().await;
}

/// Polls once with a no-op waker; true if pending.
#[inline]
fn poll_once<F: Future>(f: Pin<&mut F>) -> bool {
    let mut cx = Context::from_waker(Waker::noop());
    matches!(f.poll(&mut cx), Poll::Pending)
}

/// The JSON answer for `ops` operations in `d`, plus `extra` fields.
fn answer(d: Duration, ops: u64, extra: &str) -> String {
    format!("{{\"ns\":{},\"ops\":{ops}{extra}}}", d.as_nanos())
}

/// A JSON string literal.
fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One set-up case: answers a line for each `n` it is given.
type Batch = Box<dyn FnMut(u64) -> String>;

fn arm_cancel(pending: usize) -> Result<Batch, String> {
    let rt = runtime(1)?;
    let fill: Vec<Pin<Box<Sleep>>> = on_worker(&rt, async move {
        let start = Instant::now();
        let mut rng = XorShift::new(0x5eed_0001);
        let mut v = Vec::with_capacity(pending);
        for _ in 0..pending {
            let mut s = Box::pin(sleep_until(start + ms(FILL_MIN + rng.below(FILL_SPAN))));
            poll_once(s.as_mut());
            v.push(s);
        }
        settle().await;
        v
    });
    // The sleeps go before their runtime.
    let state = (fill, rt);
    Ok(Box::new(move |n| {
        let d = on_worker(&state.1, async move {
            let at = Instant::now() + ms(ARM_DELTA);
            let t0 = std::time::Instant::now();
            for _ in 0..n {
                let s = pin!(sleep_until(black_box(at)));
                black_box(poll_once(s));
            }
            settle().await;
            t0.elapsed()
        });
        answer(d, n, "")
    }))
}

fn rearm(jump: u64) -> Result<Batch, String> {
    let mut flip = false;
    rearm_with(move |e| {
        flip = !flip;
        if flip {
            e + jump
        } else {
            e
        }
    })
}

fn rearm_round(jump: u64) -> Result<Batch, String> {
    let mut k = 0;
    rearm_with(move |e| {
        k = if k == 2 { 0 } else { k + 1 };
        e + k * jump
    })
}

/// One boxed sleep armed at `e`, reset to `next(e)` each time.
fn rearm_with(next: impl FnMut(u64) -> u64 + Send + 'static) -> Result<Batch, String> {
    let rt = runtime(1)?;
    let base = Instant::now();
    // ~REARM_DELTA ahead, 10 ms into a 64 ms bucket.
    let e = move || ((base.elapsed().as_millis() as u64 + REARM_DELTA) & !63) + 10;
    // The sleep and where the next move goes, between batches.
    let mut state = on_worker(&rt, async move {
        let s = Box::pin(sleep_until(base + ms(e())));
        settle().await;
        Some((s, next))
    });
    Ok(Box::new(move |n| {
        let (mut s, mut next) = state.take().expect("the sleep is back");
        let (d, s, next) = on_worker(&rt, async move {
            let e = e();
            let t0 = std::time::Instant::now();
            for _ in 0..n {
                s.as_mut().reset(black_box(base + ms(next(e))));
            }
            settle().await;
            (t0.elapsed(), s, next)
        });
        state = Some((s, next));
        answer(d, n, "")
    }))
}

fn expiry(n: usize) -> Result<Batch, String> {
    let rt = runtime(1)?;
    // Deadlines start this far after the first sleep is made, so that
    // making them all (and the untimed park) is over before any is due.
    let mut margin = ms(5);
    Ok(Box::new(move |_| {
        let m = margin;
        let (d, fired, early, made) = on_worker(&rt, async move {
            let c0 = Instant::now();
            let start = c0 + m;
            let mut v = Vec::with_capacity(n);
            for i in 0..n as u64 {
                let mut s = Box::pin(sleep_until(start + ms(1 + i % EXPIRY_SPREAD)));
                poll_once(s.as_mut());
                v.push(s);
            }
            let made = c0.elapsed();
            settle().await;
            let early = v.iter().filter(|s| s.is_elapsed()).count();
            // Past the last deadline by more than a wheel granule.
            let until = start + ms(EXPIRY_SPREAD + 16);
            std::thread::sleep(until.saturating_duration_since(Instant::now()));
            let t0 = std::time::Instant::now();
            settle().await;
            let d = t0.elapsed();
            let fired = v.iter().filter(|s| s.is_elapsed()).count() - early;
            (d, fired, early, made)
        });
        margin = (made * 2 + ms(2)).min(ms(2_000));
        answer(
            d,
            fired as u64,
            &format!(",\"early\":{early},\"missed\":{}", n - early - fired),
        )
    }))
}

fn create_poll_drop() -> Result<Batch, String> {
    let rt = runtime(1)?;
    Ok(Box::new(move |n| {
        let d = on_worker(&rt, async move {
            let t0 = std::time::Instant::now();
            for i in 0..n {
                let s = pin!(sleep(FAR + Duration::from_nanos(i & 1023)));
                black_box(poll_once(s));
            }
            settle().await;
            t0.elapsed()
        });
        answer(d, n, "")
    }))
}

fn reset() -> Result<Batch, String> {
    let rt = runtime(1)?;
    let (first, base) = on_worker(&rt, async move {
        let mut s = Box::pin(sleep(FAR));
        let pending = poll_once(s.as_mut());
        settle().await;
        pending.then_some((s, Instant::now() + FAR))
    })
    .ok_or("a 1 h sleep completed at once")?;
    let mut state = Some(first);
    Ok(Box::new(move |n| {
        let mut s = state.take().expect("the sleep is back");
        let (d, s) = on_worker(&rt, async move {
            let t0 = std::time::Instant::now();
            for i in 0..n {
                s.as_mut().reset(base + ms(i & 1));
                black_box(poll_once(s.as_mut()));
            }
            settle().await;
            (t0.elapsed(), s)
        });
        state = Some(s);
        answer(d, n, "")
    }))
}

/// The process's resident set in bytes, after handing freed memory back to
/// the kernel (glibc), or `None` if `/proc` is not readable.
fn rss_trimmed() -> Option<u64> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator.
    unsafe {
        libc::malloc_trim(0);
    }
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

fn pending(n: usize) -> Result<Batch, String> {
    let rt = runtime(1)?;
    let pause = ms(if n > 200_000 { 100 } else { 20 });
    Ok(Box::new(move |_| {
        let rss0 = rss_trimmed();
        let (d, bytes, v) = on_worker(&rt, async move {
            let mut rng = XorShift::new(0xa5_9c);
            let mut v: Vec<Pin<Box<Sleep>>> = Vec::with_capacity(n);
            let (t0, bytes, _) = Counting::measure(|| {
                let t0 = std::time::Instant::now();
                for _ in 0..n {
                    let d = FAR + Duration::from_micros(rng.below(3_600_000_000));
                    let mut s = Box::pin(sleep(d));
                    poll_once(s.as_mut());
                    v.push(s);
                }
                t0
            });
            settle().await;
            (t0.elapsed(), bytes, v)
        });
        std::thread::sleep(pause);
        let rss1 = rss_trimmed();
        on_worker(&rt, async move {
            drop(v);
            settle().await;
        });
        let rss = match (rss0, rss1) {
            (Some(a), Some(b)) => format!(",\"rss\":{}", b.saturating_sub(a) as f64 / n as f64),
            _ => String::new(),
        };
        let bytes = format!(",\"bytes\":{}{rss}", bytes as f64 / n as f64);
        answer(d, n as u64, &bytes)
    }))
}

fn memory(n: usize) -> Result<Batch, String> {
    let rt = runtime(1)?;
    Ok(Box::new(move |_| {
        let (bytes, allocs) = on_worker(&rt, async move {
            let start = Instant::now();
            let mut rng = XorShift::new(0x5eed_0003);
            let (v, bytes, allocs) = Counting::measure(|| {
                let mut v = Vec::with_capacity(n);
                for _ in 0..n {
                    let mut s = Box::pin(sleep_until(start + ms(FILL_MIN + rng.below(FILL_SPAN))));
                    poll_once(s.as_mut());
                    v.push(s);
                }
                v
            });
            drop(v);
            settle().await;
            (bytes, allocs)
        });
        let (n, b, a) = (n as f64, bytes as f64, allocs as f64);
        let extra = format!(",\"bytes\":{},\"allocs\":{}", b / n, a / n);
        answer(Duration::ZERO, n as u64, &extra)
    }))
}

fn expire(n: usize) -> Result<Batch, String> {
    let rt = runtime(1)?;
    Ok(Box::new(move |_| {
        let (d, done) = on_worker(&rt, async move {
            let t0 = std::time::Instant::now();
            let all = (0..n).map(|i| {
                let spread = (i as u64).wrapping_mul(7919) % 9000;
                sleep(Duration::from_micros(1000 + spread))
            });
            let done = join_all(all).await.len();
            (t0.elapsed(), done)
        });
        assert_eq!(done, n);
        answer(d, n as u64, "")
    }))
}

fn lateness(n: usize) -> Result<Batch, String> {
    let rt = runtime(1)?;
    Ok(Box::new(move |_| {
        let (d, mut late, early) = on_worker(&rt, async move {
            let t0 = std::time::Instant::now();
            let (mut late, mut early) = (Vec::with_capacity(n), 0);
            for _ in 0..n {
                let at = std::time::Instant::now() + ms(1);
                sleep_until(at.into()).await;
                let now = std::time::Instant::now();
                if now < at {
                    early += 1;
                }
                late.push(now.saturating_duration_since(at).as_secs_f64() * 1e6);
            }
            (t0.elapsed(), late, early)
        });
        late.sort_by(f64::total_cmp);
        let list: Vec<String> = late.iter().map(|x| format!("{x}")).collect();
        let extra = format!(",\"late\":[{}],\"early\":{early}", list.join(","));
        answer(d, n as u64, &extra)
    }))
}

fn threads(threads: usize, ops: u64) -> Result<Batch, String> {
    let rt = runtime(2)?;
    Ok(Box::new(move |_| {
        let arrived = Arc::new(AtomicUsize::new(0));
        let spans = rt.block_on(async {
            let tasks: Vec<_> = (0..threads)
                .map(|_| {
                    let arrived = arrived.clone();
                    tokio::spawn(tokio::task::unconstrained(async move {
                        // A spinning barrier with a timeout: both tasks may
                        // land on one worker.
                        arrived.fetch_add(1, Ordering::AcqRel);
                        let t0 = std::time::Instant::now();
                        while arrived.load(Ordering::Acquire) < threads && t0.elapsed() < ms(50) {
                            std::hint::spin_loop();
                        }
                        let at = Instant::now() + ms(ARM_DELTA);
                        let start = std::time::Instant::now();
                        for _ in 0..ops {
                            let s = pin!(sleep_until(black_box(at)));
                            black_box(poll_once(s));
                        }
                        settle().await;
                        (start, std::time::Instant::now())
                    }))
                })
                .collect();
            let mut spans = Vec::new();
            for t in tasks {
                spans.push(t.await.expect("bench task panicked"));
            }
            spans
        });
        let total: Duration = spans.iter().map(|(s, e)| *e - *s).sum();
        let mean = total / spans.len() as u32;
        let mut extra = String::new();
        if spans.len() > 1 {
            let first_end = spans.iter().map(|s| s.1).min().expect("spans");
            let last_start = spans.iter().map(|s| s.0).max().expect("spans");
            let both = first_end.saturating_duration_since(last_start);
            let overlap = both.as_secs_f64() / mean.as_secs_f64().max(1e-12);
            extra = format!(",\"overlap\":{overlap}");
        }
        answer(mean, ops, &extra)
    }))
}

/// Parses the case and its arguments and sets it up.
fn setup(args: &[String]) -> Result<Batch, String> {
    let num = |i: usize| -> Result<u64, String> {
        let a = args.get(i).ok_or(format!("missing argument {i}"))?;
        a.parse().map_err(|_| format!("bad number `{a}`"))
    };
    let size = |i| num(i).map(|n| n as usize);
    match args.first().map(String::as_str) {
        Some("arm_cancel") => arm_cancel(size(1)?),
        Some("rearm") => rearm(num(1)?),
        Some("rearm_round") => rearm_round(num(1)?),
        Some("expiry") => expiry(size(1)?),
        Some("create_poll_drop") => create_poll_drop(),
        Some("reset") => reset(),
        Some("pending") => pending(size(1)?),
        Some("memory") => memory(size(1)?),
        Some("expire") => expire(size(1)?),
        Some("lateness") => lateness(size(1)?),
        Some("threads") => threads(size(1)?, num(2)?),
        Some(c) => Err(format!("unknown case `{c}`")),
        None => Err("usage: utimer-bench-tokio-alt CASE ARGS...".to_string()),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut out = std::io::stdout().lock();
    let mut batch = match setup(&args) {
        Ok(b) => b,
        Err(e) => {
            let _ = writeln!(out, "{{\"error\":{}}}", json_str(&e));
            std::process::exit(2);
        }
    };
    let ready = writeln!(out, "{{\"ready\":true}}").and_then(|()| out.flush());
    if ready.is_err() {
        return;
    }
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { return };
        let reply = match line.trim().parse::<u64>() {
            Ok(n) => batch(n),
            Err(_) => format!("{{\"error\":{}}}", json_str(&format!("bad input `{line}`"))),
        };
        if writeln!(out, "{reply}").and_then(|()| out.flush()).is_err() {
            return;
        }
    }
}
