//! The POSIX timer calls, on [`PosixTimers`], the handle that
//! [`TimerSystem::posix`] gives: the one method this layer adds to the
//! system. Each call looks the ID up without a lock (`table.rs`), checks the
//! owner, and works under the timer's own lock (`timer.rs`).

use super::registry::{Registry, TABLE};
use super::sigqueue;
use super::timer::{Inner, PosixTimer};
use super::{ItimerSpec, Notify, TimerId};
use crate::system::thread_priority;
use crate::time::ClockId;
use crate::{TimerError, TimerSystem};

impl TimerSystem {
    /// The system's POSIX timers: `timer_create`, `timer_settime`,
    /// `timer_gettime`, `timer_getoverrun`, `timer_delete`, as the kernel's
    /// calls of those names on a process (`kernel/time/posix-timers.c`).
    /// The handle is a borrow: it costs nothing to get.
    ///
    /// ```
    /// use utimer::{ClockId, ItimerSpec, Notify, Runtime};
    /// use std::time::Duration;
    ///
    /// let rt = Runtime::new(1).unwrap();
    /// let posix = rt.system().posix();
    /// let id = posix.timer_create(ClockId::Monotonic, Notify::None).unwrap();
    /// posix
    ///     .timer_settime(id, false, ItimerSpec::once(Duration::from_secs(60)))
    ///     .unwrap();
    /// assert!(posix.timer_gettime(id).unwrap().value > Duration::ZERO);
    /// posix.timer_delete(id).unwrap();
    /// ```
    #[inline]
    pub fn posix(&self) -> PosixTimers<'_> {
        PosixTimers { sys: self }
    }
}

/// The POSIX timers of one [`TimerSystem`], from
/// [`TimerSystem::posix`]: the kernel's `timer_*` system calls, IDs
/// included, with the semantics in the [`posix`](crate::posix) module docs.
#[derive(Copy, Clone, Debug)]
pub struct PosixTimers<'a> {
    sys: &'a TimerSystem,
}

impl PosixTimers<'_> {
    /// Looks `id` up and runs `f` on it, if this system owns it: the
    /// kernel's `__lock_timer()` (the lock is taken inside `f`).
    fn with_posix<R>(
        &self,
        id: TimerId,
        f: impl FnOnce(&Inner) -> Result<R, TimerError>,
    ) -> Result<R, TimerError> {
        let owner = Registry::of(self.sys).owner;
        let look = |t: &PosixTimer| {
            if t.owner == owner {
                f(&t.inner)
            } else {
                Err(TimerError::NoSuchTimer)
            }
        };
        if super::signal_context() {
            TABLE.with_unpinned(id.0, look)
        } else {
            TABLE.with(id.0, look)
        }
        .unwrap_or(Err(TimerError::NoSuchTimer))
    }

    /// Creates a POSIX timer on `clock` that notifies its expiries as
    /// `notify` says: the kernel's `timer_create()`. It is disarmed; arm it
    /// with [`timer_settime`](Self::timer_settime). It runs on the calling
    /// thread's worker.
    ///
    /// # Errors
    /// [`TimerError::InvalidArgument`] for a bad signal number;
    /// [`TimerError::NoSpace`] when the ID space is full;
    /// [`TimerError::Os`] if the notification fd cannot be opened;
    /// [`TimerError::Shutdown`] once the system has shut down
    /// ([`TimerSystem::shutdown`]).
    pub fn timer_create(&self, clock: ClockId, notify: Notify) -> Result<TimerId, TimerError> {
        notify.check()?;
        self.timer_create_with(clock, |_| notify)
    }

    /// [`timer_create`](Self::timer_create) whose notification is made from
    /// the new timer's ID, before anything can fire: POSIX's default
    /// `sigevent` (a NULL one) is `SIGALRM` with the timer's ID as
    /// `si_value`, which is known only once the ID is allocated (the
    /// kernel fills it in the same way).
    ///
    /// # Errors
    /// As [`timer_create`](Self::timer_create).
    pub fn timer_create_with(
        &self,
        clock: ClockId,
        notify: impl FnOnce(TimerId) -> Notify,
    ) -> Result<TimerId, TimerError> {
        self.create(clock, notify, None)
    }

    /// A timer whose expiries add to the count of `fd`, an `eventfd` the
    /// caller opened: a `timerfd` made in user space, as the kernel's
    /// `timerfd_create()` (the clocks of [`ClockId`]). The timer owns `fd`
    /// and closes it at [`timer_delete`](Self::timer_delete); a program
    /// reads a duplicate of it, which may be blocking. Expirations add to
    /// the count as a timerfd's do (a late periodic expiry adds every
    /// period it covers), and [`timer_settime`](Self::timer_settime) resets
    /// it, as `timerfd_settime()` does.
    ///
    /// # Errors
    /// [`TimerError::NoSpace`] when the ID space is full;
    /// [`TimerError::Shutdown`] once the system has shut down (the timer
    /// then closes `fd`).
    pub fn timerfd_create(
        &self,
        clock: ClockId,
        fd: std::os::fd::OwnedFd,
    ) -> Result<TimerId, TimerError> {
        self.create(clock, |_| Notify::Fd, Some(fd))
    }

    /// `timer_create` and `timerfd_create`: the ID, then the timer.
    fn create(
        &self,
        clock: ClockId,
        notify: impl FnOnce(TimerId) -> Notify,
        fd: Option<std::os::fd::OwnedFd>,
    ) -> Result<TimerId, TimerError> {
        self.sys.check_running()?;
        let mut fd = fd;
        let core = self.sys.core();
        let worker = core.bases.route(core.bases.current_worker());
        let owner = Registry::of(self.sys).owner;
        let mut made = Ok(());
        let mut served = None;
        let id = TABLE
            .insert(|id| {
                let notify = notify(TimerId(id));
                served = notify.served_thread();
                let inner = match notify.check().and_then(|()| {
                    Inner::new(self.sys.env(), worker, owner, id, clock, notify, fd.take())
                }) {
                    Ok(inner) => inner,
                    Err(e) => {
                        made = Err(e);
                        // A placeholder that no lookup accepts (owner 0 is
                        // never issued); unlinked below.
                        return PosixTimer {
                            owner: 0,
                            inner: Inner::new(
                                self.sys.env(),
                                worker,
                                0,
                                id,
                                clock,
                                Notify::None,
                                None,
                            )
                            .expect("SIGEV_NONE needs no resources"),
                        };
                    }
                };
                PosixTimer { owner, inner }
            })
            .map_err(|_| TimerError::NoSpace)?;
        if let Err(e) = made {
            TABLE.remove_if(id, |t| t.owner == 0);
            return Err(e);
        }
        if let Some(tid) = served {
            // A real-time thread waits for this timer: the workers run
            // at its priority (`system/realtime.rs`).
            let p = thread_priority(tid);
            if p > 0 {
                // (A priority a thread runs at is always a valid one.)
                let _ = self.sys.serve_realtime(p);
            }
        }
        Ok(TimerId(id))
    }

    /// Arms (or disarms, with a zero value) timer `id`: the kernel's
    /// `timer_settime()`. `abstime` (`TIMER_ABSTIME`) makes `new.value` an
    /// absolute time in nanoseconds of the timer's clock. Returns the old
    /// setting and resets the overrun. Waits for a running notification
    /// callback, unless called from it. See the `posix` module docs.
    ///
    /// # Errors
    /// [`TimerError::NoSuchTimer`] for an ID that names no timer of this
    /// system; [`TimerError::Shutdown`] for an arming setting (a non-zero
    /// value) once the system has shut down ([`TimerSystem::shutdown`]):
    /// nothing changes. A disarming one still succeeds.
    pub fn timer_settime(
        &self,
        id: TimerId,
        abstime: bool,
        new: ItimerSpec,
    ) -> Result<ItimerSpec, TimerError> {
        self.with_posix(id, |t| {
            if !new.value.is_zero() {
                self.sys.check_running()?;
            }
            t.settime(abstime, new)
        })
    }

    /// The time to timer `id`'s next expiry and its interval: the kernel's
    /// `timer_gettime()` (a zero value: disarmed). Once the system has shut
    /// down ([`TimerSystem::shutdown`]) every timer reads as disarmed (all
    /// zero): its expiries were cancelled.
    ///
    /// # Errors
    /// [`TimerError::NoSuchTimer`].
    pub fn timer_gettime(&self, id: TimerId) -> Result<ItimerSpec, TimerError> {
        let spec = self.with_posix(id, |t| t.gettime())?;
        if !spec.value.is_zero() && self.sys.is_shut_down() {
            return Ok(ItimerSpec::default());
        }
        Ok(spec)
    }

    /// The overrun count of timer `id`'s last notification: the kernel's
    /// `timer_getoverrun()` (clamped to `INT_MAX`).
    ///
    /// # Errors
    /// [`TimerError::NoSuchTimer`].
    pub fn timer_getoverrun(&self, id: TimerId) -> Result<i32, TimerError> {
        self.with_posix(id, |t| t.getoverrun())
    }

    /// Deletes timer `id`: the kernel's `timer_delete()`. Waits for a
    /// running notification callback (unless called from it); closes its
    /// fd. The ID is not issued again until the ID space wraps.
    ///
    /// # Errors
    /// [`TimerError::NoSuchTimer`], also for a second delete.
    pub fn timer_delete(&self, id: TimerId) -> Result<(), TimerError> {
        self.with_posix(id, |t| t.delete())?;
        let owner = Registry::of(self.sys).owner;
        TABLE.remove_if(id.0, |t| t.owner == owner);
        Ok(())
    }

    /// Reports that the program accepted the signal `info` (a handler got
    /// it, or `sigwaitinfo` returned it): the kernel's
    /// `posixtimer_deliver_signal()`, for a library that sees the
    /// program's signals (the drop-in library's handler trampoline and
    /// `sigwaitinfo` wrapper). For a signal of one of this system's timers:
    ///
    /// * `Some(true)`: deliver it. Its `si_overrun` is set to the kernel's
    ///   count: every expiry since the one that queued it, up to now; the
    ///   timer runs on and its next signal may queue.
    /// * `Some(false)`: drop it. The timer was re-armed or deleted after the
    ///   signal was queued, and the kernel drops such a stale signal.
    ///
    /// `None`: not a signal of this system's timers; deliver it unchanged.
    #[doc(alias = "posixtimer_deliver_signal")]
    pub fn signal_accepted(&self, info: &mut libc::siginfo_t) -> Option<bool> {
        let signo = info.si_signo;
        let Some(q) = super::notify::utimer_signal(info) else {
            // Another source's signal took the pending slot: timer signals
            // that waited behind it may go now (`sigqueue.rs`).
            sigqueue::ring_remaining(signo, super::notify::gettid());
            return None;
        };
        if q.doorbell != 0 {
            return Some(self.doorbell_accepted(info, signo, q.doorbell));
        }
        let owner = Registry::of(self.sys).owner;
        let look =
            |t: &PosixTimer| (t.owner == owner).then(|| t.inner.signal_accepted(q.tag, q.overrun));
        let seen = if super::signal_context() {
            TABLE.with_unpinned(q.id, look)
        } else {
            TABLE.with(q.id, look)
        };
        match seen {
            // No such timer any more: deleted since it was queued.
            None => Some(false),
            Some(None) => None,
            Some(Some(None)) => Some(false),
            Some(Some(Some(overrun))) => {
                super::notify::set_overrun(info, overrun);
                Some(true)
            }
        }
    }

    /// A doorbell was accepted (`sigqueue.rs`): the first entry of its
    /// list becomes the signal delivered, with the overrun latched now;
    /// entries made stale meanwhile are passed over. `false`: none was
    /// left, drop it.
    fn doorbell_accepted(&self, info: &mut libc::siginfo_t, signo: i32, list: i32) -> bool {
        // The thread's ID is a system call: asked only for a thread's list
        // or a standard signal's (whose slot is freed on this thread).
        let me = (list == sigqueue::DOORBELL_THREAD || sigqueue::is_standard(signo))
            .then(super::notify::gettid);
        let thread = if list == sigqueue::DOORBELL_THREAD {
            me
        } else {
            None
        };
        let in_handler = super::signal_context();
        let delivered = sigqueue::doorbell_accepted(signo, thread, me, |e| {
            let look = |t: &PosixTimer| {
                (t.owner == e.owner).then(|| {
                    t.inner
                        .signal_accepted(e.tag, 0)
                        .map(|o| (o, t.inner.signal_value()))
                })
            };
            let seen = if in_handler {
                TABLE.with_unpinned(e.id, look)
            } else {
                TABLE.with(e.id, look)
            };
            seen.flatten().flatten().map(|found| (e.id, found))
        });
        match delivered {
            Some((id, (overrun, value))) => {
                super::notify::set_timer(info, id, value, overrun);
                true
            }
            None => false,
        }
    }

    /// Adds to a [`Notify::Fd`] timer's count every expiry that has passed
    /// and that its worker has not written yet: the kernel's
    /// `timerfd_read()`, which forwards the timer to the moment of the
    /// read. Call it before reading the descriptor, for a count exact to
    /// the read. Anything else (no such timer, another notification) is
    /// left alone.
    #[doc(alias = "timerfd_read")]
    pub fn timer_fd_expire_due(&self, id: TimerId) {
        let _ = self.with_posix(id, |t| {
            t.fd_expire_due();
            Ok(())
        });
    }

    /// The file descriptor of a [`Notify::Fd`] timer: readable once it
    /// expired, it reads as the number of expirations since the last read
    /// (a native-endian `u64`, as a timerfd). Owned by the timer: closed by
    /// [`timer_delete`](Self::timer_delete).
    ///
    /// # Errors
    /// [`TimerError::NoSuchTimer`]; [`TimerError::InvalidArgument`] if the
    /// timer notifies otherwise.
    pub fn timer_fd(&self, id: TimerId) -> Result<std::os::fd::RawFd, TimerError> {
        self.with_posix(id, |t| t.fd())
    }

    /// Benchmark only: `timer_gettime` as before 2011, its lookup under
    /// one process-wide spinlock (the kernel's `idr_lock`), held from the lookup until the timer's own lock is taken.
    ///
    /// # Errors
    /// As [`timer_gettime`](Self::timer_gettime).
    #[cfg(feature = "bench-internals")]
    #[doc(hidden)]
    pub fn timer_gettime_global_lock(&self, id: TimerId) -> Result<ItimerSpec, TimerError> {
        use std::sync::atomic::{AtomicBool, Ordering};
        static IDR_LOCK: AtomicBool = AtomicBool::new(false);
        while IDR_LOCK
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            while IDR_LOCK.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        }
        let unlock = || IDR_LOCK.store(false, Ordering::Release);
        let owner = Registry::of(self.sys).owner;
        let mut unlock = Some(unlock);
        let r = TABLE
            .with(id.0, |t: &PosixTimer| {
                if t.owner == owner {
                    t.inner.gettime_then(|| (unlock.take().expect("once"))())
                } else {
                    Err(TimerError::NoSuchTimer)
                }
            })
            .unwrap_or(Err(TimerError::NoSuchTimer));
        if let Some(unlock) = unlock {
            unlock();
        }
        r
    }
}
