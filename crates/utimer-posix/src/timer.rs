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
use utimer::ClockId;
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

/// Whether utimer implements `clock` (else the kernel's timer serves).
fn implemented(clock: libc::clockid_t) -> bool {
    ClockId::from_raw(clock).is_some()
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
    match system() {
        Some(u) if implemented(clock) => {
            let mut id: c_int = 0;
            // SAFETY: the caller's pointers; `id` is live.
            if unsafe { capi::utimer_timer_create(u, clock, sevp, &mut id) } != 0 {
                return -1;
            }
            // SAFETY: checked in range; the caller promised it writable.
            unsafe {
                match out {
                    Out::New(p) => p.write(id as usize as timer_t),
                    Out::Old(p) => p.write(id),
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

/// The system for a utimer timer's call (one must exist if the timer does;
/// without one the ID names nothing).
fn ours() -> Result<*mut capi::utimer_t, c_int> {
    system().ok_or(libc::EINVAL)
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
        Some(Target::Ours(id)) => match ours() {
            // SAFETY: the caller's pointers.
            Ok(u) => unsafe {
                capi::utimer_timer_settime(u, id, flags & libc::TIMER_ABSTIME, new, old)
            },
            Err(e) => fail(e),
        },
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
        Some(Target::Ours(id)) => match ours() {
            // SAFETY: the caller's pointer.
            Ok(u) => unsafe { capi::utimer_timer_gettime(u, id, cur) },
            Err(e) => fail(e),
        },
        // SAFETY: as above.
        Some(Target::Glibc(_, g)) => unsafe { (real().timer_gettime)(g, cur) },
        None => fail(libc::EINVAL),
    }
}

/// `timer_getoverrun()`.
pub(crate) fn getoverrun(t: Option<Target>) -> c_int {
    let _section = critical::enter();
    match t {
        Some(Target::Ours(id)) => match ours() {
            // SAFETY: a live system.
            Ok(u) => unsafe { capi::utimer_timer_getoverrun(u, id) },
            Err(e) => fail(e),
        },
        // SAFETY: glibc's timer.
        Some(Target::Glibc(_, g)) => unsafe { (real().timer_getoverrun)(g) },
        None => fail(libc::EINVAL),
    }
}

/// `timer_delete()`.
pub(crate) fn delete(t: Option<Target>) -> c_int {
    let _section = critical::enter();
    match t {
        Some(Target::Ours(id)) => match ours() {
            // SAFETY: a live system.
            Ok(u) => unsafe { capi::utimer_timer_delete(u, id) },
            Err(e) => fail(e),
        },
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
