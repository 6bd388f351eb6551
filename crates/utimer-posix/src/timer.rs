//! `timer_create` … `timer_delete`: utimer's timers for the clocks it
//! implements, glibc's (the kernel's) for the rest.
//!
//! # `timer_t` values
//!
//! | value | names |
//! |---|---|
//! | `0..=INT_MAX` | utimer timer of that ID (glibc's are the kernel's IDs, the same range) |
//! | `PASSED | i` | slot `i` of `PASSED_THROUGH`: a timer glibc made |
//! | anything else | nothing: `EINVAL`, as the kernel answers an unknown ID |
//!
//! The old `GLIBC_2.2.5` functions take `int` IDs: utimer's as they are,
//! a passed-through timer's as `-1 - i`.
//!
//! Every call runs in a critical section (`critical.rs`): a signal handler
//! that interrupts it runs when it returns.

use crate::critical;
use crate::global::system;
use crate::real::{fail, real, timer_t};
use std::ffi::c_int;
use std::sync::Mutex;
use utimer::{ClockId, TimerId};
use utimer_capi as capi;

/// Tag of a passed-through timer's `timer_t`.
const PASSED: usize = 1 << 62;

/// glibc's `timer_t` of each passed-through timer (as an integer), by slot.
static PASSED_THROUGH: Mutex<Vec<Option<usize>>> = Mutex::new(Vec::new());

/// What a `timer_t` names.
pub(crate) enum Target {
    Ours(c_int),
    Glibc(usize, timer_t),
}

/// What a `timer_t` names (the module docs' table).
pub(crate) fn decode(t: timer_t) -> Option<Target> {
    let v = t as usize;
    if v <= i32::MAX as usize {
        return Some(Target::Ours(v as c_int));
    }
    glibc_slot(v.checked_sub(PASSED)?)
}

/// What an old-ABI `int` ID names.
pub(crate) fn decode_old(id: c_int) -> Option<Target> {
    if id >= 0 {
        return Some(Target::Ours(id));
    }
    glibc_slot(usize::try_from(-1 - i64::from(id)).ok()?)
}

fn glibc_slot(slot: usize) -> Option<Target> {
    let table = PASSED_THROUGH.lock().unwrap_or_else(|e| e.into_inner());
    let t = (*table.get(slot)?)?;
    Some(Target::Glibc(slot, t as timer_t))
}

/// How a new timer's handle is written out.
pub(crate) enum Out {
    New(*mut timer_t),
    Old(*mut c_int),
}

/// `timer_create()`. `EFAULT` for a `sevp` or an out pointer where no
/// memory can be (`capi::user_pointer_ok`; NULL for the out pointer), where
/// glibc's would crash, before anything is made: the kernel's answer.
///
/// # Safety
/// As glibc's: `sevp` is NULL or a `struct sigevent`; the out pointer is
/// writable (or either is where no memory can be).
pub(crate) unsafe fn create(clock: libc::clockid_t, sevp: *mut libc::sigevent, out: Out) -> c_int {
    let _section = critical::enter();
    let out_ok = match out {
        Out::New(p) => capi::user_pointer_ok(p),
        Out::Old(p) => capi::user_pointer_ok(p),
    };
    if !out_ok || !(sevp.is_null() || capi::user_pointer_ok(sevp)) {
        return fail(libc::EFAULT);
    }
    match (system(), ClockId::from_raw(clock)) {
        (Some(u), Some(clock)) => {
            // SAFETY: NULL, or checked in range and the caller promised a
            // sigevent.
            let ev = unsafe { sevp.as_ref() };
            let Some(id) = capi::guard(None, || u.timer_create(clock, ev).map(Some)) else {
                return -1;
            };
            // SAFETY: checked in range; the caller promised it writable.
            unsafe {
                match out {
                    Out::New(p) => p.write(id.raw() as usize as timer_t),
                    Out::Old(p) => p.write(id.raw()),
                }
            }
            0
        }
        _ => {
            let mut t: timer_t = std::ptr::null_mut();
            // SAFETY: glibc's function with the caller's sigevent.
            if unsafe { (real().timer_create)(clock, sevp, &mut t) } != 0 {
                return -1;
            }
            let slot = {
                let mut table = PASSED_THROUGH.lock().unwrap_or_else(|e| e.into_inner());
                match table.iter().position(Option::is_none) {
                    Some(i) => {
                        table[i] = Some(t as usize);
                        i
                    }
                    None => {
                        table.push(Some(t as usize));
                        table.len() - 1
                    }
                }
            };
            // SAFETY: as above.
            unsafe {
                match out {
                    Out::New(p) => p.write((PASSED | slot) as timer_t),
                    Out::Old(p) => p.write(c_int::try_from(-1 - slot as i64).unwrap_or(c_int::MIN)),
                }
            }
            0
        }
    }
}

/// Runs `f` on the system for a utimer timer's call, at the C boundary:
/// its `Ok` value, or -1 with `errno` (`EINVAL` without a system: one must
/// exist if the timer does, so the ID names nothing).
#[inline(always)]
fn ours(f: impl FnOnce(&capi::utimer_t) -> Result<c_int, capi::Errno>) -> c_int {
    match system() {
        Some(u) => capi::guard(-1, || f(u)),
        None => fail(libc::EINVAL),
    }
}

/// `timer_settime()`. The kernel reads only `TIMER_ABSTIME` of `flags`,
/// and reads `new` before it looks the timer up: `EFAULT` for one where no
/// memory can be comes first.
///
/// # Safety
/// As glibc's.
pub(crate) unsafe fn settime(
    t: Option<Target>,
    flags: c_int,
    new: *const libc::itimerspec,
    old: *mut libc::itimerspec,
) -> c_int {
    let _section = critical::enter();
    if !new.is_null() && !capi::user_pointer_ok(new) {
        return fail(libc::EFAULT);
    }
    match t {
        Some(Target::Ours(id)) => ours(|u| {
            // The kernel's EINVAL for a NULL value (glibc passes it on).
            // SAFETY: NULL, or checked in range and the caller promised
            // it readable.
            let new = unsafe { new.as_ref() }.ok_or(libc::EINVAL)?;
            let abstime = flags & libc::TIMER_ABSTIME != 0;
            let was = u.timer_settime(TimerId::from_raw(id), abstime, new)?;
            // SAFETY: the caller's promise for `old`.
            unsafe { capi::write_old(old, was) }?;
            Ok(0)
        }),
        // SAFETY: glibc's timer, the caller's pointers.
        Some(Target::Glibc(_, g)) => unsafe { (real().timer_settime)(g, flags, new, old) },
        None => fail(libc::EINVAL),
    }
}

/// `timer_gettime()`.
///
/// # Safety
/// As glibc's.
pub(crate) unsafe fn gettime(t: Option<Target>, cur: *mut libc::itimerspec) -> c_int {
    let _section = critical::enter();
    match t {
        Some(Target::Ours(id)) => ours(|u| {
            let v = u.timer_gettime(TimerId::from_raw(id))?;
            // SAFETY: the caller's pointer: refused or writable.
            unsafe { capi::write_out(cur, v) }?;
            Ok(0)
        }),
        // SAFETY: as above.
        Some(Target::Glibc(_, g)) => unsafe { (real().timer_gettime)(g, cur) },
        None => fail(libc::EINVAL),
    }
}

/// `timer_getoverrun()`.
pub(crate) fn getoverrun(t: Option<Target>) -> c_int {
    let _section = critical::enter();
    match t {
        Some(Target::Ours(id)) => ours(|u| u.timer_getoverrun(TimerId::from_raw(id))),
        // SAFETY: glibc's timer.
        Some(Target::Glibc(_, g)) => unsafe { (real().timer_getoverrun)(g) },
        None => fail(libc::EINVAL),
    }
}

/// `timer_delete()`.
pub(crate) fn delete(t: Option<Target>) -> c_int {
    let _section = critical::enter();
    match t {
        Some(Target::Ours(id)) => ours(|u| u.timer_delete(TimerId::from_raw(id)).map(|()| 0)),
        Some(Target::Glibc(slot, g)) => {
            // SAFETY: glibc's timer.
            let r = unsafe { (real().timer_delete)(g) };
            if r == 0 {
                let mut table = PASSED_THROUGH.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(s) = table.get_mut(slot) {
                    *s = None;
                }
            }
            r
        }
        None => fail(libc::EINVAL),
    }
}

thread_local! {
    /// The table's lock, held across `fork` by the forking thread.
    static FORK_HELD: std::cell::RefCell<Option<std::sync::MutexGuard<'static, Vec<Option<usize>>>>> =
        const { std::cell::RefCell::new(None) };
}

/// Before `fork`: the table is locked, so that the child never inherits it
/// locked by a thread that does not exist there.
pub(crate) fn fork_prepare() {
    let g = PASSED_THROUGH.lock().unwrap_or_else(|e| e.into_inner());
    FORK_HELD.with(|h| *h.borrow_mut() = Some(g));
    utimer::posix::fork::prepare();
}

/// After `fork`, in the parent: unlocked as it was.
pub(crate) fn fork_parent() {
    utimer::posix::fork::parent();
    FORK_HELD.with(|h| drop(h.borrow_mut().take()));
}

/// After `fork`, in the child: glibc's timers are not inherited either
/// (the kernel's POSIX timers are not), so no slot names one any more.
pub(crate) fn fork_child() {
    utimer::posix::fork::child();
    FORK_HELD.with(|h| {
        if let Some(mut g) = h.borrow_mut().take() {
            g.clear();
        }
    });
}
