//! `posix-costs`: single-thread costs of the POSIX timer calls: utimer's
//! user-space `timer_*` against the kernel's syscalls, on `SIGEV_NONE`
//! timers (neither queues a timer for those: the kernel computes their
//! state when asked, and so does utimer), ns/op through the runner's
//! interleaved batches:
//!
//! * `create_settime_delete`: a timer's whole life, armed once far ahead;
//! * `settime_rearm`: an armed timer moved to a new far value;
//! * `gettime`: `timer_gettime` of an armed timer.
//!
//! The kernel/utimer ratio of each is printed as a note (the target is at
//! least 10x: a syscall against a user-space call).

use std::hint::black_box;
use std::time::Duration;

use utimer::{ClockId, ItimerSpec, Notify, TimerId, TimerSystem};

use super::timers::{kernel_timers, utimer_timers, FAR};
use crate::harness::plot::Chart;
use crate::peers::posix::{itimerspec, Notify as KNotify, PosixTimer};
use crate::{time, Contender, GroupDoc, Runner, Schedule};

const COSTS: &str = "posix-costs";

/// The group's section of the results page (`--markdown`).
const DOC: GroupDoc = GroupDoc {
    title: "POSIX timer calls against the kernel's system calls",
    about: "Single-thread cost of the POSIX timer calls on `SIGEV_NONE` timers (neither the \
         kernel nor utimer queues a timer for those: both compute the state when asked), ns \
         per operation in the runner's interleaved batches: `create_settime_delete`, a timer's \
         whole life, armed once far ahead; `settime_rearm`, an armed timer moved to a new far \
         value; `gettime`.",
    look_for: "How much of a POSIX timer call is the system call; the note gives the \
         kernel/utimer ratio of each call. What remains in utimer's `gettime` is the epoch pin \
         and the timer's own lock plus one `clock_gettime` through the vDSO, which the kernel \
         pays too. Where system calls are slower than on this machine the gap is wider.",
};

/// A utimer system for the single-thread rows, with one armed timer.
fn costs_system() -> Result<(TimerSystem, TimerId), String> {
    let sys = TimerSystem::without_threads(1);
    let id = utimer_timers(&sys, 1)?[0];
    Ok((sys, id))
}

pub(crate) fn run(r: &mut Runner) {
    let cases = ["create_settime_delete", "settime_rearm", "gettime"];
    if !cases.iter().any(|c| r.wants(COSTS, c)) {
        return;
    }
    r.enter_group(
        COSTS,
        DOC,
        "single-thread cost of the POSIX timer calls, SIGEV_NONE timers: utimer vs the\n\
         kernel's syscalls (ns/op). settime_rearm moves an armed timer to a new far value",
    );
    let once = |i: u64| ItimerSpec::once(FAR + Duration::from_nanos(i & 1023));
    let konce = |i: u64| itimerspec(FAR + Duration::from_nanos(i & 1023));
    r.case(COSTS, cases[0], Chart::Bars, Schedule::Interleaved, || {
        vec![
            Contender::batched("utimer", move || {
                let (sys, _) = costs_system()?;
                Ok(move |n: u64| {
                    time(|| {
                        for i in 0..n {
                            let id = sys
                                .posix()
                                .timer_create(ClockId::Monotonic, Notify::None)
                                .expect("timer_create");
                            black_box(sys.posix().timer_settime(id, false, once(i)).ok());
                            black_box(sys.posix().timer_delete(id).ok());
                        }
                    })
                })
            }),
            Contender::batched("kernel", move || {
                drop(kernel_timers(1)?);
                Ok(move |n: u64| {
                    time(|| {
                        for i in 0..n {
                            if let Ok(t) = PosixTimer::new(KNotify::None) {
                                black_box(t.settime(&konce(i)).ok());
                            }
                        }
                    })
                })
            }),
        ]
    });
    r.case(COSTS, cases[1], Chart::Bars, Schedule::Interleaved, || {
        vec![
            Contender::batched("utimer", move || {
                let (sys, id) = costs_system()?;
                Ok(move |n: u64| {
                    time(|| {
                        for i in 0..n {
                            black_box(sys.posix().timer_settime(id, false, once(i)).ok());
                        }
                    })
                })
            }),
            Contender::batched("kernel", move || {
                let t = kernel_timers(1)?.pop().expect("one timer");
                Ok(move |n: u64| {
                    time(|| {
                        for i in 0..n {
                            black_box(t.settime(&konce(i)).ok());
                        }
                    })
                })
            }),
        ]
    });
    r.case(COSTS, cases[2], Chart::Bars, Schedule::Interleaved, || {
        vec![
            Contender::batched("utimer", move || {
                let (sys, id) = costs_system()?;
                Ok(move |n: u64| {
                    time(|| {
                        for _ in 0..n {
                            black_box(sys.posix().timer_gettime(black_box(id)).ok());
                        }
                    })
                })
            }),
            Contender::batched("kernel", move || {
                let t = kernel_timers(1)?.pop().expect("one timer");
                Ok(move |n: u64| {
                    time(|| {
                        for _ in 0..n {
                            black_box(t.gettime().ok());
                        }
                    })
                })
            }),
        ]
    });
    super::timers::note_ratios(r, COSTS, &cases, "utimer", "target >= 10x");
}
