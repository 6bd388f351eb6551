//! One POSIX timer (the kernel's `struct k_itimer`) and the semantics of
//! `timer_settime`, `timer_gettime`, `timer_getoverrun` and `timer_delete`.
//!
//! # Locking rules
//!
//! `state` is the kernel's `it_lock`: every field of [`State`] is read and
//! written under it, and each section under it is a write section of the
//! copy of the fields that `timer_gettime` and `timer_getoverrun` read
//! without it (`snap`, `snapshot.rs`, behind a sequence count). Lock
//! order: `it_lock`, then the hrtimer's base lock (inside `HrTimer` calls); never the reverse — the expiry run holds no
//! base lock while the callback (`on_fire`) takes `it_lock`. Nobody waits
//! for a running notification while holding `it_lock`: `settime` and
//! `delete` drop it, wait (`HrTimer::cancel`), and start over, as the
//! kernel's `timer_wait_running()` does. The timer's signal entry is
//! queued and withdrawn on its signal's list (`sigqueue.rs`) under
//! `it_lock`: the list's lock is innermost. An acceptance, on the
//! program's thread (possibly in a signal handler), takes `it_lock` and
//! may start the hrtimer (`latch`): the drop-in library holds a signal
//! that lands inside one of its calls, so a handler never takes a lock
//! its own thread holds.

use super::notify::{self, Notify};
use super::sigqueue;
use super::snapshot::{setting, Change, Seen, Snapshot};

mod fire;
use super::ItimerSpec;
use crate::hrtimer::{forward_expiry, HrEnv, HrTimer};
use crate::time::ClockId;
use crate::TimerError;
use fire::on_fire;
use std::os::fd::{OwnedFd, RawFd};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

/// What the ID table holds: the owning system and the timer.
pub(crate) struct PosixTimer {
    /// The system that created it (`TimerSystem`'s serial): the kernel's
    /// `it_signal`, rechecked after every lookup.
    pub(crate) owner: u64,
    pub(crate) inner: Arc<Inner>,
}

/// The timer itself.
pub(crate) struct Inner {
    /// The owning system (as `PosixTimer::owner`), for its signal's
    /// entries (`sigqueue.rs`).
    pub(crate) owner: u64,
    pub(crate) id: i32,
    /// The clock it was created on.
    clock: ClockId,
    /// Made by `timerfd_create` (a disarming setting keeps its interval,
    /// as the kernel's timerfd keeps it; a POSIX timer's is cleared).
    timerfd: bool,
    notify: Notify,
    /// The hrtimer that fires it; `None` for `SIGEV_NONE` (never started:
    /// its state is computed when asked, as in the kernel).
    hr: Option<HrTimer>,
    env: Arc<dyn HrEnv>,
    state: Mutex<State>,
    /// What `gettime` and `getoverrun` read without `state`'s lock,
    /// written by every section under it (`snapshot.rs`).
    snap: Snapshot,
}

/// `it_lock`'s data.
struct State {
    deleted: bool,
    /// Armed (a one-shot timer disarms when it fires).
    armed: bool,
    /// The next expiry, ns of `eff`.
    expires: u64,
    /// The clock the expiry counts in: the timer's, except a relative
    /// `REALTIME` setting, which runs on the monotonic clock.
    eff: ClockId,
    /// The period in ns (0: one-shot).
    interval: u64,
    /// Overruns of the last notification (`timer_getoverrun`).
    overrun_last: i32,
    /// Periods that passed while a notification was pending, reported
    /// with the next one.
    carry: u64,
    /// A signal of this timer was queued and not yet seen accepted: only
    /// then does a pending signal of its number hold the next one back
    /// (another source's pending signal does not).
    sig_queued: bool,
    /// That signal is an entry of `sigqueue.rs` (its acceptance is
    /// reported, so only the report ends the wait), not a signal of its
    /// own that the pending set shows.
    queued_entry: bool,
    /// That entry is on the process's list (not one thread's).
    entry_process: bool,
    /// Looks that found the entry's doorbell gone from the pending set
    /// (`fire.rs`: taken unseen after two).
    unseen: u8,
    /// Expirations the worker was late by when it queued that signal: its
    /// first overruns (the rest are `carry`).
    queued_late: u64,
    /// Signals queued under the current setting; the signal carries it, so
    /// that only the report of the latest one ends the wait.
    sig_count: u32,
    /// How long the timer waits before it looks again at a signal that is
    /// still pending (ns): doubles from the period up to `MAX_BACKOFF`, so
    /// a timer whose signal stays blocked costs almost nothing.
    backoff: u64,
    /// Bumped by every settime and delete: a callback that returns after
    /// one does not rearm the old setting.
    seq: u64,
    fd: Option<OwnedFd>,
    /// An expiry was added to `fd` since it was last drained: only then
    /// may its count be non-zero, so only then does `settime` read it.
    fd_dirty: bool,
}

impl State {
    /// The expiries of an armed timer that are due at `now` (at least one:
    /// the caller saw its expiry pass): a periodic timer moves on to its
    /// next expiry after `now`, a one-shot timer is disarmed.
    fn expire_due(&mut self, now: u64) -> u64 {
        if self.interval > 0 {
            let (next, n) = forward_expiry(self.expires, now, Duration::from_nanos(self.interval));
            self.expires = next;
            n.max(1)
        } else {
            self.armed = false;
            1
        }
    }

    /// The fields the lock-free readers see (`snapshot.rs`).
    fn seen(&self) -> Seen {
        Seen {
            deleted: self.deleted,
            armed: self.armed,
            sig_queued: self.sig_queued,
            carrying: self.carry > 0,
            eff: self.eff,
            expires: self.expires,
            interval: self.interval,
            overrun_last: self.overrun_last,
        }
    }
}

/// The kernel's `KTIME_MAX`: every time and interval saturates there
/// (`timespec64_to_ktime()`, `ktime_add_safe()`).
pub(crate) const KTIME_MAX: u64 = i64::MAX as u64;

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos())
        .unwrap_or(u64::MAX)
        .min(KTIME_MAX)
}

/// `now + value`, saturating at `KTIME_MAX` as the kernel's
/// `ktime_add_safe()`.
fn add_safe(now: u64, value: u64) -> u64 {
    now.saturating_add(value).min(KTIME_MAX)
}

/// A relative setting shorter than this may be due by the time it is
/// armed: the clock is read again to see (the kernel's hrtimer fires such
/// a timer from the interrupt that `hrtimer_start()` programs, before the
/// system call returns).
const DUE_CHECK: u64 = 50_000;

/// The longest a timer waits before it looks again at a signal of its own
/// that is still pending.
const MAX_BACKOFF: u64 = 10_000_000;

/// What a timer's signal carries to identify it: the setting it was queued
/// under (high half) and its number under that setting (low half).
fn signal_tag(seq: u64, count: u32) -> u64 {
    ((seq as u32 as u64) << 32) | u64::from(count)
}

fn clamp(n: u64) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

impl Inner {
    /// Creates the timer with ID `id` on `worker`.
    pub(crate) fn new(
        env: Arc<dyn HrEnv>,
        worker: usize,
        owner: u64,
        id: i32,
        clock: ClockId,
        notify: Notify,
        fd: Option<OwnedFd>,
    ) -> Result<Arc<Inner>, TimerError> {
        let timerfd = fd.is_some();
        if let Notify::Signal { signo, .. } = &notify {
            sigqueue::reserve(*signo);
        }
        let fd = match (&notify, fd) {
            (Notify::Fd, Some(fd)) => Some(fd),
            (Notify::Fd, None) => Some(notify::open_fd()?),
            _ => None,
        };
        Ok(Arc::new_cyclic(|weak: &Weak<Inner>| {
            let hr = (!matches!(notify, Notify::None)).then(|| {
                let weak = weak.clone();
                HrTimer::new(env.clone(), worker, clock, move |fire| on_fire(&weak, fire))
            });
            let state = State {
                deleted: false,
                armed: false,
                expires: 0,
                eff: clock,
                interval: 0,
                overrun_last: 0,
                carry: 0,
                sig_queued: false,
                queued_entry: false,
                entry_process: false,
                unseen: 0,
                queued_late: 0,
                sig_count: 0,
                backoff: 0,
                seq: 0,
                fd,
                fd_dirty: false,
            };
            Inner {
                owner,
                id,
                clock,
                timerfd,
                notify,
                hr,
                env,
                snap: Snapshot::new(&state.seen()),
                state: Mutex::new(state),
            }
        }))
    }

    fn lock(&self) -> Locked<'_> {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.snap.begin();
        Locked {
            st,
            snap: &self.snap,
        }
    }

    fn now(&self, clock: ClockId) -> u64 {
        self.env.ticks().now_ns(clock)
    }

    /// The current setting: the kernel's `common_timer_get()`.
    fn current(&self, st: &mut State) -> ItimerSpec {
        self.current_at(st, &mut None)
    }

    /// [`current`](Self::current) with the time of `st.eff` read at most
    /// once: `now` holds it if the caller read it already, and holds it
    /// afterwards if this read it (a disarmed timer needs no clock).
    fn current_at(&self, st: &mut State, now: &mut Option<u64>) -> ItimerSpec {
        let (spec, change) = setting(
            self.hr.is_none(),
            st.armed,
            st.expires,
            st.interval,
            st.sig_queued,
            || *now.get_or_insert_with(|| self.now(st.eff)),
        );
        match change {
            Some(Change::Forward(expires)) => st.expires = expires,
            Some(Change::Disarm) => st.armed = false,
            None => {}
        }
        spec
    }

    /// `timer_gettime()`: from the published copy, without the lock
    /// (`snapshot.rs`), unless a setting changed meanwhile.
    pub(crate) fn gettime(&self) -> Result<ItimerSpec, TimerError> {
        let sig_none = self.hr.is_none();
        let fast = self.snap.read(|seen| {
            if seen.deleted {
                return Err(TimerError::NoSuchTimer);
            }
            let (spec, _) = setting(
                sig_none,
                seen.armed,
                seen.expires,
                seen.interval,
                seen.sig_queued,
                || self.now(seen.eff),
            );
            Ok(spec)
        });
        match fast {
            Some(r) => r,
            None => self.gettime_then(|| ()),
        }
    }

    /// `timer_gettime()`, calling `locked` as soon as `it_lock` is held
    /// (the bench's global-lock lookup releases its lock there, as the
    /// kernel's `lock_timer()` released `idr_lock` before 2011).
    pub(crate) fn gettime_then(&self, locked: impl FnOnce()) -> Result<ItimerSpec, TimerError> {
        let mut st = self.lock();
        locked();
        if st.deleted {
            return Err(TimerError::NoSuchTimer);
        }
        Ok(self.current(&mut st))
    }

    /// `timer_getoverrun()`: the overrun of the last signal the program
    /// accepted (`overrun_last`), as the kernel's `it_overrun_last`.
    ///
    /// A signal whose acceptance is not reported (a process-directed
    /// signal of a number the library does not see accepted) is taken as
    /// accepted once it is no longer pending: the overrun is then latched
    /// here, up to now, so that the handler or waiter that asks reads every
    /// period that passed while it was pending.
    pub(crate) fn getoverrun(&self) -> Result<i32, TimerError> {
        // Nothing waiting for acceptance: the published copy answers,
        // without the lock.
        let fast = self.snap.read(|seen| match seen {
            Seen { deleted: true, .. } => Some(Err(TimerError::NoSuchTimer)),
            Seen {
                carrying: false,
                sig_queued: false,
                overrun_last,
                ..
            } => Some(Ok(*overrun_last)),
            _ => None,
        });
        if let Some(Some(r)) = fast {
            return r;
        }
        let mut st = self.lock();
        if st.deleted {
            return Err(TimerError::NoSuchTimer);
        }
        if let Notify::Signal {
            signo,
            thread: None,
            ..
        } = &self.notify
        {
            if st.sig_queued && !st.queued_entry && !notify::signal_pending(*signo) {
                self.latch(&mut st);
            } else if !st.sig_queued && st.carry > 0 && !notify::signal_pending(*signo) {
                let last = u64::try_from(st.overrun_last).unwrap_or(0);
                st.overrun_last = clamp(last.saturating_add(st.carry));
                st.carry = 0;
            }
        }
        Ok(st.overrun_last)
    }

    /// The program accepted a signal that this timer queued under setting
    /// `seq`: the kernel's `posixtimer_deliver_signal()`. Returns `None`
    /// for a stale signal (the timer was re-armed or deleted since it was
    /// queued: the kernel drops such a signal), else the signal's overrun:
    /// every expiry since the one that queued it, up to now. The timer
    /// then runs on to its next expiry, with its next signal free to queue.
    pub(crate) fn signal_accepted(&self, tag: u64, queued_overrun: i32) -> Option<i32> {
        let mut st = self.lock();
        if st.deleted || (tag >> 32) as u32 != st.seq as u32 {
            return None;
        }
        if !st.sig_queued || tag as u32 != st.sig_count {
            // Not the signal the timer waits for: one it already counted as
            // accepted (its overrun as queued), or a second report.
            return Some(queued_overrun);
        }
        self.latch(&mut st);
        Some(st.overrun_last)
    }

    /// The timer's waiting signal is accepted now: its overrun is every
    /// expiry since the one that queued it, up to now, and a periodic
    /// timer is re-armed at its next expiry (the kernel's
    /// `posixtimer_rearm()`).
    fn latch(&self, st: &mut State) {
        let mut missed = st.queued_late.saturating_add(st.carry);
        if st.interval > 0 && st.armed {
            // The periods the waiting timer has not looked at yet.
            let iv = Duration::from_nanos(st.interval);
            let (next, m) = forward_expiry(st.expires, self.now(st.eff), iv);
            missed = missed.saturating_add(m);
            st.expires = next;
            if let Some(hr) = &self.hr {
                // From the accepting thread, as the kernel re-arms at
                // delivery: the timer does not wait for a backoff. Queued
                // for no later than its next expiry, it is left alone: its
                // worker will find it moved on (`fire.rs`), and is not woken
                // now. A callback of it running now loses to a start.
                if hr.expires_ns().is_none_or(|at| at > next) {
                    let _ = hr.start_ns(next);
                }
            }
        }
        st.overrun_last = clamp(missed);
        st.carry = 0;
        st.queued_late = 0;
        st.backoff = 0;
        st.sig_queued = false;
        st.queued_entry = false;
    }

    /// `si_value` of the timer's signal (0 for other notifications).
    pub(crate) fn signal_value(&self) -> usize {
        match &self.notify {
            Notify::Signal { value, .. } => *value,
            _ => 0,
        }
    }

    /// Takes the timer's waiting entry off its signal's list (`sigqueue.rs`),
    /// if it has one: a new setting or a delete makes it stale.
    fn withdraw(&self, st: &mut State) {
        if st.queued_entry {
            if let Notify::Signal { signo, .. } = &self.notify {
                sigqueue::remove(*signo, self.id);
            }
            st.queued_entry = false;
        }
    }

    /// The timer's waiting entry can no longer be accepted as one
    /// (`sigqueue::release_all`): the timer goes on counting (`fire.rs`
    /// parks it while the signal is ignored) and queues again when it may.
    /// `discarded`: the program ignores the signal and the kernel dropped
    /// the pending one; the kernel's timer keeps its signal parked and
    /// delivers it later, so the expiry that queued it becomes an overrun
    /// of the signal queued next.
    pub(crate) fn signal_discarded(&self, tag: u64, discarded: bool) {
        let mut st = self.lock();
        if st.deleted || !st.sig_queued || tag != signal_tag(st.seq, st.sig_count) {
            return;
        }
        let own = u64::from(discarded);
        st.carry = st.carry.saturating_add(st.queued_late).saturating_add(own);
        st.queued_late = 0;
        st.sig_queued = false;
        st.queued_entry = false;
        if st.interval > 0 && st.armed {
            if let Some(hr) = &self.hr {
                let _ = hr.start_ns(st.expires);
            }
        }
    }

    /// The notification fd (`Notify::Fd` only).
    pub(crate) fn fd(&self) -> Result<RawFd, TimerError> {
        let st = self.lock();
        if st.deleted {
            return Err(TimerError::NoSuchTimer);
        }
        st.fd
            .as_ref()
            .map(notify::raw)
            .ok_or(TimerError::InvalidArgument)
    }

    /// [`PosixTimers::timer_fd_expire_due`](crate::PosixTimers::timer_fd_expire_due):
    /// the expiries up to now, written now. The hrtimer, still queued for
    /// one of them, finds the timer moved on when it fires (`fire.rs`).
    pub(crate) fn fd_expire_due(&self) {
        if !matches!(self.notify, Notify::Fd) {
            return;
        }
        // Not armed, or not due: the published copy says so, without the
        // lock (an armed timer's expiry is read against the clock).
        let due = self
            .snap
            .read(|seen| seen.armed && !seen.deleted && seen.expires <= self.now(seen.eff));
        if due == Some(false) {
            return;
        }
        let mut st = self.lock();
        if st.deleted || !st.armed {
            return;
        }
        let now = self.now(st.eff);
        if st.expires > now {
            return;
        }
        let n = st.expire_due(now);
        st.overrun_last = clamp(n - 1);
        if let Some(fd) = &st.fd {
            notify::fd_add(fd, n);
        }
        st.fd_dirty = true;
    }

    /// Locks the state with the hrtimer stopped: neither queued nor running
    /// its notification (unless on this very thread, from the timer's own
    /// callback). The kernel's `timer_wait_running()` loop.
    fn lock_stopped(&self) -> Result<Locked<'_>, TimerError> {
        loop {
            let st = self.lock();
            if st.deleted {
                return Err(TimerError::NoSuchTimer);
            }
            let Some(hr) = &self.hr else {
                return Ok(st);
            };
            match hr.try_cancel() {
                Err(TimerError::Running) if !hr.running_here() => {
                    drop(st);
                    hr.cancel()?;
                }
                _ => return Ok(st),
            }
        }
    }

    /// `timer_settime()`: returns the old setting.
    ///
    /// A timer that stays on its clock moves in place: one lock of its
    /// base checks that no callback of the old setting runs and re-queues
    /// it (`HrTimer::start_unless_running`). The rest (a disarm, a move to
    /// another clock) stops the timer first, as the kernel's
    /// `common_timer_set()` does.
    pub(crate) fn settime(&self, abstime: bool, new: ItimerSpec) -> Result<ItimerSpec, TimerError> {
        let eff = self.effective_clock(abstime);
        loop {
            let mut st = self.lock();
            if st.deleted {
                return Err(TimerError::NoSuchTimer);
            }
            if self.hr.is_some() && (new.value.is_zero() || eff != st.eff) {
                drop(st);
                return self.settime_stopped(abstime, new);
            }
            // One clock read serves the old setting and the new expiry
            // (each `clock_gettime` is a fifth of the call).
            let mut now = None;
            let old = self.current_at(&mut st, &mut now);
            if new.value.is_zero() {
                // (`SIGEV_NONE`: nothing queued to stop.)
                self.disarm(&mut st, new);
                return Ok(old);
            }
            let value = ns(new.value);
            let expires = if abstime {
                value
            } else {
                // `now` is of `st.eff`, which is `eff` here.
                add_safe(*now.get_or_insert_with(|| self.now(eff)), value)
            };
            if let Some(at) = self.due(expires, abstime, value, eff) {
                // Already due: signalled before the call returns.
                if let Some(hr) = &self.hr {
                    if let Err(TimerError::Running) = hr.try_cancel() {
                        if !hr.running_here() {
                            drop(st);
                            hr.cancel()?;
                            continue;
                        }
                    }
                }
                self.new_setting(&mut st);
                st.interval = ns(new.interval);
                st.expires = expires;
                st.armed = true;
                self.fire_now(&mut st, at);
                return Ok(old);
            }
            if let Some(hr) = &self.hr {
                match hr.start_unless_running(expires) {
                    Err(TimerError::Running) => {
                        // The old setting's callback runs: wait for it
                        // without the lock it takes, then start over.
                        drop(st);
                        hr.cancel()?;
                        continue;
                    }
                    r => r?,
                }
            }
            self.new_setting(&mut st);
            st.interval = ns(new.interval);
            st.expires = expires;
            st.armed = true;
            return Ok(old);
        }
    }

    /// The clock a setting's expiry counts in: a relative `REALTIME`
    /// setting runs on the monotonic clock.
    fn effective_clock(&self, abstime: bool) -> ClockId {
        if self.clock == ClockId::Realtime && !abstime {
            ClockId::Monotonic
        } else {
            self.clock
        }
    }

    /// What every setting resets: the overrun, the signal that an older
    /// setting queued, the timerfd's count.
    fn new_setting(&self, st: &mut State) {
        st.seq += 1;
        st.overrun_last = 0;
        st.carry = 0;
        st.queued_late = 0;
        // A signal queued before this call is stale: its entry is taken
        // back, the program's hooks drop it (`signal_accepted`), and it no
        // longer holds the next one back.
        self.withdraw(st);
        st.sig_queued = false;
        if st.fd_dirty {
            if let Some(fd) = &st.fd {
                notify::fd_drain(fd);
            }
            st.fd_dirty = false;
        }
    }

    /// A zero setting: disarmed, a POSIX timer with no interval either
    /// (the kernel clears it), a timerfd with the one given (the kernel
    /// keeps it). The hrtimer is already stopped.
    fn disarm(&self, st: &mut State, new: ItimerSpec) {
        self.new_setting(st);
        st.interval = if self.timerfd { ns(new.interval) } else { 0 };
        st.armed = false;
    }

    /// [`settime`](Self::settime) with the hrtimer stopped first (it may
    /// change clocks only while stopped).
    fn settime_stopped(&self, abstime: bool, new: ItimerSpec) -> Result<ItimerSpec, TimerError> {
        let mut st = self.lock_stopped()?;
        let mut now_old = None;
        let old = self.current_at(&mut st, &mut now_old);
        let old_eff = st.eff;
        if new.value.is_zero() {
            self.disarm(&mut st, new);
            return Ok(old);
        }
        self.new_setting(&mut st);
        st.interval = ns(new.interval);
        let mut eff = self.effective_clock(abstime);
        if let Some(hr) = &self.hr {
            // Refused only inside its own callback, where the timer keeps
            // its clock: the expiry is then computed on that one.
            if hr.set_clock(eff).is_err() {
                eff = st.eff;
            }
        }
        let value = ns(new.value);
        let expires = if abstime && eff == self.clock {
            value
        } else if abstime {
            // (Own-callback case above: absolute on another clock.)
            add_safe(value.saturating_sub(self.now(self.clock)), self.now(eff))
        } else {
            let now = match now_old {
                Some(now) if eff == old_eff => now,
                _ => self.now(eff),
            };
            now.saturating_add(value)
        };
        let expires = expires.min(KTIME_MAX);
        st.eff = eff;
        st.expires = expires;
        st.armed = true;
        if let Some(at) = self.due(expires, abstime, value, eff) {
            self.fire_now(&mut st, at);
        } else if let Some(hr) = &self.hr {
            if let Err(e) = hr.start_ns(expires) {
                st.armed = false;
                return Err(e);
            }
        }
        Ok(old)
    }

    /// Whether a signalling timer's new expiry is already due, and if so
    /// the time of `eff` that says it: the kernel's hrtimer would fire it
    /// from the interrupt its arming programs, before `timer_settime`
    /// returns. An absolute expiry is compared with the clock; a relative
    /// one only if short enough to have passed while it was armed.
    fn due(&self, expires: u64, abstime: bool, value: u64, eff: ClockId) -> Option<u64> {
        if !matches!(self.notify, Notify::Signal { .. }) || (!abstime && value >= DUE_CHECK) {
            return None;
        }
        let now = self.now(eff);
        (expires <= now).then_some(now)
    }

    /// Fires an armed signalling timer whose expiry is due at `now`, on the
    /// calling thread (`settime`; the hrtimer is stopped): its signal is
    /// queued now, and a periodic timer is started at its next expiry.
    fn fire_now(&self, st: &mut State, now: u64) {
        let n = st.expire_due(now);
        if let Some(at) = fire::expire_signal(self, st, n, now, true) {
            if let Some(hr) = &self.hr {
                let _ = hr.start_ns(at);
            }
        }
    }

    /// `timer_delete()`: disarms, waits for a running notification (unless
    /// called from it), closes the fd. The caller unlinks the ID.
    pub(crate) fn delete(&self) -> Result<(), TimerError> {
        let mut st = self.lock_stopped()?;
        self.withdraw(&mut st);
        st.deleted = true;
        st.armed = false;
        st.seq += 1;
        let fd = st.fd.take();
        drop(st);
        drop(fd);
        Ok(())
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Notify::Signal { signo, .. } = &self.notify {
            sigqueue::unreserve(*signo);
        }
    }
}

/// `it_lock` held, and with it a write section of the copy that lock-free
/// readers read, closed with the state as the section leaves it
/// (`snapshot.rs`).
struct Locked<'a> {
    st: MutexGuard<'a, State>,
    snap: &'a Snapshot,
}

impl std::ops::Deref for Locked<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        &self.st
    }
}

impl std::ops::DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut State {
        &mut self.st
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        self.snap.end(&self.st.seen());
    }
}
