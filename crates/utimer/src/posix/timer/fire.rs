//! A POSIX timer's expiry: the hrtimer callback, which queues the
//! notification and re-arms a periodic timer (the kernel's
//! `posix_timer_fn()`), under `it_lock` as the parent module's rules say.

use super::{clamp, signal_tag, Inner, MAX_BACKOFF};
use crate::hrtimer::{forward_expiry, HrFire, HrRestart};
use crate::posix::notify::{self, Notify};
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
    if st.interval > 0 && fire.now() < st.expires {
        // Moved on meanwhile (`signal_accepted` re-armed it while this run
        // waited for the lock): nothing is due yet.
        fire.set_expires(st.expires);
        return HrRestart::Restart;
    }
    let seq = st.seq;
    let iv = Duration::from_nanos(st.interval);
    // Expirations up to now (more than one if the worker was late).
    let n = if st.interval > 0 {
        let (next, n) = forward_expiry(st.expires, fire.now(), iv);
        st.expires = next;
        n.max(1)
    } else {
        st.armed = false;
        1
    };
    match &inner.notify {
        Notify::None => return HrRestart::NoRestart,
        Notify::Fd => {
            st.overrun_last = clamp(n - 1);
            if let Some(fd) = &st.fd {
                notify::fd_add(fd, n);
            }
            st.fd_dirty = true;
        }
        Notify::Signal {
            signo,
            value,
            thread,
        } => {
            // Whether the previous signal may still wait for acceptance: for
            // the process, its pending set tells; for one thread it cannot
            // be seen, so the timer waits only if the program's acceptance
            // of this signal is reported (`signal_accepted`).
            let waiting = notify::ignored(*signo)
                || (st.sig_queued
                    && match thread {
                        None => notify::signal_pending(*signo),
                        Some(_) => notify::acceptance_reported(*signo),
                    });
            if waiting {
                st.carry = st.carry.saturating_add(n);
                if st.interval > 0 && st.armed {
                    // Look again after a backoff, not every period: the
                    // periods are counted from the clock, whenever it looks.
                    st.backoff = st
                        .backoff
                        .saturating_mul(2)
                        .max(st.interval)
                        .min(MAX_BACKOFF);
                    let poll = fire.now().saturating_add(st.backoff);
                    fire.set_expires(st.expires.max(poll));
                    return HrRestart::Restart;
                }
                return HrRestart::NoRestart;
            }
            st.overrun_last = clamp((n - 1).saturating_add(st.carry));
            st.queued_late = (n - 1).saturating_add(st.carry);
            st.carry = 0;
            st.backoff = 0;
            st.sig_queued = thread.is_none() || notify::acceptance_reported(*signo);
            st.sig_count = st.sig_count.wrapping_add(1);
            notify::send_signal(
                *signo,
                *value,
                *thread,
                inner.id,
                st.overrun_last,
                signal_tag(st.seq, st.sig_count),
            );
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
        fire.set_expires(st.expires);
        HrRestart::Restart
    } else {
        HrRestart::NoRestart
    }
}
