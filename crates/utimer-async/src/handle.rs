//! [`Handle`]: which timer system drives a future's timer.

use crate::Instant;
use crate::{Interval, Sleep, Timeout};
use std::future::IntoFuture;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use utimer::{ClockId, Ktime, Runtime, TimerSystem};

/// The process-wide default: a [`Runtime`] made from the builder given to
/// [`Handle::init_global`], or else one worker pinned to each CPU the
/// process may run on; started by the first future that needs it, never
/// stopped.
struct Global {
    rt: Runtime,
    anchor: Anchor,
}

static GLOBAL: OnceLock<Global> = OnceLock::new();

/// Whether the default runtime's start has begun, and the builder
/// [`Handle::init_global`] was given, until then.
static CONFIG: Mutex<(bool, Option<utimer::Builder>)> = Mutex::new((false, None));

/// Starts the default runtime if it has not started.
#[inline]
pub(crate) fn start_global() {
    global();
}

/// The default runtime, started if it has not: a load and a branch, the
/// start out of line.
#[inline]
fn global() -> &'static Global {
    match GLOBAL.get() {
        Some(g) => g,
        None => start(),
    }
}

#[cold]
#[inline(never)]
fn start() -> &'static Global {
    GLOBAL.get_or_init(|| {
        let builder = {
            let mut config = CONFIG.lock().unwrap_or_else(|e| e.into_inner());
            config.0 = true;
            config.1.take()
        };
        let builder = builder.unwrap_or_else(|| TimerSystem::builder().pin_to_process_cpus());
        let rt = Runtime::with_builder(builder)
            .expect("utimer-async: cannot start the default utimer runtime");
        let anchor = Anchor::new(rt.system());
        Global { rt, anchor }
    })
}

/// [`Handle::init_global`] came too late: the process-wide runtime has
/// started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlreadyStarted(());

impl std::fmt::Display for AlreadyStarted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the process-wide utimer-async runtime has already started")
    }
}

impl std::error::Error for AlreadyStarted {}

/// How an [`Instant`] becomes nanoseconds of `CLOCK_MONOTONIC` as hrtimers
/// count them: one pair of readings, taken when the handle's system is
/// first used, ties the two, and every conversion adds the distance from
/// the pair's `Instant`.
///
/// On Linux, `Instant` *is* `CLOCK_MONOTONIC`, but opaquely: the pair
/// reads the `Instant` first and the nanoseconds second, a little later,
/// so a deadline converted through it lands that little (nanoseconds)
/// *later* than the true one, never earlier, and the two clocks never
/// drift apart. With a manual [`Clock`](utimer::Clock) the pair ties the
/// manual clock's reading at the handle's creation to that `Instant`: an
/// `Instant` then stands for the manual time it would be had the manual
/// clock run in real time since, and deadlines are reached by advancing
/// the manual clock (a first poll asks the manual clock whether a deadline
/// more than 20 ms ahead of it has passed, and the real clock about the
/// nearer ones; a missed interval tick is judged by the real clock).
#[derive(Copy, Clone, Debug)]
pub(crate) struct Anchor {
    instant: std::time::Instant,
    ns: u64,
}

impl Anchor {
    fn new(sys: &TimerSystem) -> Anchor {
        let instant = std::time::Instant::now();
        let ns = sys.clock_ns(ClockId::Monotonic).as_nanos();
        Anchor { instant, ns }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

struct Explicit {
    sys: Arc<TimerSystem>,
    anchor: Anchor,
}

#[derive(Clone)]
enum Inner {
    Global,
    Explicit(Arc<Explicit>),
}

/// The timer system that drives a future's timer: the counterpart of
/// `tokio::runtime::Handle` for its time driver.
///
/// The free functions ([`sleep`](crate::sleep), [`timeout`](crate::timeout),
/// [`interval`](crate::interval), …) use the process-wide default,
/// [`Handle::global`]: a utimer [`Runtime`] with one worker thread pinned to
/// each CPU the process may run on (or as [`Handle::init_global`] set it),
/// started lazily by the first future made (before it reads its deadline),
/// that lives until the process exits. A future queues its timer on the
/// worker of the CPU its task runs on when it is first polled, as the
/// kernel queues timers on the local CPU: the threads of a multi-thread
/// executor arm and cancel on bases of their own, without sharing a lock.
/// A `Handle` made from your own system ([`Handle::new`],
/// [`Handle::from_runtime`]) makes the same futures on that system
/// instead, through its methods (`handle.sleep(..)`): its timers fire only
/// while something runs that system's workers (a [`Runtime`], or your own
/// threads through [`utimer::Worker`]). Cloning is cheap.
#[derive(Clone)]
pub struct Handle {
    inner: Inner,
}

impl Handle {
    /// A handle to `sys`. Its timers fire only while `sys`'s workers run
    /// (see the type's docs).
    pub fn new(sys: Arc<TimerSystem>) -> Handle {
        let anchor = Anchor::new(&sys);
        Handle {
            inner: Inner::Explicit(Arc::new(Explicit { sys, anchor })),
        }
    }

    /// A handle to `rt`'s system ([`Runtime::system_arc`]). The system
    /// outlives the runtime while the handle lives, but shuts down with it:
    /// its timers are cancelled, and futures that poll them panic, as
    /// tokio's do once their runtime is gone (see the crate docs).
    pub fn from_runtime(rt: &Runtime) -> Handle {
        Handle::new(rt.system_arc())
    }

    /// The process-wide default, started on first use: a [`Runtime`] with
    /// one worker pinned to each CPU the process may run on, unless
    /// [`Handle::init_global`] said otherwise. What the free functions use.
    pub fn global() -> Handle {
        Handle {
            inner: Inner::Global,
        }
    }

    /// Sets how the process-wide default runtime is made, before its
    /// first use: `builder` is started ([`Runtime::with_builder`]) by the
    /// first future that needs the runtime. Without it, the runtime has
    /// one worker pinned to each CPU the process may run on
    /// (`TimerSystem::builder().pin_to_process_cpus()`). tokio's
    /// counterpart is the runtime `Builder`'s time settings.
    ///
    /// # Errors
    /// [`AlreadyStarted`] if the default runtime has started (a future of
    /// the free functions, or of [`Handle::global`]'s methods, was made:
    /// the runtime starts before the first deadline is read; or
    /// [`Handle::global`]'s system was asked for); `builder` is dropped.
    pub fn init_global(builder: utimer::Builder) -> Result<(), AlreadyStarted> {
        let mut config = CONFIG.lock().unwrap_or_else(|e| e.into_inner());
        if config.0 {
            return Err(AlreadyStarted(()));
        }
        config.1 = Some(builder);
        Ok(())
    }

    /// [`Handle::global`], its runtime started: a deadline read after this
    /// is not late by the start (threads spawned: up to milliseconds), as
    /// it would be if the first timer of the process read its deadline
    /// first and started the runtime after.
    #[inline]
    pub(crate) fn global_started() -> Handle {
        start_global();
        Handle::global()
    }

    /// Starts the handle's system, if it is the default one and has not
    /// started: before a deadline is read (see
    /// [`global_started`](Self::global_started)).
    #[inline]
    fn start(&self) {
        if let Inner::Global = self.inner {
            start_global();
        }
    }

    fn parts(&self) -> (&TimerSystem, Anchor) {
        match &self.inner {
            Inner::Global => {
                let g = global();
                (g.rt.system(), g.anchor)
            }
            Inner::Explicit(e) => (&e.sys, e.anchor),
        }
    }

    /// The timer system behind the handle (starting the default runtime,
    /// for [`Handle::global`]).
    pub fn system(&self) -> &TimerSystem {
        self.parts().0
    }

    /// `deadline` in ns of the system's `CLOCK_MONOTONIC`, never earlier
    /// than it (see [`Anchor`]).
    pub(crate) fn ns_of(&self, deadline: std::time::Instant) -> Ktime {
        let Anchor { instant, ns } = self.parts().1;
        Ktime::from_nanos(match deadline.checked_duration_since(instant) {
            Some(after) => ns.saturating_add(nanos(after)),
            None => ns.saturating_sub(nanos(instant - deadline)),
        })
    }

    /// `ns` of the system's `CLOCK_MONOTONIC` as an `Instant`: the
    /// inverse of [`ns_of`](Self::ns_of) (exact, but where that saturated).
    pub(crate) fn instant_of(&self, at: Ktime) -> std::time::Instant {
        let ns = at.as_nanos();
        let a = self.parts().1;
        let t = if ns >= a.ns {
            a.instant.checked_add(Duration::from_nanos(ns - a.ns))
        } else {
            a.instant.checked_sub(Duration::from_nanos(a.ns - ns))
        };
        t.unwrap_or(a.instant)
    }

    /// A [`Sleep`] on this handle's system: [`sleep`](crate::sleep).
    pub fn sleep(&self, duration: Duration) -> Sleep {
        self.start();
        Sleep::new(self.clone(), deadline_after(duration))
    }

    /// A [`Sleep`] on this handle's system: [`sleep_until`](crate::sleep_until).
    pub fn sleep_until(&self, deadline: Instant) -> Sleep {
        Sleep::new(self.clone(), deadline)
    }

    /// A [`Timeout`] on this handle's system: [`timeout`](crate::timeout).
    pub fn timeout<F: IntoFuture>(&self, duration: Duration, future: F) -> Timeout<F::IntoFuture> {
        self.start();
        Timeout::new(self.clone(), deadline_after(duration), future.into_future())
    }

    /// A [`Timeout`] on this handle's system: [`timeout_at`](crate::timeout_at).
    pub fn timeout_at<F: IntoFuture>(
        &self,
        deadline: Instant,
        future: F,
    ) -> Timeout<F::IntoFuture> {
        Timeout::new(self.clone(), deadline, future.into_future())
    }

    /// An [`Interval`] on this handle's system: [`interval`](crate::interval).
    ///
    /// # Panics
    /// If `period` is zero.
    #[track_caller]
    pub fn interval(&self, period: Duration) -> Interval {
        self.start();
        Interval::new(self.clone(), Instant::now(), period)
    }

    /// An [`Interval`] on this handle's system:
    /// [`interval_at`](crate::interval_at).
    ///
    /// # Panics
    /// If `period` is zero.
    #[track_caller]
    pub fn interval_at(&self, start: Instant, period: Duration) -> Interval {
        Interval::new(self.clone(), start, period)
    }
}

// SAFETY: a handle names one system for its whole life: the global one
// (a `static`, never dropped) or the `Arc` it holds, which keeps it alive.
unsafe impl utimer::SystemRef for Handle {
    #[inline]
    fn system(&self) -> &TimerSystem {
        self.parts().0
    }
}

impl Default for Handle {
    /// [`Handle::global`].
    fn default() -> Handle {
        Handle::global()
    }
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner {
            Inner::Global => f.write_str("Handle(global)"),
            Inner::Explicit(e) => f
                .debug_struct("Handle")
                .field("workers", &e.sys.workers())
                .finish(),
        }
    }
}

/// About 30 years: where a deadline beyond `Instant`'s range is put (as
/// tokio does).
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// `now + d` by the crate's clock ([`Instant::now`]), or about 30 years
/// from now if that overflows.
pub(crate) fn deadline_after(d: Duration) -> Instant {
    add_or_far(Instant::now(), d)
}

/// `t + d`, or about 30 years after `t` if that overflows.
pub(crate) fn add_or_far(t: Instant, d: Duration) -> Instant {
    t.checked_add(d)
        .or_else(|| t.checked_add(FAR_FUTURE))
        .unwrap_or(t)
}
