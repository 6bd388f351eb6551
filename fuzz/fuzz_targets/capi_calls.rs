//! Random sequences of C API calls: systems opened and closed, POSIX
//! timers created, armed, read and deleted by IDs that may be stale or
//! made up, wheel timers set up, armed, cancelled and freed (also after
//! their system closed), callbacks that re-enter the API. Every call must
//! return one of its documented values with a documented errno; a caught
//! panic (errno EFAULT where no NULL pointer was passed) fails the run, as
//! does anything the sanitizer sees.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;
use utimer_capi::*;

#[derive(Arbitrary, Debug)]
enum Op {
    Open { threads: bool, workers: u8 },
    Close { sys: u8 },
    Create { sys: u8, clock: u8, notify: u8, null_id: bool },
    Settime { sys: u8, id: Id, flags: u8, value: Spec, interval: Spec, want_old: bool },
    Gettime { sys: u8, id: Id, null_out: bool },
    Getoverrun { sys: u8, id: Id },
    Delete { sys: u8, id: Id },
    Fd { sys: u8, id: Id },
    Setup { sys: u8, flags: u8 },
    Mod { timer: u8, kind: u8, ahead: u16, raw: Option<u64> },
    Cancel { timer: u8, kind: u8 },
    Free { timer: u8 },
    Pause { micros: u16 },
    Run { sys: u8 },
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Id {
    Earlier(u8),
    Raw(i32),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
struct Spec {
    sec: i16,
    nsec: u32,
}

struct Sys {
    u: *mut utimer_t,
    worker: *mut utimer_worker_t,
}

static CALLS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_notify(_v: libc::sigval) {
    CALLS.fetch_add(1, Ordering::Relaxed);
}

extern "C" fn on_timer(t: *mut utimer_timer_list, _arg: *mut c_void) {
    CALLS.fetch_add(1, Ordering::Relaxed);
    // Re-entering from its own callback: refused, never deadlocks.
    let r = unsafe { utimer_wheel_delete_sync(t) };
    assert!(r == -1 && errno() == libc::EDEADLK, "del_timer_sync from its callback: {r}");
}

extern "C" fn wake(_arg: *mut c_void) {}

fn errno() -> c_int {
    unsafe { *libc::__errno_location() }
}

fn clear_errno() {
    unsafe { *libc::__errno_location() = 0 };
}

/// -1 with one of `allowed`, or a success value.
fn expect(what: &str, r: i64, ok: impl Fn(i64) -> bool, allowed: &[c_int]) {
    if r == -1 || (r == -2 && what == "idle_enter") {
        let e = errno();
        assert!(allowed.contains(&e), "{what}: errno {e} not in {allowed:?}");
    } else {
        assert!(ok(r), "{what}: unexpected return {r}");
    }
}

fn pick<T>(v: &[T], i: u8) -> Option<&T> {
    (!v.is_empty()).then(|| &v[i as usize % v.len()])
}

fuzz_target!(|ops: Vec<Op>| {
    static INIT: Once = Once::new();
    INIT.call_once(|| unsafe {
        // Signals the timers may send: ignored, so the process survives.
        libc::signal(libc::SIGALRM, libc::SIG_IGN);
        libc::signal(libc::SIGRTMIN() + 1, libc::SIG_IGN);
    });
    let mut systems: Vec<Sys> = Vec::new();
    let mut ids: Vec<c_int> = Vec::new();
    let mut timers: Vec<*mut utimer_timer_list> = Vec::new();
    for op in ops.into_iter().take(64) {
        clear_errno();
        match op {
            Op::Open { threads, workers } => {
                if systems.len() >= 2 {
                    continue;
                }
                let n = 1 + u32::from(workers % 2);
                let u = if threads { utimer_open(n) } else { utimer_open_unthreaded(n) };
                assert!(!u.is_null(), "open: errno {}", errno());
                let worker = if threads {
                    std::ptr::null_mut()
                } else {
                    unsafe { utimer_worker_register(u, 0, Some(wake), std::ptr::null_mut()) }
                };
                systems.push(Sys { u, worker });
            }
            Op::Close { sys } => {
                if systems.is_empty() {
                    continue;
                }
                let s = systems.remove(sys as usize % systems.len());
                unsafe {
                    if !s.worker.is_null() {
                        assert_eq!(utimer_worker_unregister(s.worker), 0);
                    }
                    utimer_close(s.u);
                }
            }
            Op::Create { sys, clock, notify, null_id } => {
                let u = pick(&systems, sys).map_or(std::ptr::null_mut(), |s| s.u);
                let clock = [libc::CLOCK_MONOTONIC, libc::CLOCK_REALTIME, libc::CLOCK_BOOTTIME, 99][clock as usize % 4];
                let mut ev: libc::sigevent = unsafe { std::mem::zeroed() };
                ev.sigev_value = libc::sigval { sival_ptr: 7 as *mut c_void };
                ev.sigev_signo = libc::SIGRTMIN() + 1;
                let sevp: *const libc::sigevent = match notify % 6 {
                    0 => std::ptr::null(),
                    1 => { ev.sigev_notify = libc::SIGEV_NONE; &ev }
                    2 => { ev.sigev_notify = libc::SIGEV_SIGNAL; &ev }
                    3 => {
                        ev.sigev_notify = libc::SIGEV_THREAD;
                        // The function pointer sits where the thread ID does.
                        let f: extern "C" fn(libc::sigval) = on_notify;
                        unsafe { std::ptr::addr_of_mut!(ev.sigev_notify_thread_id).cast::<usize>().write_unaligned(f as usize) };
                        &ev
                    }
                    4 => { ev.sigev_notify = UTIMER_SIGEV_FD; &ev }
                    _ => { ev.sigev_notify = 1234; &ev }
                };
                let mut id = -1;
                let idp = if null_id { std::ptr::null_mut() } else { &mut id as *mut c_int };
                let r = unsafe { utimer_timer_create(u, clock, sevp, idp) };
                expect("create", r.into(), |r| r == 0, &[libc::EINVAL, libc::EFAULT, libc::EAGAIN, libc::EMFILE, libc::ENFILE]);
                if r == 0 {
                    ids.push(id);
                }
            }
            Op::Settime { sys, id, flags, value, interval, want_old } => {
                let u = pick(&systems, sys).map_or(std::ptr::null_mut(), |s| s.u);
                let id = resolve(&ids, id);
                let spec = libc::itimerspec {
                    it_value: ts(value),
                    it_interval: ts(interval),
                };
                let mut old: libc::itimerspec = unsafe { std::mem::zeroed() };
                let oldp = if want_old { &mut old as *mut _ } else { std::ptr::null_mut() };
                let r = unsafe { utimer_timer_settime(u, id, c_int::from(flags % 3), &spec, oldp) };
                expect("settime", r.into(), |r| r == 0, &[libc::EINVAL]);
            }
            Op::Gettime { sys, id, null_out } => {
                let u = pick(&systems, sys).map_or(std::ptr::null_mut(), |s| s.u);
                let mut cur: libc::itimerspec = unsafe { std::mem::zeroed() };
                let curp = if null_out { std::ptr::null_mut() } else { &mut cur as *mut _ };
                let r = unsafe { utimer_timer_gettime(u, resolve(&ids, id), curp) };
                let allowed: &[c_int] = if null_out { &[libc::EINVAL, libc::EFAULT] } else { &[libc::EINVAL] };
                expect("gettime", r.into(), |r| r == 0, allowed);
                if r == 0 {
                    assert!(cur.it_value.tv_sec >= 0 && (0..1_000_000_000).contains(&cur.it_value.tv_nsec));
                }
            }
            Op::Getoverrun { sys, id } => {
                let u = pick(&systems, sys).map_or(std::ptr::null_mut(), |s| s.u);
                let r = unsafe { utimer_timer_getoverrun(u, resolve(&ids, id)) };
                expect("getoverrun", r.into(), |r| r >= 0, &[libc::EINVAL]);
            }
            Op::Delete { sys, id } => {
                let u = pick(&systems, sys).map_or(std::ptr::null_mut(), |s| s.u);
                let r = unsafe { utimer_timer_delete(u, resolve(&ids, id)) };
                expect("delete", r.into(), |r| r == 0, &[libc::EINVAL]);
            }
            Op::Fd { sys, id } => {
                let u = pick(&systems, sys).map_or(std::ptr::null_mut(), |s| s.u);
                let r = unsafe { utimer_timer_fd(u, resolve(&ids, id)) };
                expect("fd", r.into(), |r| r >= 0, &[libc::EINVAL]);
            }
            Op::Setup { sys, flags } => {
                let u = pick(&systems, sys).map_or(std::ptr::null_mut(), |s| s.u);
                let t = unsafe { utimer_wheel_setup(u, Some(on_timer), std::ptr::null_mut(), u32::from(flags % 5)) };
                if t.is_null() {
                    assert_eq!(errno(), libc::EINVAL);
                } else {
                    timers.push(t);
                }
            }
            Op::Mod { timer, kind, ahead, raw } => {
                let Some(&t) = pick(&timers, timer) else { continue };
                let expires = raw.unwrap_or(u64::from(ahead));
                let r = unsafe {
                    match kind % 3 {
                        0 => utimer_wheel_mod(t, expires),
                        1 => utimer_wheel_mod_pending(t, expires),
                        _ => utimer_wheel_reduce(t, expires),
                    }
                };
                expect("mod", r.into(), |r| r == 0 || r == 1, &[libc::ESHUTDOWN]);
            }
            Op::Cancel { timer, kind } => {
                let Some(&t) = pick(&timers, timer) else { continue };
                let r = unsafe {
                    match kind % 4 {
                        0 => utimer_wheel_delete(t),
                        1 => utimer_wheel_delete_sync(t),
                        2 => utimer_wheel_shutdown_sync(t),
                        _ => utimer_wheel_pending(t),
                    }
                };
                expect("cancel", r.into(), |r| r == 0 || r == 1, &[libc::ESHUTDOWN]);
            }
            Op::Free { timer } => {
                if timers.is_empty() {
                    continue;
                }
                let t = timers.remove(timer as usize % timers.len());
                unsafe { utimer_wheel_free(t) };
            }
            Op::Pause { micros } => {
                std::thread::sleep(std::time::Duration::from_micros(u64::from(micros % 3000)));
            }
            Op::Run { sys } => {
                let Some(s) = pick(&systems, sys) else { continue };
                if !s.worker.is_null() {
                    let r = unsafe { utimer_worker_run(s.worker) };
                    assert!(r >= 0, "run: {r} errno {}", errno());
                    let ns = unsafe { utimer_worker_idle_enter(s.worker) };
                    assert!(ns >= -1, "idle_enter: {ns} errno {}", errno());
                    assert_eq!(unsafe { utimer_worker_idle_exit(s.worker) }, 0);
                }
            }
        }
    }
    for t in timers {
        unsafe { utimer_wheel_free(t) };
    }
    for s in systems {
        unsafe {
            if !s.worker.is_null() {
                assert_eq!(utimer_worker_unregister(s.worker), 0);
            }
            utimer_close(s.u);
        }
    }
});

fn ts(s: Spec) -> libc::timespec {
    libc::timespec {
        tv_sec: libc::time_t::from(s.sec),
        // Mostly valid, sometimes not normalized.
        tv_nsec: libc::c_long::from(s.nsec % 1_100_000_000),
    }
}

fn resolve(ids: &[c_int], id: Id) -> c_int {
    match id {
        Id::Earlier(i) => pick(ids, i).copied().unwrap_or(-1),
        Id::Raw(r) => r,
    }
}
