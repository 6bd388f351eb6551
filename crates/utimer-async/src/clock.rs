//! The test clock: [`pause`], [`resume`] and [`advance`], as
//! `tokio::time`'s, with auto-advance. (Under a tokio runtime whose own
//! clock is paused, the futures follow that clock instead: see
//! `tokio_clock`.)
//!
//! # Ground rules
//!
//! * **A paused clock belongs to the thread that paused it**, the thread a
//!   `current_thread` runtime (`#[tokio::test]`'s), `futures`' `block_on`
//!   or a `LocalPool` runs its tasks on. [`Instant::now`] on that thread
//!   reads the paused clock; every other thread, and so every other
//!   runtime in the process, keeps real time. tokio ties the pause to its
//!   runtime the same way, and refuses to pause a multi-thread runtime.
//! * **A pause ends with what made it**: the clock *ends* when its owner
//!   thread exits (libtest gives each test a thread), and, with the
//!   `tokio` feature, when the tokio runtime it was paused in shuts down:
//!   [`pause`] spawns a task on that runtime that holds the clock and ends
//!   it when the runtime drops it. An ended clock runs again, its keeper
//!   exits, its virtual timers are woken (to move to real timers), and the
//!   owner thread lets go of it at its next clock call ([`current`]), so
//!   that it reads real time, and a later [`pause`] starts a fresh clock,
//!   as a new tokio runtime does.
//! * **Paused timers are virtual.** A [`Sleep`](crate::Sleep),
//!   [`Timeout`](crate::Timeout) or [`Interval`](crate::Interval) polled
//!   on a paused thread queues no utimer timer: it puts its deadline and
//!   waker in the clock's list ([`Timers`]), and completes once the
//!   paused clock reads its deadline, exactly (never early, never late:
//!   a paused clock has no wake-up latency). One that was queued on a real
//!   timer before the pause leaves it at its next poll.
//! * **The clock moves only forward, and only by [`advance`] or
//!   auto-advance.** Moving it fires, in one step, every virtual timer at
//!   or before the new reading: their wakers are woken after the clock's
//!   lock is dropped. A timer and a timeout due at the same instant fire
//!   together, and a [`Timeout`](crate::Timeout) polls its future first,
//!   so a future ready at its deadline wins, as in tokio.
//! * **Auto-advance** moves a paused clock to its earliest virtual timer
//!   when the owning thread has nothing left to run: when it is parked,
//!   blocked in `futex` (a condition variable, `thread::park`) or in
//!   `epoll_wait`/`poll`/`select` (an event loop's park). A per-clock
//!   thread, the *keeper*, watches for that: it reads the owner's state
//!   from `/proc/self/task/TID/{stat,syscall,schedstat}` and moves the
//!   clock only after two readings, taken apart, show the owner asleep in
//!   one of those calls without having run in between. While the owner
//!   runs (a task is being polled, or it blocks in any other call, such
//!   as `std::thread::sleep` or a file read), the clock does not move.
//!   This is tokio's rule (the runtime advances when it would park) seen
//!   from outside the executor, so it holds under any executor.
//! * **Resuming** ([`resume`]) lets the clock run again from its paused
//!   reading: [`Instant::now`] is that reading plus the real time since,
//!   and every virtual timer is woken, to queue itself on a real timer at
//!   its next poll, for the deadline converted back to real time.
//!
//! # Lock order and who touches what
//!
//! `TestClock::state` (a `Mutex`) is the only lock. The owner thread
//! takes it to read the clock and to add, move and remove virtual
//! timers; the keeper takes it to advance. Wakers are always woken
//! after it is released. `TestClock::ended` is set under it and read
//! without it (a one-way flag: a reader that misses it sees it at its next
//! call). [`EVER_PAUSED`] is a one-way flag (Relaxed: only
//! the thread that set it needs to see it, and it does, in program
//! order) that keeps threads that never paused from touching their
//! thread-local.
//!
//! # Where it differs from tokio
//!
//! * tokio's paused clock counts in milliseconds: its timers fire at the
//!   first millisecond tick at or after their deadline. This one fires at
//!   the deadline itself, so after `sleep(1.5 ms)` the clock has moved
//!   1.5 ms, where tokio's moved 2 ms.
//! * tokio's own timers do not follow this clock (the crate's futures
//!   follow tokio's: see `tokio_clock`; with `test-util`, [`pause`] in a
//!   tokio runtime is tokio's).
//! * A task blocked on a `std::sync::Mutex` (a `futex` wait) looks parked
//!   to the keeper.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant as StdInstant};

/// Set by the first [`pause`] in the process: until then, reading the
/// clock is reading `std::time::Instant`, with no thread-local access.
static EVER_PAUSED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// The calling thread's test clock, once it paused.
    static CLOCK: RefCell<Option<Owner>> = const { RefCell::new(None) };
}

/// The thread-local's hold on a clock: ends it when the owner thread
/// exits.
struct Owner(Arc<TestClock>);

impl Drop for Owner {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// A thread's test clock.
pub(crate) struct TestClock {
    state: Mutex<State>,
    /// Signals the keeper: a timer was added, or the clock ended.
    cv: Condvar,
    /// The owner thread's kernel ID (`gettid`), for the keeper's readings.
    owner_tid: libc::pid_t,
    /// Set once the clock ended (its owner thread exited, or the tokio
    /// runtime it was paused in shut down): the owner thread then lets go
    /// of it, and reads real time until it pauses a fresh one. Read
    /// without the lock by every [`current`].
    ended: AtomicBool,
    /// Whether a tokio runtime's shutdown will end it (one guard task is
    /// enough).
    #[cfg(feature = "tokio")]
    tied_to_runtime: AtomicBool,
}

/// Everything under the clock's lock.
struct State {
    /// The clock's reading when it was paused, or, while it runs, when it
    /// was last resumed.
    base: StdInstant,
    /// While it runs: the real instant of the last resume (the clock reads
    /// `base + (real now - unfrozen)`). `None` while paused.
    unfrozen: Option<StdInstant>,
    timers: Timers,
    /// Bumped by every access of the owner thread: the keeper advances
    /// only if it did not change while the keeper watched the owner.
    activity: u64,
    keeper_started: bool,
    /// The clock ended ([`TestClock::ended`]): the keeper exits.
    owner_gone: bool,
}

/// The virtual timers of a paused clock: deadline and a serial number
/// (which keeps equal deadlines apart) to the waker to wake.
struct Timers {
    map: BTreeMap<(StdInstant, u64), Waker>,
    next_serial: u64,
}

impl Timers {
    /// Removes and returns every waker due at or before `now`.
    fn take_due(&mut self, now: StdInstant) -> Vec<Waker> {
        let later = match now.checked_add(Duration::from_nanos(1)) {
            Some(t) => self.map.split_off(&(t, 0)),
            None => BTreeMap::new(),
        };
        std::mem::replace(&mut self.map, later)
            .into_values()
            .collect()
    }

    /// Removes and returns every waker.
    fn take_all(&mut self) -> Vec<Waker> {
        std::mem::take(&mut self.map).into_values().collect()
    }

    fn first(&self) -> Option<StdInstant> {
        self.map.keys().next().map(|&(t, _)| t)
    }
}

fn wake_all(wakers: Vec<Waker>) {
    for w in wakers {
        w.wake();
    }
}

impl State {
    fn now(&self) -> StdInstant {
        match self.unfrozen {
            None => self.base,
            Some(since) => self.base + since.elapsed(),
        }
    }
}

impl TestClock {
    /// The state, for the keeper (and the owner's exit).
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state, for the owner thread: counts as activity.
    fn touch(&self) -> MutexGuard<'_, State> {
        let mut st = self.lock();
        st.activity = st.activity.wrapping_add(1);
        st
    }

    /// Whether the clock is paused now.
    fn is_paused(&self) -> bool {
        self.touch().unfrozen.is_none()
    }

    /// Ends the clock: it runs again (from its reading, as after
    /// [`resume`]), its keeper exits, the futures waiting on it are woken
    /// (to move to real timers), and its owner thread lets go of it at its
    /// next clock call. Called when the owner thread exits, and when the
    /// tokio runtime in which it was paused shuts down: a pause lasts as
    /// long as the runtime (or, for a test on its own thread, the test)
    /// that made it, as tokio's.
    fn end(&self) {
        let mut st = self.lock();
        if st.unfrozen.is_none() {
            st.unfrozen = Some(StdInstant::now());
        }
        st.owner_gone = true;
        let wake = st.timers.take_all();
        self.ended.store(true, Relaxed);
        drop(st);
        self.cv.notify_all();
        wake_all(wake);
    }

    /// Moves a paused clock to `to` (if later) and fires what is due.
    fn advance_to(&self, mut st: MutexGuard<'_, State>, to: StdInstant) {
        if to > st.base {
            st.base = to;
        }
        let now = st.base;
        let due = st.timers.take_due(now);
        drop(st);
        wake_all(due);
    }
}

/// The calling thread's clock, if it ever paused and that clock has not
/// ended (an ended one is let go of here).
fn current() -> Option<Arc<TestClock>> {
    if !EVER_PAUSED.load(Relaxed) {
        return None;
    }
    CLOCK
        .try_with(|c| {
            let clock = c.borrow().as_ref().map(|o| o.0.clone())?;
            if clock.ended.load(Relaxed) {
                // Dropping the `Owner` ends it again: nothing to do twice.
                let owner = c.borrow_mut().take();
                drop(owner);
                return None;
            }
            Some(clock)
        })
        .ok()
        .flatten()
}

/// Whether any thread ever paused its clock (then deadlines are converted
/// to real time through the caller's clock, which may run offset).
#[inline]
pub(crate) fn ever_paused() -> bool {
    EVER_PAUSED.load(Relaxed)
}

/// The calling thread's clock, if it is paused now: what decides whether
/// a future waits on a virtual timer.
pub(crate) fn paused() -> Option<Arc<TestClock>> {
    current().filter(|c| c.is_paused())
}

/// The clock's reading ([`Instant::now`](crate::Instant::now)): the
/// calling thread's own clock if it has one, else tokio's (which is the
/// real clock unless the calling thread's tokio runtime paused it: see
/// `tokio_clock`), else the real clock.
#[inline]
pub(crate) fn now() -> StdInstant {
    match current() {
        None => base_now(),
        Some(c) => c.touch().now(),
    }
}

/// The clock under the crate's own: tokio's, where tokio's can pause.
#[inline]
fn base_now() -> StdInstant {
    #[cfg(feature = "tokio")]
    if crate::tokio_clock::CAN_PAUSE {
        return crate::tokio_clock::now();
    }
    StdInstant::now()
}

/// The real instant at which the calling thread's running clock reads
/// `t`, for arming a real timer: `t` itself on a thread that never
/// paused, or whose clock has not moved away from real time.
pub(crate) fn to_real(t: StdInstant) -> StdInstant {
    let Some(c) = current() else { return t };
    let st = c.touch();
    // While paused no real timer waits on this mapping (a sleep that
    // leaves the paused clock converts its deadline again when it is
    // next polled), so the identity serves.
    let since = st.unfrozen.unwrap_or(st.base);
    match t.checked_duration_since(st.base) {
        Some(after) => since.checked_add(after).unwrap_or(t),
        None => since.checked_sub(st.base - t).unwrap_or(since),
    }
}

/// A future's place among a paused clock's virtual timers, if it has one.
/// It names its clock, so it is given up on the right one from any
/// thread.
#[derive(Default)]
pub(crate) struct VirtualTimer {
    place: Option<Place>,
}

/// Where a virtual timer waits: its clock and its key there.
struct Place {
    clock: Arc<TestClock>,
    key: (StdInstant, u64),
}

impl std::fmt::Debug for VirtualTimer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VirtualTimer")
            .field("deadline", &self.place.as_ref().map(|p| p.key.0))
            .finish()
    }
}

impl VirtualTimer {
    /// Polls it on the paused `clock` for `deadline`: ready once the clock
    /// reads it; else `cx`'s waker is the one the clock wakes then.
    pub(crate) fn poll(
        &mut self,
        clock: &Arc<TestClock>,
        deadline: StdInstant,
        cx: &mut Context<'_>,
    ) -> Poll<()> {
        if self
            .place
            .as_ref()
            .is_some_and(|p| !Arc::ptr_eq(&p.clock, clock))
        {
            // Polled on another paused thread than before.
            drop(self.release());
        }
        let mut st = clock.touch();
        if st.now() >= deadline {
            if let Some(p) = self.place.take() {
                st.timers.map.remove(&p.key);
            }
            return Poll::Ready(());
        }
        if let Some(p) = &self.place {
            if p.key.0 == deadline {
                if let Some(w) = st.timers.map.get_mut(&p.key) {
                    if !w.will_wake(cx.waker()) {
                        w.clone_from(cx.waker());
                    }
                    return Poll::Pending;
                }
            } else {
                st.timers.map.remove(&p.key);
            }
        }
        let serial = st.timers.next_serial;
        st.timers.next_serial += 1;
        let key = (deadline, serial);
        st.timers.map.insert(key, cx.waker().clone());
        let start_keeper = !st.keeper_started;
        st.keeper_started = true;
        drop(st);
        self.place = Some(Place {
            clock: clock.clone(),
            key,
        });
        clock.cv.notify_all();
        if start_keeper {
            keeper::start(clock.clone());
        }
        Poll::Pending
    }

    /// Whether its deadline was reached on the paused clock while it
    /// waited (the clock fired it).
    pub(crate) fn fired(&self) -> bool {
        self.place
            .as_ref()
            .is_some_and(|p| p.clock.touch().now() >= p.key.0)
    }

    /// Gives up its place (the future completed, was dropped, or moves to
    /// a real timer), returning the waker it held, if the clock had not
    /// fired it yet.
    pub(crate) fn release(&mut self) -> Option<Waker> {
        let p = self.place.take()?;
        let w = p.clock.touch().timers.map.remove(&p.key);
        w
    }

    /// Moves it to `deadline` (a reset while it waits on a paused clock):
    /// its waker moves with it, and is woken now if the clock already
    /// reads `deadline`. Returns false if it has no place, or the clock
    /// fired it already (its task will poll, and see the new deadline).
    pub(crate) fn reset(&mut self, deadline: StdInstant) -> bool {
        let Some(p) = &mut self.place else {
            return false;
        };
        let clock = p.clock.clone();
        let mut st = clock.touch();
        let Some(w) = st.timers.map.remove(&p.key) else {
            drop(st);
            self.place = None;
            return false;
        };
        if st.now() >= deadline {
            drop(st);
            self.place = None;
            w.wake();
            return true;
        }
        p.key = (deadline, p.key.1);
        st.timers.map.insert(p.key, w);
        drop(st);
        clock.cv.notify_all();
        true
    }
}

impl Drop for VirtualTimer {
    fn drop(&mut self) {
        if self.place.is_some() {
            drop(self.release());
        }
    }
}

/// Pauses the calling thread's clock (`tokio::time::pause`): from now on
/// [`Instant::now`](crate::Instant::now) on this thread returns the same
/// reading until [`advance`] or auto-advance moves it, and the crate's
/// futures polled on this thread wait on the paused clock. Call it first
/// in a test, from inside the runtime's thread (`#[tokio::test]`'s body,
/// `futures::executor::block_on`'s future).
///
/// Under tokio there is usually nothing to call: the crate's futures
/// follow tokio's own paused clock (`#[tokio::test(start_paused = true)]`,
/// `Builder::start_paused(true)`, `tokio::time::pause()`), with the
/// `tokio` feature. With the `test-util` feature, this function called
/// inside a tokio runtime *is* `tokio::time::pause()` (tokio's rules and
/// panics), and [`resume`] and [`advance`] are tokio's there too. What
/// follows is this crate's own clock: under any other executor, and
/// under tokio without `test-util`.
///
/// The rules, tokio's unless said otherwise:
///
/// * **The pause belongs to the calling thread**, which is the runtime's
///   for a `current_thread` tokio runtime or a `block_on`: every other
///   thread, and so every other runtime, keeps real time. (tokio refuses
///   to pause a multi-thread runtime; here each thread has its own clock.)
///   A `std::time::Instant` keeps real time everywhere.
/// * **The pause ends with the test or the runtime that made it**: when
///   the thread exits (libtest runs each test on a thread of its own), and,
///   with the `tokio` feature, when the tokio runtime it was made in shuts
///   down (a task of the runtime holds it; `num_alive_tasks` counts it).
///   The thread then reads real time, and a later [`pause`] starts a fresh
///   paused clock, as a new tokio runtime does. Two `block_on`s one after
///   the other on one thread share the pause.
/// * **Paused timers fire exactly at their deadline** when the clock
///   reaches it, all those at or before a new reading in one step; a
///   timeout's future is polled first, so a timer due exactly at a
///   timeout's deadline wins. (tokio's paused timers fire at the next
///   millisecond tick instead.)
/// * **Auto-advance**: when the thread has nothing left to run (it parks:
///   it waits in `futex`, as `thread::park` and condition variables do,
///   or in `epoll_wait`, `poll` or `select`, as an event loop does), the
///   clock moves to the earliest timer waiting on it. It never moves while
///   a task of the thread runs, or while the thread blocks in another call
///   (`std::thread::sleep`, a file read). A helper thread watches for the
///   park through `/proc/self/task/TID/`; where that cannot be read, the
///   clock moves after the thread touched no timer for 2 ms instead.
/// * **Wakes from other threads race with auto-advance**, as in tokio: a
///   task woken by another thread just as the clock moves can see the
///   clock already moved. A task blocked on a `std::sync::Mutex` looks
///   parked.
///
/// # Panics
/// If the calling thread's clock is already paused ("time is already
/// frozen", as tokio); with `test-util`, inside a tokio runtime, where
/// `tokio::time::pause()` panics (its clock is paused already, or the
/// runtime is a multi-thread one).
#[track_caller]
pub fn pause() {
    #[cfg(feature = "test-util")]
    if paused().is_none() && crate::tokio_clock::forward::in_runtime() {
        crate::tokio_clock::forward::pause();
        return;
    }
    #[cfg(all(feature = "tokio", not(feature = "test-util")))]
    if paused().is_none() && crate::tokio_clock::clock_is_virtual() {
        panic!("time is already frozen: {TOKIO_PAUSED}");
    }
    let clock = CLOCK.with(|c| {
        let mut c = c.borrow_mut();
        let owner = c.get_or_insert_with(|| {
            let now = StdInstant::now();
            Owner(Arc::new(TestClock {
                state: Mutex::new(State {
                    base: now,
                    unfrozen: Some(now),
                    timers: Timers {
                        map: BTreeMap::new(),
                        next_serial: 0,
                    },
                    activity: 0,
                    keeper_started: false,
                    owner_gone: false,
                }),
                cv: Condvar::new(),
                owner_tid: keeper::gettid(),
                ended: AtomicBool::new(false),
                #[cfg(feature = "tokio")]
                tied_to_runtime: AtomicBool::new(false),
            }))
        });
        owner.0.clone()
    });
    let mut st = clock.touch();
    if st.unfrozen.is_none() {
        drop(st);
        panic!("time is already frozen");
    }
    st.base = st.now();
    st.unfrozen = None;
    drop(st);
    EVER_PAUSED.store(true, Relaxed);
    #[cfg(feature = "tokio")]
    if !clock.tied_to_runtime.load(Relaxed) {
        let c = clock.clone();
        if crate::tokio_clock::on_runtime_end(move || c.end()) {
            clock.tied_to_runtime.store(true, Relaxed);
        }
    }
}

/// Lets the calling thread's paused clock run again (`tokio::time::resume`):
/// [`Instant::now`](crate::Instant::now) is the paused reading plus the
/// real time since this call, and the futures waiting on the paused clock
/// wait for their deadlines in real time from here. With the `test-util`
/// feature, inside a tokio runtime whose clock this crate did not pause,
/// it is `tokio::time::resume()`.
///
/// # Panics
/// If the calling thread's clock is not paused ("time is not frozen", as
/// tokio).
#[track_caller]
pub fn resume() {
    let Some(clock) = paused() else {
        #[cfg(feature = "test-util")]
        if crate::tokio_clock::forward::in_runtime() {
            crate::tokio_clock::forward::resume();
            return;
        }
        #[cfg(all(feature = "tokio", not(feature = "test-util")))]
        if crate::tokio_clock::clock_is_virtual() {
            panic!("time is not frozen: {TOKIO_PAUSED}");
        }
        panic!("time is not frozen");
    };
    let mut st = clock.touch();
    st.unfrozen = Some(StdInstant::now());
    let wake = st.timers.take_all();
    drop(st);
    wake_all(wake);
}

/// Moves the calling thread's paused clock forward by `duration`, in one
/// step, then yields once to the executor (`tokio::time::advance`). Every
/// future waiting on the paused clock with a deadline at or before the
/// new reading is woken, all "at the same time"; they complete when their
/// tasks next run, which the yield lets happen before this returns on a
/// single-threaded executor. To have timers fire in order, one after the
/// other, `sleep` instead and let the clock auto-advance. With the
/// `test-util` feature, inside a tokio runtime whose clock this crate did
/// not pause, it is `tokio::time::advance`.
///
/// # Panics
/// When first polled: if the calling thread's clock is not paused ("time
/// is not frozen"), or if the new reading overflows `Instant` (as tokio).
pub async fn advance(duration: Duration) {
    let Some(clock) = paused() else {
        #[cfg(feature = "test-util")]
        if crate::tokio_clock::forward::in_runtime() {
            crate::tokio_clock::forward::advance(duration).await;
            return;
        }
        #[cfg(all(feature = "tokio", not(feature = "test-util")))]
        if crate::tokio_clock::clock_is_virtual() {
            panic!("time is not frozen: {TOKIO_PAUSED}");
        }
        panic!("time is not frozen");
    };
    {
        let st = clock.touch();
        let Some(to) = st.base.checked_add(duration) else {
            drop(st);
            panic!("the duration passed to `advance` overflows the clock");
        };
        clock.advance_to(st, to);
    }
    drop(clock);
    yield_once().await;
}

/// What the panics of [`pause`], [`resume`] and [`advance`] add where
/// tokio's clock is paused and this crate's is not, without `test-util`.
#[cfg(all(feature = "tokio", not(feature = "test-util")))]
const TOKIO_PAUSED: &str = "this tokio runtime's clock is paused, and utimer-async's \
    futures follow it, but utimer_async::{pause, resume, advance} cannot move it \
    without utimer-async's `test-util` feature (which makes them tokio's inside a \
    runtime): turn it on in dev-dependencies, or call tokio::time's";

/// Pending once (after waking its own task), then ready: lets the tasks
/// that an advance woke run first (tokio's `advance` ends with
/// `yield_now`).
fn yield_once() -> impl std::future::Future<Output = ()> + Send + 'static {
    let mut yielded = false;
    poll_fn(move |cx| {
        if yielded {
            return Poll::Ready(());
        }
        yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
}

mod keeper;
