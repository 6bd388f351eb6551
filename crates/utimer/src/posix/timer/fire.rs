//! A POSIX timer's expiry: the hrtimer callback, which queues the
//! notification and re-arms a periodic timer (the kernel's
//! `posix_timer_fn()`), under `it_lock` as the parent module's rules say.

use super::{clamp, signal_tag, Inner, State, MAX_BACKOFF};
use crate::hrtimer::{forward_expiry, HrFire, HrRestart};
use crate::posix::notify::{self, Notify};
use crate::posix::sigqueue::{self, Entry};
use crate::posix::TimerId;
use std::sync::Weak;
use std::time::Duration;

/// The hrtimer callback: the kernel's `posix_timer_fn()` and, as utimer
/// delivers at once, its signal-delivery rearm (`posixtimer_rearm()`).
pub(super) fn on_fire(weak: &Weak<Inner>, fire: &mut HrFire) -> HrRestart {
    let Some(inner) = weak.upgrade() else {
        return HrRestart::NoRestart;
    };
    let mut st = inner.lock();
    if st.deleted || !st.armed {
        return HrRestart::NoRestart;
    }
    if st.interval > 0 && fire.now_ns() < st.expires {
        // Moved on meanwhile (`signal_accepted` re-armed it while this run
        // waited for the lock): nothing is due yet.
        fire.set_expires_ns(st.expires);
        return HrRestart::Restart;
    }
    let seq = st.seq;
    let iv = Duration::from_nanos(st.interval);
    // Expirations up to now (more than one if the worker was late).
    let n = st.expire_due(fire.now_ns());
    match &inner.notify {
        Notify::None => return HrRestart::NoRestart,
        Notify::Fd => {
            st.overrun_last = clamp(n - 1);
            if let Some(fd) = &st.fd {
                notify::fd_add(fd, n);
            }
            st.fd_dirty = true;
        }
        Notify::Signal { .. } => {
            let now = fire.now_ns();
            return match expire_signal(&inner, &mut st, n, now, false) {
                Some(at) => {
                    fire.set_expires_ns(at);
                    HrRestart::Restart
                }
                None => HrRestart::NoRestart,
            };
        }
        Notify::Callback(f) => {
            st.overrun_last = clamp((n - 1).saturating_add(st.carry));
            st.carry = 0;
            drop(st);
            f(TimerId(inner.id));
            st = inner.lock();
            if st.seq != seq {
                // Re-armed or deleted meanwhile: the new setting rules.
                return HrRestart::NoRestart;
            }
            if st.interval > 0 {
                // Periods that passed while the callback ran count as
                // overruns of the next notification.
                let (next, m) = forward_expiry(st.expires, inner.now(st.eff), iv);
                st.expires = next;
                st.carry = st.carry.saturating_add(m);
            }
        }
    }
    if st.interval > 0 && st.armed {
        fire.set_expires_ns(st.expires);
        HrRestart::Restart
    } else {
        HrRestart::NoRestart
    }
}

/// A `SIGEV_SIGNAL`/`SIGEV_THREAD_ID` timer's `n` expiries up to `now`
/// (its expiry already forwarded past them, or a one-shot disarmed): its
/// signal is queued, or, while its last one waits for acceptance, they
/// are counted. Returns when the hrtimer fires next, if at all.
///
/// `caller`: queued by the thread that armed the timer, in
/// `timer_settime` (an expiry already due): a process-directed signal
/// goes to that thread if it does not block it, as the kernel's
/// `send_sigqueue()` prefers the current thread, so that it is delivered
/// before the call returns.
pub(super) fn expire_signal(
    inner: &Inner,
    st: &mut State,
    n: u64,
    now: u64,
    caller: bool,
) -> Option<u64> {
    let Notify::Signal {
        signo,
        value,
        thread,
    } = &inner.notify
    else {
        return None;
    };
    let (signo, value) = (*signo, *value);
    let periodic = st.interval > 0 && st.armed;
    let reported = notify::acceptance_reported(signo);
    // Whether the previous signal still waits for acceptance. An entry of
    // `sigqueue.rs` waits until its acceptance is reported. Otherwise, for
    // the process, its pending set tells; for one thread it cannot be
    // seen, and every expiry queues.
    let mut waiting = notify::ignored(signo)
        || (st.sig_queued
            && (st.queued_entry
                || match thread {
                    None => notify::signal_pending(signo),
                    Some(_) => false,
                }));
    if waiting && st.queued_entry && st.entry_process && st.backoff == MAX_BACKOFF {
        // An entry whose doorbell is gone from the process's pending set,
        // at two looks a backoff apart, was taken by a reader the library
        // does not see (a raw system call): taken as accepted then, so that
        // the timer does not wait for ever.
        if notify::signal_pending(signo) {
            st.unseen = 0;
        } else {
            st.unseen += 1;
            if st.unseen >= 2 {
                sigqueue::remove(signo, inner.id);
                st.queued_entry = false;
                st.sig_queued = false;
                waiting = false;
            }
        }
    }
    if waiting {
        st.carry = st.carry.saturating_add(n);
        if !periodic {
            return None;
        }
        // Look again after a backoff, not every period: the periods are
        // counted from the clock, whenever it looks. An entry's acceptance
        // re-arms the timer itself: the look is only a safety net then.
        st.backoff = if st.queued_entry {
            MAX_BACKOFF
        } else {
            st.backoff
                .saturating_mul(2)
                .max(st.interval)
                .min(MAX_BACKOFF)
        };
        return Some(st.expires.max(now.saturating_add(st.backoff)));
    }
    let late = (n - 1).saturating_add(st.carry);
    st.queued_late = late;
    st.unseen = 0;
    st.carry = 0;
    st.backoff = 0;
    st.sig_count = st.sig_count.wrapping_add(1);
    let tag = signal_tag(st.seq, st.sig_count);
    let target = match thread {
        None if caller && !notify::blocked_here(signo) => Some(notify::gettid()),
        t => *t,
    };
    if reported {
        // The kernel latches the overrun at acceptance; until then
        // `timer_getoverrun` reports the last accepted signal's.
        st.sig_queued = true;
        st.queued_entry = true;
        st.entry_process = target.is_none();
        sigqueue::push(
            signo,
            Entry {
                owner: inner.owner,
                id: inner.id,
                value,
                tag,
                thread: target,
            },
            clamp(late),
        );
        // Acceptance re-arms a periodic timer; until then it only looks
        // now and then, in case the program stops reporting.
        return periodic.then(|| st.expires.max(now.saturating_add(MAX_BACKOFF)));
    }
    st.overrun_last = clamp(late);
    st.sig_queued = thread.is_none();
    notify::send_signal(signo, value, target, inner.id, st.overrun_last, tag, 0);
    periodic.then_some(st.expires)
}
