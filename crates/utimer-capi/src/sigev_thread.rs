//! `SIGEV_THREAD` as glibc runs it: every expiry's notification function
//! on a new detached thread, so that a slow function never delays another
//! timer (on a utimer worker it would hold back every timer of that
//! worker for as long as it runs).
//!
//! * The thread is made with the attributes given in
//!   `sigev_notify_attributes`, copied at `timer_create` as glibc copies
//!   them (the caller may destroy its `pthread_attr_t` afterwards): stack
//!   and guard size, scheduling policy, priority and inheritance, and CPU
//!   affinity (the scope is always the system's on Linux); it is always
//!   detached. A stack *address* set with
//!   `pthread_attr_setstack` is not copied, since two notifications may run
//!   at once and cannot share one stack: each thread gets a stack of that
//!   size of its own.
//! * It starts with every signal blocked, as glibc's notification threads
//!   (glibc's own internal signals aside, which its `pthread_sigmask` never
//!   blocks), whatever the mask of the thread that called `timer_create`:
//!   a signal sent to the process never lands on it. The mask is set on the
//!   thread that makes it, around `pthread_create`, so the new thread
//!   inherits it and no signal can land before the function runs.
//! * When no thread can be made (`EAGAIN`: a thread limit), the function
//!   runs on the calling thread (the worker) rather than never, with every
//!   signal blocked too: late for the other timers, but not lost.

use crate::ffi::Errno;
use std::mem::MaybeUninit;
use std::os::raw::c_void;

/// A notification function of `struct sigevent`.
pub(crate) type NotifyFn = unsafe extern "C" fn(libc::sigval);

/// What a notification thread needs: its attributes.
pub(crate) struct Spawner {
    /// Initialized by `pthread_attr_init`, destroyed in `Drop`; only ever
    /// read (by `pthread_create`) after `new` returns.
    attr: Box<libc::pthread_attr_t>,
}

// SAFETY: after `new`, the attributes are only read:
// `pthread_create` takes the attributes by const pointer and may be called
// from several threads at once with the same ones.
unsafe impl Send for Spawner {}
// SAFETY: as above.
unsafe impl Sync for Spawner {}

impl Drop for Spawner {
    fn drop(&mut self) {
        // SAFETY: initialized in `new`, destroyed once, here.
        unsafe { libc::pthread_attr_destroy(&mut *self.attr) };
    }
}

/// `Err(e)` for a nonzero pthread result.
fn check(r: libc::c_int) -> Result<(), Errno> {
    if r == 0 {
        Ok(())
    } else {
        Err(r)
    }
}

impl Spawner {
    /// Copies `from` (NULL: the defaults) into attributes of its own, made
    /// detached.
    ///
    /// # Errors
    /// `EINVAL` when `from` holds a value the new attributes refuse.
    ///
    /// # Safety
    /// `from` is NULL or points to initialized `pthread_attr_t`.
    pub(crate) unsafe fn new(from: *const libc::pthread_attr_t) -> Result<Spawner, Errno> {
        // SAFETY: plain C data, for which all zeroes is valid storage;
        // pthread_attr_init fills it below.
        let mut attr: Box<libc::pthread_attr_t> = unsafe { Box::new(std::mem::zeroed()) };
        // SAFETY: initializes the attributes in place.
        check(unsafe { libc::pthread_attr_init(&mut *attr) })?;
        let mut s = Spawner { attr };
        if !from.is_null() {
            // SAFETY: the caller's promise for `from`; `s.attr` is ours.
            unsafe { s.copy_from(from) }?;
        }
        // SAFETY: `s.attr` is initialized.
        check(unsafe {
            libc::pthread_attr_setdetachstate(&mut *s.attr, libc::PTHREAD_CREATE_DETACHED)
        })?;
        Ok(s)
    }

    /// Copies every attribute but the detach state, the scope (Linux has one)
    /// and the stack address.
    ///
    /// # Safety
    /// `from` points to initialized attributes.
    unsafe fn copy_from(&mut self, from: *const libc::pthread_attr_t) -> Result<(), Errno> {
        let to: *mut libc::pthread_attr_t = &mut *self.attr;
        // SAFETY: each call below reads `from`, initialized (the caller's
        // promise), or writes `to`, ours, through live local out-pointers;
        // the zeroed `sched_param` and `cpu_set_t` are plain integers.
        unsafe {
            let mut size = 0;
            if libc::pthread_attr_getstacksize(from, &mut size) == 0 {
                check(libc::pthread_attr_setstacksize(to, size))?;
            }
            if libc::pthread_attr_getguardsize(from, &mut size) == 0 {
                check(libc::pthread_attr_setguardsize(to, size))?;
            }
            let mut v = 0;
            if libc::pthread_attr_getinheritsched(from, &mut v) == 0 {
                check(libc::pthread_attr_setinheritsched(to, v))?;
            }
            if libc::pthread_attr_getschedpolicy(from, &mut v) == 0 {
                check(libc::pthread_attr_setschedpolicy(to, v))?;
            }
            let mut param = MaybeUninit::<libc::sched_param>::zeroed().assume_init();
            if libc::pthread_attr_getschedparam(from, &mut param) == 0 {
                check(libc::pthread_attr_setschedparam(to, &param))?;
            }
            let mut cpus = MaybeUninit::<libc::cpu_set_t>::zeroed().assume_init();
            let n = std::mem::size_of::<libc::cpu_set_t>();
            if libc::pthread_attr_getaffinity_np(from, n, &mut cpus) == 0
                && libc::CPU_COUNT(&cpus) > 0
            {
                check(libc::pthread_attr_setaffinity_np(to, n, &cpus))?;
            }
        }
        Ok(())
    }

    /// Runs `f(value)` on a new thread that starts with every signal
    /// blocked; on the calling thread, with every signal blocked, if none
    /// can be made.
    pub(crate) fn notify(&self, f: NotifyFn, value: usize) {
        let job = Box::into_raw(Box::new(Job { f, value }));
        // The new thread inherits this thread's mask: block everything
        // first (a no-op on a worker, whose signals are all blocked), so no
        // signal can reach it before the program's function runs.
        let saved = block_all();
        let mut thread = MaybeUninit::<libc::pthread_t>::uninit();
        // SAFETY: the attributes are initialized and only read; `job` is
        // handed to the new thread, which owns it from here.
        let r =
            unsafe { libc::pthread_create(thread.as_mut_ptr(), &*self.attr, start, job.cast()) };
        if r != 0 {
            // SAFETY: no thread took `job`: it is still ours.
            let job = unsafe { Box::from_raw(job) };
            // SAFETY: the function and its value are the C caller's, who
            // promised them callable from any thread.
            unsafe { (job.f)(sigval(job.value)) };
        }
        restore(saved);
    }
}

/// Blocks every signal in the calling thread (glibc's `pthread_sigmask`
/// leaves out its internal ones, as in its own notification threads);
/// returns the mask it had.
fn block_all() -> libc::sigset_t {
    // SAFETY: zeroed sigset_t values are valid empty sets; sigfillset and
    // pthread_sigmask only write the sets they are given, and cannot fail
    // with a valid `how` and valid sets.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        old
    }
}

/// Puts back the mask `block_all` returned.
fn restore(old: libc::sigset_t) {
    // SAFETY: sets this thread's mask from a live set.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
}

/// One notification, owned by the thread that runs it.
struct Job {
    f: NotifyFn,
    value: usize,
}

fn sigval(value: usize) -> libc::sigval {
    libc::sigval {
        sival_ptr: value as *mut c_void,
    }
}

/// A notification thread's start: the function, with the mask it was
/// made with (every signal blocked).
extern "C" fn start(job: *mut c_void) -> *mut c_void {
    // SAFETY: `notify` hands each thread one `Job` from `Box::into_raw`.
    let job = unsafe { Box::from_raw(job.cast::<Job>()) };
    // SAFETY: as in `notify`.
    unsafe { (job.f)(sigval(job.value)) };
    std::ptr::null_mut()
}
