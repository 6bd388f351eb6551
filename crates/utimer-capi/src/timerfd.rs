//! timerfds without system calls: `utimer_timerfd_create`,
//! `utimer_timerfd_settime`, `utimer_timerfd_gettime` and
//! `utimer_timerfd_close`, with the kernel's `timerfd_create(2)` semantics.
//!
//! # How a user-space timerfd is made
//!
//! The program's descriptor is an `eventfd` opened with the program's flags
//! (`TFD_NONBLOCK` and `TFD_CLOEXEC` have `EFD_`'s values), so `read`,
//! `poll`, `epoll` and `select` treat it as a timerfd: unreadable until the
//! timer expires, then readable, and a read returns the 8-byte number of
//! expirations since the last one (`EAGAIN` when non-blocking and none,
//! `EINVAL` for a buffer under 8 bytes). The timer writes its expirations
//! into a duplicate of its own (`O_CLOEXEC`), never through the program's
//! descriptor number: once the program closes that number, whatever the
//! number names next never receives a write.
//!
//! Which timer a number names is one process-wide table indexed by
//! descriptor (`FdTable`): a lookup is two atomic loads, no lock and no
//! system call. `timerfd_settime` therefore costs what `timer_settime`
//! costs, plus a `read` only when an expiry is waiting to be discarded.
//!
//! # Differences from the kernel
//!
//! * The table knows the numbers it was told of: the one
//!   `utimer_timerfd_create` returned, and each duplicate registered with
//!   `utimer_timerfd_dup`. A duplicate made without telling it reads and
//!   polls the same count, but the `utimer_timerfd_*` calls refuse its
//!   number. The timer lives until its last known number is released.
//! * Close it with `utimer_timerfd_close`: a plain `close` leaves the timer
//!   armed until `utimer_close` (it still writes only into its own
//!   duplicate). The drop-in library (`utimer-posix`) interposes `close`,
//!   `close_range`, `closefrom`, `dup`, `dup2`, `dup3` and `fcntl` so that
//!   programs need not know.
//! * `TFD_TIMER_CANCEL_ON_SET` is refused (`EINVAL`): the drop-in library
//!   hands such a timer to the kernel.
//! * A write to the descriptor adds to the count (an eventfd's), where the
//!   kernel refuses it with `EINVAL`.

use crate::ffi::{errno, guard, handle, user_pointer, write_old, write_out, Errno};
use crate::system::utimer_t;
use std::collections::HashMap;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::raw::c_int;
use std::sync::atomic::{AtomicI64, AtomicPtr, Ordering};
use std::sync::{Mutex, MutexGuard};
use utimer::{ClockId, TimerId};

/// Descriptors per chunk of the table.
const CHUNK: usize = 1024;
/// Chunks: descriptors below `CHUNK * CHUNKS` (4M) can be timerfds.
const CHUNKS: usize = 4096;

/// Descriptor number → the timerfd's clock in the high 32 bits and its
/// timer ID + 1 in the low 32 (0: not a utimer timerfd). Chunks are
/// allocated on first use and never freed (8 KiB each), so a lookup never
/// races a free.
struct FdTable {
    chunks: [AtomicPtr<[AtomicI64; CHUNK]>; CHUNKS],
}

static TABLE: FdTable = FdTable {
    chunks: [const { AtomicPtr::new(std::ptr::null_mut()) }; CHUNKS],
};

impl FdTable {
    /// The slot of `fd`, allocating its chunk if `make`.
    fn slot(&self, fd: c_int, make: bool) -> Option<&'static AtomicI64> {
        let fd = usize::try_from(fd).ok()?;
        let (c, i) = (fd / CHUNK, fd % CHUNK);
        let cell = self.chunks.get(c)?;
        let mut p = cell.load(Ordering::Acquire);
        if p.is_null() {
            if !make {
                return None;
            }
            let fresh = Box::into_raw(Box::new([const { AtomicI64::new(0) }; CHUNK]));
            p = match cell.compare_exchange(
                std::ptr::null_mut(),
                fresh,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => fresh,
                Err(won) => {
                    // SAFETY: `fresh` was never shared: this thread lost the
                    // race to publish it.
                    drop(unsafe { Box::from_raw(fresh) });
                    won
                }
            };
        }
        // SAFETY: a published chunk is never freed (see the type's docs).
        Some(unsafe { &(*p)[i] })
    }

    /// The timer `fd` names and its clock, if it is a utimer timerfd.
    fn entry(&self, fd: c_int) -> Option<(TimerId, libc::clockid_t)> {
        let v = self.slot(fd, false)?.load(Ordering::Acquire);
        (v != 0).then(|| {
            let id = (v & 0xffff_ffff) - 1;
            (TimerId::from_raw(id as i32), (v >> 32) as libc::clockid_t)
        })
    }

    /// The timer `fd` names.
    fn get(&self, fd: c_int) -> Option<TimerId> {
        self.entry(fd).map(|(id, _)| id)
    }
}

/// How many descriptor numbers name each timerfd's timer (by ID): it is
/// deleted when the last is released. Touched only when a number is
/// created, duplicated or released.
static NAMES: Mutex<Names> = Mutex::new(None);

/// Timer ID → how many numbers name it (`None` until the first).
type Names = Option<HashMap<i32, u32>>;

/// Adds `delta` names to timer `id`; returns how many it has now.
fn names(id: TimerId, delta: i32) -> u32 {
    let mut g = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let map = g.get_or_insert_with(HashMap::new);
    let n = map.entry(id.raw()).or_insert(0);
    *n = n.saturating_add_signed(delta);
    let now = *n;
    if now == 0 {
        map.remove(&id.raw());
    }
    now
}

/// The slot value of timer `id` on `clock`.
fn pack(id: TimerId, clock: libc::clockid_t) -> i64 {
    (i64::from(clock) << 32) | (i64::from(id.raw()) + 1)
}

/// The clock of `fd` if it names a utimer timerfd (of any system), else
/// `None`: two atomic loads, no system call. The drop-in library asks it on
/// every `close`, `dup2` and `timerfd_*` call, to tell utimer's timerfds
/// from the kernel's (`timerfd_create(2)`'s clock IDs).
pub fn timerfd_clock(fd: c_int) -> Option<libc::clockid_t> {
    TABLE.entry(fd).map(|(_, clock)| clock)
}

/// Calls `f` with every descriptor number in `first..=last` that names a
/// utimer timerfd (of any system), in increasing order: the drop-in
/// library's `close_range` and `closefrom` release them before the kernel
/// closes the range. Only chunks of the table that were ever used are
/// visited, so a range up to `c_uint::MAX` costs what the table holds.
/// Numbers released or registered while it runs may or may not be seen.
pub fn for_each_timerfd(first: u32, last: u32, mut f: impl FnMut(c_int)) {
    let limit = (CHUNK * CHUNKS) as u64;
    let (first, end) = (u64::from(first), (u64::from(last) + 1).min(limit));
    let mut fd = first;
    while fd < end {
        let (c, i) = ((fd as usize) / CHUNK, (fd as usize) % CHUNK);
        let chunk_end = ((c + 1) * CHUNK) as u64;
        let p = TABLE.chunks[c].load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: a published chunk is never freed (see `FdTable`).
            let chunk = unsafe { &*p };
            let hi = (end.min(chunk_end) - (c * CHUNK) as u64) as usize;
            for (j, slot) in chunk[i..hi].iter().enumerate() {
                if slot.load(Ordering::Acquire) != 0 {
                    f((c * CHUNK + i + j) as c_int);
                }
            }
        }
        fd = chunk_end;
    }
}

/// The timer that `fd` names (its ID, as the C API numbers timers) and its
/// clock, if `fd` is a utimer timerfd: two numbers with the same ID are
/// duplicates of one timerfd. Two atomic loads. The drop-in library hands
/// every number of a timer to one kernel timerfd across `fork` and `exec`.
pub fn timerfd_timer(fd: c_int) -> Option<(c_int, libc::clockid_t)> {
    TABLE.entry(fd).map(|(id, clock)| (id.raw(), clock))
}

thread_local! {
    /// The names' lock, held across `fork` by the forking thread.
    static FORK_HELD: std::cell::RefCell<Option<MutexGuard<'static, Names>>> =
        const { std::cell::RefCell::new(None) };
}

/// Before `fork` (a `pthread_atfork` prepare handler): the count of names
/// of each timer is locked, so that the child never inherits it locked by
/// a thread that does not exist there. A number created or released while
/// it is held waits for `timerfd_fork_parent` (the table's slots stay as
/// they are, so what the child inherits is what was registered).
pub fn timerfd_fork_prepare() {
    let g = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    // `try_`: a `fork` handler must not panic (only these three touch it).
    let _ = FORK_HELD.try_with(|h| h.try_borrow_mut().map(|mut h| *h = Some(g)));
}

/// After `fork`, in the parent: the names' lock is let go.
pub fn timerfd_fork_parent() {
    let _ = FORK_HELD.try_with(|h| h.try_borrow_mut().map(|mut h| drop(h.take())));
}

/// After `fork`, in the child, once it has dealt with the numbers it
/// inherited (`timerfd_timer`, `for_each_timerfd`): no number names a
/// utimer timerfd any more and no timer has a name, so that the child's
/// calls go to the kernel's timerfds that replaced them and the child's
/// own timers (of a system of its own) start with clean counts. The
/// parent's timers are neither deleted nor touched: their system's threads
/// do not exist in the child.
pub fn timerfd_fork_child() {
    let held = FORK_HELD.try_with(|h| h.try_borrow_mut().map(|mut h| h.take()));
    if let Ok(Ok(Some(mut g))) = held {
        *g = None;
    }
    for cell in &TABLE.chunks {
        let p = cell.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: a published chunk is never freed (see `FdTable`).
            for slot in unsafe { &*p } {
                slot.store(0, Ordering::Release);
            }
        }
    }
}

/// Opens a descriptor: -1 becomes the `errno`.
fn cvt(fd: c_int) -> Result<OwnedFd, Errno> {
    if fd < 0 {
        Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EMFILE))
    } else {
        // SAFETY: a descriptor just returned to us, owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

/// The timerfd calls in Rust, with typed arguments and the kernel's error
/// numbers: what each `utimer_timerfd_*` export runs between checking the
/// pointers C passed and writing out what it returns, and what the drop-in
/// library calls directly. No `errno` is set here.
impl utimer_t {
    /// Creates a timerfd on `clock`, disarmed: the kernel's
    /// `timerfd_create()`. `flags`: `TFD_NONBLOCK`, `TFD_CLOEXEC`. Returns
    /// the descriptor (see the module docs for what it is).
    ///
    /// # Errors
    /// `EINVAL` (other flags), `EMFILE`/`ENFILE` (no descriptor left),
    /// `EAGAIN` (no timer ID left).
    pub fn timerfd_create(&self, clock: ClockId, flags: c_int) -> Result<c_int, Errno> {
        if flags & !(libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) != 0 {
            return Err(libc::EINVAL);
        }
        // SAFETY: eventfd takes integers; TFD_NONBLOCK and TFD_CLOEXEC are
        // EFD_NONBLOCK and EFD_CLOEXEC (both O_NONBLOCK and O_CLOEXEC).
        let theirs = cvt(unsafe { libc::eventfd(0, flags) })?;
        let fd = std::os::fd::AsRawFd::as_raw_fd(&theirs);
        // SAFETY: duplicates a descriptor we own.
        let ours = cvt(unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) })?;
        let slot = TABLE.slot(fd, true).ok_or(libc::EMFILE)?;
        let id = self
            .sys
            .posix()
            .timerfd_create(clock, ours)
            .map_err(errno)?;
        names(id, 1);
        slot.store(pack(id, clock.raw()), Ordering::Release);
        Ok(std::os::fd::IntoRawFd::into_raw_fd(theirs))
    }

    /// Arms (or, with a zero `it_value`, disarms) timerfd `fd` and returns
    /// the previous setting: the kernel's `timerfd_settime()`. `flags`: 0
    /// or `TFD_TIMER_ABSTIME`. Resets the expiration count: a read then
    /// waits for the next expiry.
    ///
    /// # Errors
    /// `EINVAL` (a descriptor that is no utimer timerfd, other flags, a bad
    /// timespec), `EBADF` (a descriptor that is not open).
    // Always inlined, as `timer_settime`: the drop-in's hot path.
    #[inline(always)]
    pub fn timerfd_settime(
        &self,
        fd: c_int,
        flags: c_int,
        new: &libc::itimerspec,
    ) -> Result<libc::itimerspec, Errno> {
        let id = TABLE.get(fd).ok_or_else(|| not_ours(fd))?;
        if flags & !libc::TFD_TIMER_ABSTIME != 0 {
            return Err(libc::EINVAL);
        }
        self.timer_settime(id, flags & libc::TFD_TIMER_ABSTIME != 0, new)
    }

    /// The time to timerfd `fd`'s next expiry and its interval (zero:
    /// disarmed): the kernel's `timerfd_gettime()`.
    ///
    /// # Errors
    /// `EINVAL` (a descriptor that is no utimer timerfd), `EBADF` (not
    /// open).
    #[inline]
    pub fn timerfd_gettime(&self, fd: c_int) -> Result<libc::itimerspec, Errno> {
        let id = TABLE.get(fd).ok_or_else(|| not_ours(fd))?;
        self.timer_gettime(id)
    }

    /// Before a `read` of timerfd `fd`: adds to its count every expiry that
    /// has passed and that its worker has not written yet, as the kernel's
    /// `timerfd_read()` forwards the timer to the moment of the read (the
    /// drop-in library's `read`). Anything that is not a utimer timerfd of
    /// this system is left alone.
    #[doc(alias = "timerfd_read")]
    #[inline]
    pub fn timerfd_expire_due(&self, fd: c_int) {
        if let Some(id) = TABLE.get(fd) {
            self.sys.posix().timer_fd_expire_due(id);
        }
    }

    /// Forgets timerfd `fd` without closing the descriptor: deletes its
    /// timer once no other number names it (no expiry is written after
    /// this returns) and frees the number in the table. For a program that
    /// is about to close or replace the number itself (the drop-in
    /// library's `close`, `dup2`, `dup3`).
    ///
    /// # Errors
    /// `EINVAL` (no utimer timerfd of this system), `EBADF` (not open).
    pub fn timerfd_release(&self, fd: c_int) -> Result<(), Errno> {
        let (id, clock) = TABLE.entry(fd).ok_or_else(|| not_ours(fd))?;
        let slot = TABLE.slot(fd, false).ok_or(libc::EINVAL)?;
        // Only the caller that empties the slot drops its name.
        slot.compare_exchange(pack(id, clock), 0, Ordering::AcqRel, Ordering::Acquire)
            .map_err(|_| libc::EINVAL)?;
        if names(id, -1) > 0 {
            // Another number still names it.
            return Ok(());
        }
        self.sys.posix().timer_delete(id).map_err(|e| {
            // Another system's timerfd: not ours to free; put it back.
            names(id, 1);
            slot.store(pack(id, clock), Ordering::Release);
            errno(e)
        })
    }

    /// Registers `newfd`, a duplicate of timerfd `oldfd` (`dup`, `dup2`,
    /// `fcntl(F_DUPFD)`), as another name of its timer: the timerfd calls
    /// then take it too, and the timer lives until every name is released.
    /// `newfd` must not name another utimer timerfd (release it first).
    ///
    /// # Errors
    /// `EINVAL` (`oldfd` is no utimer timerfd, `newfd` already names one,
    /// or is negative), `EBADF` (`oldfd` not open).
    pub fn timerfd_dup(&self, oldfd: c_int, newfd: c_int) -> Result<(), Errno> {
        let (id, clock) = TABLE.entry(oldfd).ok_or_else(|| not_ours(oldfd))?;
        let slot = TABLE.slot(newfd, true).ok_or(libc::EINVAL)?;
        names(id, 1);
        if slot
            .compare_exchange(0, pack(id, clock), Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            names(id, -1);
            return Err(libc::EINVAL);
        }
        Ok(())
    }
}

/// Creates a timerfd on `clock` (`CLOCK_MONOTONIC`, `CLOCK_REALTIME`,
/// `CLOCK_BOOTTIME`), disarmed: the kernel's `timerfd_create()`. `flags`:
/// `TFD_NONBLOCK`, `TFD_CLOEXEC`. The descriptor reads, polls and blocks as
/// a timerfd (see the module docs for the few differences); close it with
/// `utimer_timerfd_close()`.
///
/// Returns the descriptor, or -1 with `errno`: `EINVAL` (NULL `u`, another
/// clock, other flags), `EMFILE`/`ENFILE` (no descriptor left), `EAGAIN`
/// (no timer ID left).
///
/// # Safety
/// `u` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn utimer_timerfd_create(
    u: *mut utimer_t,
    clock: libc::clockid_t,
    flags: c_int,
) -> c_int {
    guard(-1, || {
        // SAFETY: the caller's promise.
        let u = unsafe { handle(u) }?;
        u.timerfd_create(ClockId::from_raw(clock).ok_or(libc::EINVAL)?, flags)
    })
}

/// `EINVAL` for a descriptor that is no utimer timerfd, `EBADF` for one
/// that is not open (the kernel's answers).
fn not_ours(fd: c_int) -> Errno {
    // SAFETY: F_GETFD takes an integer and reads nothing of ours.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        libc::EBADF
    } else {
        libc::EINVAL
    }
}

/// Arms (or, with a zero `it_value`, disarms) timerfd `fd` and stores the
/// previous setting in `*old_value` if not NULL: the kernel's
/// `timerfd_settime()`. `flags`: 0 or `TFD_TIMER_ABSTIME`. Resets the
/// expiration count: a read then waits for the next expiry.
///
/// Returns 0, or -1 with `errno`: `EINVAL` (NULL `u`, a descriptor that is
/// no utimer timerfd, other flags, a bad timespec), `EBADF` (a descriptor
/// that is not open), `EFAULT` (`new_value` or `old_value` where no memory
/// can be: NULL `new_value`, the zero page, past the top of user space;
/// as the kernel, a bad `new_value` is found first and a bad `old_value`
/// once the timer is armed).
///
/// # Safety
/// `u` is NULL or live; `new_value` is where no memory can be (NULL
/// included) or readable; `old_value` is NULL, where no memory can be, or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn utimer_timerfd_settime(
    u: *mut utimer_t,
    fd: c_int,
    flags: c_int,
    new_value: *const libc::itimerspec,
    old_value: *mut libc::itimerspec,
) -> c_int {
    guard(-1, || {
        // SAFETY: the caller's promise.
        let u = unsafe { handle(u) }?;
        user_pointer(new_value)?;
        // SAFETY: in range: the caller promised it readable.
        let old = u.timerfd_settime(fd, flags, unsafe { &*new_value })?;
        // SAFETY: the caller's promise for `old_value`.
        unsafe { write_old(old_value, old) }?;
        Ok(0)
    })
}

/// Stores the time to timerfd `fd`'s next expiry and its interval in
/// `*curr_value` (zero: disarmed): the kernel's `timerfd_gettime()`.
///
/// Returns 0, or -1 with `errno`: `EINVAL` (NULL `u`, a descriptor that is
/// no utimer timerfd), `EBADF` (not open), `EFAULT` (`curr_value` where no
/// memory can be: NULL, the zero page, past the top of user space).
///
/// # Safety
/// `u` is NULL or live; `curr_value` is where no memory can be (NULL
/// included) or writable.
#[no_mangle]
pub unsafe extern "C" fn utimer_timerfd_gettime(
    u: *mut utimer_t,
    fd: c_int,
    curr_value: *mut libc::itimerspec,
) -> c_int {
    guard(-1, || {
        // SAFETY: the caller's promise.
        let cur = unsafe { handle(u) }?.timerfd_gettime(fd)?;
        // SAFETY: the caller's promise for `curr_value`.
        unsafe { write_out(curr_value, cur) }?;
        Ok(0)
    })
}

/// Forgets timerfd `fd` without closing the descriptor: deletes its timer
/// (no expiry is written after this returns) and frees the number in the
/// table. For a program that is about to close or replace the number
/// itself (the drop-in library's `close`, `dup2`, `dup3`).
///
/// Returns 0, or -1 with `errno`: `EINVAL` (NULL `u`, no utimer timerfd of
/// `u`), `EBADF` (not open).
///
/// # Safety
/// `u` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn utimer_timerfd_release(u: *mut utimer_t, fd: c_int) -> c_int {
    guard(-1, || {
        // SAFETY: the caller's promise.
        unsafe { handle(u) }?.timerfd_release(fd)?;
        Ok(0)
    })
}

/// Registers `newfd`, a duplicate of timerfd `oldfd` (`dup`, `dup2`,
/// `fcntl(F_DUPFD)`), as another name of its timer: the `utimer_timerfd_*`
/// calls then take it too, and the timer lives until every name is
/// released. `newfd` must not name another utimer timerfd (release it
/// first).
///
/// Returns 0, or -1 with `errno`: `EINVAL` (NULL `u`, `oldfd` is no
/// utimer timerfd, `newfd` already names one, or is negative), `EBADF`
/// (`oldfd` not open).
///
/// # Safety
/// `u` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn utimer_timerfd_dup(u: *mut utimer_t, oldfd: c_int, newfd: c_int) -> c_int {
    guard(-1, || {
        // SAFETY: the caller's promise.
        unsafe { handle(u) }?.timerfd_dup(oldfd, newfd)?;
        Ok(0)
    })
}

/// Closes timerfd `fd`: deletes its timer, then closes the descriptor (the
/// `close` of a utimer timerfd).
///
/// Returns 0, or -1 with `errno` as `utimer_timerfd_release()`, or as
/// `close()`.
///
/// # Safety
/// `u` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn utimer_timerfd_close(u: *mut utimer_t, fd: c_int) -> c_int {
    // SAFETY: the caller's promise.
    if unsafe { utimer_timerfd_release(u, fd) } != 0 {
        return -1;
    }
    // SAFETY: the descriptor was a utimer timerfd, which the program owns
    // and asked us to close.
    unsafe { libc::close(fd) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Marks `fd` as a timerfd in the table (no descriptor behind it: the
    /// numbers used here are far above any this process opens).
    fn mark(fd: c_int, on: bool) {
        let v = if on {
            pack(TimerId::from_raw(7), libc::CLOCK_MONOTONIC)
        } else {
            0
        };
        TABLE.slot(fd, true).unwrap().store(v, Ordering::Release);
    }

    fn seen(first: u32, last: u32) -> Vec<c_int> {
        let mut v = Vec::new();
        for_each_timerfd(first, last, |fd| v.push(fd));
        v
    }

    #[test]
    fn for_each_timerfd_visits_exactly_the_marked_numbers_in_range() {
        let base = (3000 * CHUNK) as c_int;
        let marked = [
            base,
            base + 1,
            base + CHUNK as c_int - 1,
            base + CHUNK as c_int,
            base + 5 * CHUNK as c_int + 3,
        ];
        for fd in marked {
            mark(fd, true);
        }
        let b = base as u32;
        assert_eq!(seen(b, u32::MAX), marked);
        assert_eq!(
            seen(b + 1, b + CHUNK as u32 - 1),
            [base + 1, base + CHUNK as c_int - 1]
        );
        assert_eq!(seen(b + 2, b + CHUNK as u32 - 2), Vec::<c_int>::new());
        assert_eq!(
            seen(b + CHUNK as u32, b + CHUNK as u32),
            [base + CHUNK as c_int]
        );
        assert_eq!(seen(b + 6 * CHUNK as u32, u32::MAX), Vec::<c_int>::new());
        // Beyond the table: nothing, and no panic.
        assert_eq!(seen((CHUNK * CHUNKS) as u32, u32::MAX), Vec::<c_int>::new());
        assert_eq!(seen(u32::MAX, u32::MAX), Vec::<c_int>::new());
        for fd in marked {
            mark(fd, false);
        }
        assert_eq!(seen(b, u32::MAX), Vec::<c_int>::new());
    }
}
