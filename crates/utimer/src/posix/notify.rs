//! How a POSIX timer tells its owner that it expired: the `sigevent`
//! choices.
//!
//! | [`Notify`] | `sigev_notify` | on expiry |
//! |---|---|---|
//! | `None` | `SIGEV_NONE` | nothing; poll with `timer_gettime` |
//! | `Callback` | `SIGEV_THREAD` | the function runs on the timer's worker (no thread per expiry, unlike glibc) |
//! | `Fd` | (timerfd) | an `eventfd` becomes readable and reads as the 8-byte expiration count |
//! | `Signal` | `SIGEV_SIGNAL`, `SIGEV_THREAD_ID` | a real signal with `si_value`, to the process or one thread |
//!
//! # Signals: queued by a worker, accepted by the program
//!
//! Signals are queued with `rt_sigqueueinfo`/`rt_tgsigqueueinfo` filled in
//! as the kernel fills a timer's: `si_code` is `SI_TIMER` (a process may
//! queue any negative code but `SI_TKILL` to itself), with `si_timerid`,
//! `si_value` and `si_overrun`, plus a tag and the timer's setting number
//! in bytes 36..48 (inside the kernel's 48-byte `kernel_siginfo`, so they
//! survive to delivery), by which [`PosixTimers::signal_accepted`]
//! recognises the signal.
//!
//! The kernel latches a timer's overrun and re-arms it when its signal is
//! *accepted* (`posixtimer_deliver_signal()`), and queues each timer's
//! signal on its own, whatever its number. User space sees an acceptance
//! only by watching the program's handlers, waits and signalfd reads. A
//! library that does (the drop-in library) tells utimer which signal
//! numbers it sees accepted ([`report_acceptance`]) and reports each
//! acceptance with [`PosixTimers::signal_accepted`]. For those numbers a
//! timer's signal is an entry of `sigqueue.rs`, rung by a doorbell signal,
//! and the kernel's semantics hold exactly:
//!
//! * every timer's signal is delivered, standard signals included: one
//!   already pending (another timer's, another source's) delays it, never
//!   drops it;
//! * `si_overrun` is every expiry since the one that queued it, up to
//!   acceptance, and `timer_getoverrun` agrees; while the signal waits,
//!   `timer_getoverrun` reports the last accepted one's;
//! * the acceptor re-arms a periodic timer at its next expiry;
//! * a signal queued before a re-arm or delete is dropped as stale
//!   (`it_signal_seq`); as on the kernel it stays pending until then;
//! * [`signal_ignored`] says which numbers the program ignores: a timer
//!   then queues nothing and counts, as the kernel parks it, and resumes
//!   when the program handles the signal again.
//!
//! # Without those reports
//!
//! For a number whose acceptance is not reported (a default action that
//! takes it unseen, a library that reports nothing):
//!
//! * A timer queues at most one signal at a time. While it is pending it
//!   counts its periods and queues nothing, looking again after a backoff
//!   that doubles from the period up to 10 ms; once the process's pending
//!   set no longer shows it, it was accepted. `si_overrun` is latched when
//!   the signal is queued; `timer_getoverrun` latches the periods since,
//!   up to the moment it is asked, once the signal is no longer pending.
//! * Whether the timer's own signal is still pending is seen through the
//!   process's pending set, so another source's pending signal of the same
//!   number holds the timer's next one back.
//! * For `SIGEV_THREAD_ID` every expiry queues a signal (a real-time
//!   signal queues each; a standard one merges).
//! * A reported number's entry whose doorbell a reader took unseen (a raw
//!   system call) is taken as accepted after two looks 10 ms apart.
//!
//! Callback and fd notifications have no such window: a callback has run
//! or not, and `timer_settime` resets the fd's count as `timerfd_settime`
//! does. The fd of a `Notify::Fd` timer is an `eventfd` opened
//! `O_NONBLOCK | O_CLOEXEC`, owned by the timer and closed by
//! `timer_delete`. One given to [`PosixTimers::timerfd_create`] may be a
//! duplicate of a blocking one: settime reads it only when an expiry was
//! written since the last read, and then without blocking.
//!
//! [`PosixTimers::signal_accepted`]: crate::PosixTimers::signal_accepted
//! [`PosixTimers::timerfd_create`]: crate::PosixTimers::timerfd_create

use crate::TimerError;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use super::{SignalSet, TimerId};

/// A callback notification: runs on the timer's worker with the timer's
/// ID (and whatever it captured: the `sigev_value`).
pub type NotifyFn = Arc<dyn Fn(TimerId) + Send + Sync>;

/// How a POSIX timer notifies its expiry (`struct sigevent`).
#[derive(Clone)]
pub enum Notify {
    /// `SIGEV_NONE`: nothing; `timer_gettime` tells the state.
    None,
    /// `SIGEV_THREAD`: run the function on the timer's worker.
    Callback(NotifyFn),
    /// A file descriptor ([`PosixTimers::timer_fd`](crate::PosixTimers::timer_fd))
    /// that becomes readable on expiry and reads as the number of
    /// expirations since the last read, as a native-endian `u64` (timerfd
    /// semantics), for `epoll` loops.
    Fd,
    /// `SIGEV_SIGNAL` (`thread: None`: the process) or `SIGEV_THREAD_ID`
    /// (`thread: Some(tid)`): queue signal `signo` with `si_value`.
    Signal {
        /// The signal, `1..=SIGRTMAX`.
        signo: i32,
        /// `si_value` (`sival_ptr`/`sival_int`).
        value: usize,
        /// The target thread's kernel TID (`gettid()`), or the process. It
        /// must name a live thread of this process, as the kernel's
        /// `good_sigevent()` demands: any other ID, another process's
        /// threads included, is [`TimerError::InvalidArgument`].
        thread: Option<i32>,
    },
}

impl std::fmt::Debug for Notify {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Notify::None => f.write_str("None"),
            Notify::Callback(_) => f.write_str("Callback"),
            Notify::Fd => f.write_str("Fd"),
            Notify::Signal {
                signo,
                value,
                thread,
            } => f
                .debug_struct("Signal")
                .field("signo", signo)
                .field("value", value)
                .field("thread", thread)
                .finish(),
        }
    }
}

impl Notify {
    /// `SIGEV_SIGNAL` with `SIGALRM` and the timer ID as `si_value`: what a
    /// NULL `sigevent` means (POSIX).
    pub fn default_for(id: TimerId) -> Notify {
        Notify::Signal {
            signo: libc::SIGALRM,
            value: id.raw() as usize,
            thread: None,
        }
    }

    /// Checks the arguments (`EINVAL` for a signal out of range).
    /// The thread that waits for this timer's notifications, for the
    /// workers' real-time priority: the one a `SIGEV_THREAD_ID` signal
    /// names, else the creating thread (0); `None` for `SIGEV_NONE`, which
    /// never fires.
    pub(crate) fn served_thread(&self) -> Option<i32> {
        match self {
            Notify::None => None,
            Notify::Signal {
                thread: Some(t), ..
            } => Some(*t),
            _ => Some(0),
        }
    }

    pub(crate) fn check(&self) -> Result<(), TimerError> {
        match self {
            Notify::Signal { signo, thread, .. } => {
                if !(1..=libc::SIGRTMAX()).contains(signo)
                    || thread.is_some_and(|t| !is_own_thread(t))
                {
                    return Err(TimerError::InvalidArgument);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// Whether `tid` names a live thread of this process: `tgkill(getpid(),
/// tid, 0)` sends nothing and fails with `ESRCH` for any other ID, the
/// check the kernel's `good_sigevent()` makes for `SIGEV_THREAD_ID`.
fn is_own_thread(tid: i32) -> bool {
    if tid <= 0 {
        return false;
    }
    // SAFETY: tgkill with signal 0 takes three integers and only checks
    // that the thread exists in the thread group.
    unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, 0) == 0 }
}

/// Opens the timer's eventfd.
pub(crate) fn open_fd() -> Result<OwnedFd, TimerError> {
    // SAFETY: eventfd takes two integers and returns a new descriptor or -1.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(TimerError::Os(
            std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        ));
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Adds `n` expirations to the fd's count.
pub(crate) fn fd_add(fd: &OwnedFd, n: u64) {
    let buf = n.max(1).to_ne_bytes();
    // SAFETY: writes 8 bytes from a live buffer to an fd we own. An eventfd
    // write fails only when the count would overflow (EAGAIN): dropped.
    unsafe {
        libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), 8);
    }
}

/// Resets the fd's count (settime, as `timerfd_settime`). The fd may be a
/// duplicate of a blocking eventfd that a program reads (a timerfd of the
/// drop-in library): a read of a zero count would then block, so a blocking
/// one is read only when it is readable, and non-blocking for that one read.
pub(crate) fn fd_drain(fd: &OwnedFd) {
    let fd = fd.as_raw_fd();
    let mut buf = [0u8; 8];
    // SAFETY: fcntl and poll take an fd we own and a live pollfd; read
    // writes at most 8 bytes into a live buffer, from a descriptor made
    // non-blocking first.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 {
            return;
        }
        if flags & libc::O_NONBLOCK != 0 {
            libc::read(fd, buf.as_mut_ptr().cast(), 8);
            return;
        }
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        if libc::poll(&mut pfd, 1, 0) == 1 && pfd.revents & libc::POLLIN != 0 {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
            libc::read(fd, buf.as_mut_ptr().cast(), 8);
            libc::fcntl(fd, libc::F_SETFL, flags);
        }
    }
}

/// The raw fd, for [`PosixTimers::timer_fd`](crate::PosixTimers::timer_fd).
pub(crate) fn raw(fd: &OwnedFd) -> RawFd {
    fd.as_raw_fd()
}

/// `si_code` of a POSIX timer's signal (the kernel's `SI_TIMER`).
const SI_TIMER: i32 = -2;

/// `siginfo_t` of a timer's signal as the kernel lays it out for
/// `SI_TIMER` on Linux: the header, then the `_timer` member of the union
/// (`si_timerid`, `si_overrun`, `si_value`, and the kernel's private word,
/// which stays 0), padded to the kernel's 128 bytes.
#[repr(C)]
#[derive(Copy, Clone)]
struct TimerInfo {
    signo: i32,
    errno: i32,
    code: i32,
    _pad: i32,
    timerid: i32,
    overrun: i32,
    value: usize,
    sys_private: i32,
    /// [`UTIMER_SIGNAL`]: a utimer timer's signal.
    tag: i32,
    /// The timer's setting when it was queued (`signal_accepted` drops a
    /// stale one). Still inside the kernel's 48-byte `kernel_siginfo`, so
    /// the kernel keeps it from `rt_sigqueueinfo` to delivery.
    seq: u64,
    _rest: [u64; 10],
}

/// Tag of a utimer timer's signal (`"utmr"`), at byte 36 of its
/// `siginfo_t`, after `si_sys_private`.
pub(crate) const UTIMER_SIGNAL: i32 = 0x7574_6d72;

const _: () = assert!(std::mem::size_of::<TimerInfo>() == 128);

/// Signals whose acceptance the program's hooks report.
static REPORTED: SignalSet = SignalSet::new();

/// Says whether every acceptance of signal `signo` will be reported with
/// [`signal_accepted`](crate::PosixTimers::signal_accepted) (by a handler
/// and `sigwaitinfo` wrapper, as the drop-in library installs): then a
/// `SIGEV_THREAD_ID` timer, whose target's pending set cannot be seen,
/// waits for that report before it queues its next signal, as the kernel's
/// does. Process-wide; signals outside `1..=64` are ignored.
pub fn report_acceptance(signo: i32, reported: bool) {
    if REPORTED.set(signo, reported) && !reported {
        super::sigqueue::release_all(signo, false);
    }
}

/// Signals the program ignores.
static IGNORED: SignalSet = SignalSet::new();

/// Says whether the program ignores signal `signo` (`SIG_IGN`, or a
/// default action that ignores it), for a library that sees its
/// `sigaction` calls (the drop-in library): while it does, a timer of that
/// signal queues nothing (the kernel would discard it) and counts its
/// expirations, which become the overrun of the signal it queues once the
/// program handles the signal again, as the kernel's timers park and
/// resume (`posixtimer_sig_ignore()`, `posixtimer_sig_unignore()`).
/// Process-wide; signals outside `1..=64` are ignored.
pub fn signal_ignored(signo: i32, ignored: bool) {
    IGNORED.set(signo, ignored);
    if ignored && (1..=64).contains(&signo) {
        super::sigqueue::release_all(signo, true);
    }
}

/// Whether the program ignores `signo`.
pub(crate) fn ignored(signo: i32) -> bool {
    IGNORED.contains(signo)
}

/// Whether acceptance of `signo` is reported.
pub(crate) fn acceptance_reported(signo: i32) -> bool {
    REPORTED.contains(signo)
}

/// A utimer timer's signal, as its `siginfo_t` carries it.
pub(crate) struct Queued {
    /// `si_timerid`.
    pub(crate) id: i32,
    /// The setting and number it was queued under (`signal_tag`).
    pub(crate) tag: u64,
    /// `si_overrun` as queued.
    pub(crate) overrun: i32,
    /// 0 for a timer's own signal; a doorbell's list
    /// (`sigqueue::DOORBELL_PROCESS`, `DOORBELL_THREAD`).
    pub(crate) doorbell: i32,
}

/// What a utimer timer's signal carries, from its `siginfo_t`; `None` for
/// any other signal.
pub(crate) fn utimer_signal(info: &libc::siginfo_t) -> Option<Queued> {
    // SAFETY: `TimerInfo` is the kernel's 128-byte siginfo_t layout for
    // SI_TIMER; every bit pattern of its integers is valid.
    let t = unsafe { &*(info as *const libc::siginfo_t).cast::<TimerInfo>() };
    (t.code == SI_TIMER && t.tag == UTIMER_SIGNAL).then_some(Queued {
        id: t.timerid,
        tag: t.seq,
        overrun: t.overrun,
        doorbell: t.errno,
    })
}

/// A `signalfd` record as the `siginfo_t` it was read from, as far as a
/// timer's signal needs (`signo`, `si_errno`, `si_code`, `si_timerid`,
/// `si_overrun`, `si_value`), for a library that reads the program's
/// signalfds on its behalf and reports their timer signals with
/// [`PosixTimers::signal_accepted`](crate::PosixTimers::signal_accepted);
/// [`signalfd_update`] copies the verdict back. The kernel's
/// `signalfd_copyinfo()` keeps those fields of an `SI_TIMER` signal.
#[doc(alias = "signalfd_copyinfo")]
pub fn siginfo_of_signalfd(rec: &libc::signalfd_siginfo) -> libc::siginfo_t {
    let t = TimerInfo {
        signo: rec.ssi_signo as i32,
        errno: rec.ssi_errno,
        code: rec.ssi_code,
        _pad: 0,
        timerid: rec.ssi_tid as i32,
        overrun: rec.ssi_overrun as i32,
        value: rec.ssi_ptr as usize,
        sys_private: 0,
        // A doorbell is known by `si_errno`, which the record keeps; the
        // tag is not kept, and stands for it.
        tag: if matches!(
            rec.ssi_errno,
            super::sigqueue::DOORBELL_PROCESS | super::sigqueue::DOORBELL_THREAD
        ) {
            UTIMER_SIGNAL
        } else {
            0
        },
        seq: 0,
        _rest: [0; 10],
    };
    // SAFETY: `TimerInfo` is 128 bytes laid out as the kernel's siginfo_t
    // for SI_TIMER, and every bit pattern is a valid siginfo_t.
    unsafe { std::mem::transmute::<TimerInfo, libc::siginfo_t>(t) }
}

/// Copies what [`PosixTimers::signal_accepted`](crate::PosixTimers::signal_accepted)
/// wrote into `info` (made by [`siginfo_of_signalfd`]) back into the
/// `signalfd` record: `ssi_errno`, `ssi_tid`, `ssi_overrun`, `ssi_ptr` and
/// `ssi_int`.
pub fn signalfd_update(info: &libc::siginfo_t, rec: &mut libc::signalfd_siginfo) {
    // SAFETY: as in `utimer_signal`.
    let t = unsafe { &*(info as *const libc::siginfo_t).cast::<TimerInfo>() };
    rec.ssi_errno = t.errno;
    rec.ssi_tid = t.timerid as u32;
    rec.ssi_overrun = t.overrun as u32;
    rec.ssi_ptr = t.value as u64;
    rec.ssi_int = t.value as i32;
}

/// Sets `si_overrun` of a timer's signal (the overrun as of its delivery).
pub(crate) fn set_overrun(info: &mut libc::siginfo_t, overrun: i32) {
    // SAFETY: as in `utimer_signal`.
    let t = unsafe { &mut *(info as *mut libc::siginfo_t).cast::<TimerInfo>() };
    t.overrun = overrun;
}

/// Makes an accepted doorbell the signal of the timer it served, as the
/// kernel fills a timer's: `si_timerid`, `si_value`, `si_overrun`, and
/// `si_errno` 0.
pub(crate) fn set_timer(info: &mut libc::siginfo_t, id: i32, value: usize, overrun: i32) {
    // SAFETY: as in `utimer_signal`.
    let t = unsafe { &mut *(info as *mut libc::siginfo_t).cast::<TimerInfo>() };
    t.errno = 0;
    t.timerid = id;
    t.value = value;
    t.overrun = overrun;
}

/// Whether the calling thread blocks `signo`.
pub(crate) fn blocked_here(signo: i32) -> bool {
    // SAFETY: a zeroed sigset_t is a valid set; pthread_sigmask with a NULL
    // new set only writes the current mask into it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut set) == 0
            && libc::sigismember(&set, signo) == 1
    }
}

/// The calling thread's kernel ID.
pub(crate) fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// Whether `signo` is pending for the process (or this thread).
pub(crate) fn signal_pending(signo: i32) -> bool {
    // SAFETY: a zeroed sigset_t is a valid (empty) set; sigpending writes
    // it; sigismember reads it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigpending(&mut set) == 0 && libc::sigismember(&set, signo) == 1
    }
}

/// Queues timer `timerid`'s signal `signo` to the process or to one of its
/// threads, as the kernel's `posix_timer_queue_signal()` fills it:
/// `si_code = SI_TIMER`, `si_timerid`, `si_overrun` and `si_value`;
/// `doorbell` (in `si_errno`) is 0 for the timer's own signal, else the
/// list of the `sigqueue.rs` entry it rings for.
pub(crate) fn send_signal(
    signo: i32,
    value: usize,
    thread: Option<i32>,
    timerid: i32,
    overrun: i32,
    seq: u64,
    doorbell: i32,
) {
    let info = TimerInfo {
        signo,
        errno: doorbell,
        code: SI_TIMER,
        _pad: 0,
        timerid,
        overrun,
        value,
        sys_private: 0,
        tag: UTIMER_SIGNAL,
        seq,
        _rest: [0; 10],
    };
    if !hold(thread, &info) {
        queue(thread, &info);
    }
}

/// This process's ID, with no system call after the first: kept in a
/// page that the kernel wipes in a `fork` child (`MADV_WIPEONFORK`, Linux
/// 4.14), so a child reads its own however it was forked (a raw `fork` or
/// `clone` runs no `pthread_atfork` handler). Without such a page,
/// `getpid()` each time. A `vfork` child shares the page, and may only
/// `exec` or `_exit` (it queues no timer signal). Signal-safe: the page is
/// made without a lock, a racing maker's page given back.
fn own_pid() -> libc::pid_t {
    use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
    use std::sync::atomic::{AtomicI32, AtomicPtr};
    /// The page (null: not made yet; `NO_PAGE`: it cannot be).
    static PAGE: AtomicPtr<AtomicI32> = AtomicPtr::new(std::ptr::null_mut());
    const NO_PAGE: *mut AtomicI32 = std::ptr::dangling_mut();
    let mut page = PAGE.load(Acquire);
    if page.is_null() {
        let made = make_pid_page();
        page = match PAGE.compare_exchange(std::ptr::null_mut(), made, AcqRel, Acquire) {
            Ok(_) => made,
            Err(theirs) => {
                if made != NO_PAGE {
                    // SAFETY: our own page, which nothing else has seen.
                    unsafe { libc::munmap(made.cast(), PID_PAGE) };
                }
                theirs
            }
        };
    }
    if page != NO_PAGE {
        // SAFETY: a page that lives until exit, mapped readable and
        // writable, aligned for an AtomicI32 (a fork child's is zero).
        let slot = unsafe { &*page };
        let pid = slot.load(Relaxed);
        if pid != 0 {
            return pid;
        }
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() };
        slot.store(pid, Relaxed);
        return pid;
    }
    // SAFETY: getpid has no preconditions.
    unsafe { libc::getpid() }
}

/// The size of [`own_pid`]'s page.
const PID_PAGE: usize = 4096;

/// Maps [`own_pid`]'s page, wiped in a fork child; `dangling` if it
/// cannot be had.
fn make_pid_page() -> *mut std::sync::atomic::AtomicI32 {
    // SAFETY: a fresh anonymous private mapping (zeroed) that nothing else
    // refers to; madvise and munmap act on it alone.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            PID_PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return std::ptr::dangling_mut();
        }
        if libc::madvise(p, PID_PAGE, libc::MADV_WIPEONFORK) != 0 {
            libc::munmap(p, PID_PAGE);
            return std::ptr::dangling_mut();
        }
        p.cast()
    }
}

/// Queues one timer signal (`send_signal`).
fn queue(thread: Option<i32>, info: &TimerInfo) {
    let signo = info.signo;
    let pid = own_pid();
    // SAFETY: the kernel reads a 128-byte siginfo from a live struct laid
    // out as it expects for SI_TIMER. A process may queue a signal with any
    // negative si_code but SI_TKILL to itself (`rt_sigqueueinfo(2)`); a zero
    // private word keeps the kernel from taking it for one of its own
    // timers' signals. A failure (the thread exited) drops the signal.
    unsafe {
        match thread {
            None => libc::syscall(
                libc::SYS_rt_sigqueueinfo,
                pid,
                signo,
                info as *const TimerInfo,
            ),
            Some(tid) => libc::syscall(
                libc::SYS_rt_tgsigqueueinfo,
                pid,
                tid,
                signo,
                info as *const TimerInfo,
            ),
        };
    }
}

/// Signals held back per thread (`hold_signals`); more are queued at once.
const HELD: usize = 8;

/// The timer signals a thread holds back while it runs expired timers
/// ([`hold_signals`]).
struct Held {
    /// Holding now.
    on: bool,
    len: usize,
    sends: [Option<(Option<i32>, TimerInfo)>; HELD],
}

thread_local! {
    static HOLD: std::cell::RefCell<Held> = const {
        std::cell::RefCell::new(Held {
            on: false,
            len: 0,
            sends: [None; HELD],
        })
    };
}

/// Keeps `info` for [`HeldSignals::queue`] if this thread holds its
/// signals back and has room; `false`: queue it now.
fn hold(thread: Option<i32>, info: &TimerInfo) -> bool {
    HOLD.try_with(|h| {
        let Ok(mut h) = h.try_borrow_mut() else {
            return false;
        };
        // A handler's own call queues at once (its caller may expect the
        // signal before it returns).
        if !h.on || h.len == HELD || super::signal_context() {
            return false;
        }
        let n = h.len;
        h.sends[n] = Some((thread, *info));
        h.len = n + 1;
        true
    })
    .unwrap_or(false)
}

/// Runs `f` holding back the timer signals it queues on this thread, and
/// returns them with its result: queue them ([`HeldSignals::queue`]) once
/// the caller can take a signal handler.
///
/// A thread that serves the hrtimers (`TimerSystem::serve`) runs their
/// callbacks where a handler must not run (it holds the library's state),
/// and the signal it queues to its own process is then delivered to
/// it. Holding the signals back until the run is over lets the kernel
/// deliver them on the way out of the very system call that queues them,
/// where the kernel's own timer interrupt would, with no signal mask to
/// set and restore around the run. Up to eight are held; more are queued
/// at once. There is no kernel counterpart: the kernel's expiry runs
/// cannot be interrupted by a handler.
pub fn hold_signals<R>(f: impl FnOnce() -> R) -> (R, HeldSignals) {
    struct Off;
    impl Drop for Off {
        fn drop(&mut self) {
            let _ = HOLD.try_with(|h| {
                if let Ok(mut h) = h.try_borrow_mut() {
                    h.on = false;
                }
            });
        }
    }
    let _ = HOLD.try_with(|h| {
        if let Ok(mut h) = h.try_borrow_mut() {
            h.on = true;
        }
    });
    let off = Off;
    let r = f();
    drop(off);
    (r, HeldSignals(()))
}

/// The timer signals [`hold_signals`] held back, queued when this drops
/// (or by [`queue`](Self::queue)).
#[must_use = "held signals are queued when this drops"]
pub struct HeldSignals(());

impl HeldSignals {
    /// Queues the held signals now, in the order they were held.
    pub fn queue(self) {
        drop(self);
    }
}

impl Drop for HeldSignals {
    /// A handler of the program's may run on the way out of each system
    /// call, and may leave by `siglongjmp`: the signals are taken out of
    /// the hold first, and several are queued with every signal blocked,
    /// so none is left behind.
    fn drop(&mut self) {
        /// What the hold had: one signal is taken out alone (the usual
        /// case, without copying the whole hold).
        // Large only in the rare variant, on the stack for this drop; a box
        // would allocate on the way to queueing a signal.
        #[allow(clippy::large_enum_variant)]
        enum Taken {
            Nothing,
            One(Option<i32>, TimerInfo),
            Many(usize, [Option<(Option<i32>, TimerInfo)>; HELD]),
        }
        let taken = HOLD
            .try_with(|h| {
                let Ok(mut h) = h.try_borrow_mut() else {
                    return Taken::Nothing;
                };
                match std::mem::take(&mut h.len) {
                    0 => Taken::Nothing,
                    1 => h.sends[0]
                        .take()
                        .map_or(Taken::Nothing, |(thread, info)| Taken::One(thread, info)),
                    n => Taken::Many(n, std::mem::replace(&mut h.sends, [None; HELD])),
                }
            })
            .unwrap_or(Taken::Nothing);
        match taken {
            Taken::Nothing => {}
            Taken::One(thread, info) => queue(thread, &info),
            Taken::Many(n, sends) => {
                // SAFETY: zeroed sigset_t values are valid; the mask calls
                // write only the sets given.
                unsafe {
                    let mut all: libc::sigset_t = std::mem::zeroed();
                    let mut old: libc::sigset_t = std::mem::zeroed();
                    libc::sigfillset(&mut all);
                    libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
                    for (thread, info) in sends[..n].iter().flatten() {
                        queue(*thread, info);
                    }
                    libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
                }
            }
        }
    }
}

impl std::fmt::Debug for HeldSignals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldSignals").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::posix::sigqueue::DOORBELL_PROCESS;

    fn record(errno: i32, code: i32) -> libc::signalfd_siginfo {
        // SAFETY: every field of signalfd_siginfo is an integer.
        let mut rec: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
        rec.ssi_signo = 10;
        rec.ssi_errno = errno;
        rec.ssi_code = code;
        rec.ssi_tid = 7;
        rec.ssi_overrun = 3;
        rec.ssi_ptr = 0x55;
        rec.ssi_int = 0x55;
        rec
    }

    #[test]
    fn a_signalfd_doorbell_reads_as_one_and_takes_the_timers_fields_back() {
        let mut rec = record(DOORBELL_PROCESS, SI_TIMER);
        let mut info = siginfo_of_signalfd(&rec);
        let q = utimer_signal(&info).expect("a doorbell is a utimer signal");
        assert_eq!((q.id, q.overrun, q.doorbell), (7, 3, DOORBELL_PROCESS));
        set_timer(&mut info, 9, 0x1234, 41);
        signalfd_update(&info, &mut rec);
        assert_eq!(rec.ssi_errno, 0);
        assert_eq!((rec.ssi_tid, rec.ssi_overrun), (9, 41));
        assert_eq!((rec.ssi_ptr, rec.ssi_int), (0x1234, 0x1234));
        assert_eq!((rec.ssi_signo, rec.ssi_code), (10, SI_TIMER));
    }

    #[test]
    fn other_signalfd_records_are_not_utimer_signals() {
        // A kernel timer's signal (no tag in si_errno), and another code.
        assert!(utimer_signal(&siginfo_of_signalfd(&record(0, SI_TIMER))).is_none());
        assert!(utimer_signal(&siginfo_of_signalfd(&record(DOORBELL_PROCESS, -1))).is_none());
    }
}
