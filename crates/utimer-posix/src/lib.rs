//! `libutimer_posix.so`: an unmodified program's POSIX timers and timerfds
//! on utimer.
//!
//! ```text
//! LD_PRELOAD=libutimer_posix.so ./program        # or: cc ... -lutimer_posix
//! ```
//!
//! The library exports glibc's `timer_create`, `timer_settime`,
//! `timer_gettime`, `timer_getoverrun`, `timer_delete` (at each of glibc's
//! symbol versions: `GLIBC_2.34` in libc, `GLIBC_2.3.3` in librt before
//! 2.34, and the old `GLIBC_2.2.5` ABI whose IDs are `int`s) and
//! `timerfd_create`, `timerfd_settime`, `timerfd_gettime` (`GLIBC_2.8`),
//! with glibc's signatures. A program resolves its references to them here
//! instead of in glibc, as OpenOnload and libvma accelerate sockets: same
//! binary, same semantics, no system call on the timer paths.
//!
//! # What runs where
//!
//! * One process-wide timer system (`global.rs`) starts on the first call,
//!   with one worker per CPU the process may use (`UTIMER_WORKERS=n` says
//!   otherwise). Its threads block every signal, so no program handler
//!   ever runs on them. With `UTIMER_POSIX=verbose` its start prints one
//!   line on stderr (`verbose.rs`).
//! * Whatever utimer does not implement goes to glibc, and so to the
//!   kernel, invisibly (`real.rs`): the CPU-time clocks, `CLOCK_TAI`, the
//!   `_ALARM` clocks and any clock the kernel may add; timerfd flags that
//!   utimer does not know; `TFD_TIMER_CANCEL_ON_SET`, whose timerfd is
//!   handed to the kernel's in place (same descriptor number and flags).
//!   If the system cannot start, every call goes to glibc.
//! * `timer_t` values: a utimer timer's is its ID (`0..=INT_MAX`), as
//!   glibc's is the kernel's ID; a passed-through timer's is a tagged index
//!   into the table of glibc's own `timer_t`s (`timer.rs`).
//! * `fork`: the child starts clean, as the kernel's POSIX timers are not
//!   inherited; its first call starts a system of its own. Its inherited
//!   utimer timerfds become kernel timerfds in place, with the setting
//!   read in the parent just before the `fork`: the child reads, re-arms
//!   and asks them as the kernel's, but no longer shares one timer with
//!   the parent, which keeps utimer's (`inherit.rs`). `exec`: the `exec`
//!   family is interposed, and a timerfd that the new image keeps (no
//!   `FD_CLOEXEC`) becomes a kernel timerfd in place first, so it counts
//!   on; `exec` ends everything else.
//! * Signals (`trampoline.rs`, `critical.rs`): the library interposes
//!   `sigaction`, `signal`, `bsd_signal` and `sysv_signal`. A handler that
//!   interrupts one of the library's calls on its thread runs when that
//!   call returns, as the kernel delivers a signal on the way out of a
//!   system call: the handler's own timer calls (POSIX says they are
//!   async-signal-safe) then never wait for a lock that the interrupted
//!   call holds.
//! * Scheduling (`sched.rs`): the library interposes `sched_setscheduler`,
//!   `sched_setparam`, `pthread_setschedparam` and `pthread_setschedprio`,
//!   so that the workers run at the priority of the program's highest
//!   real-time thread, where no lower thread keeps them off a CPU.
//! * Descriptors (`timerfd.rs`): `close`, `close_range`, `closefrom`,
//!   `dup2` and `dup3` are interposed so that a utimer timerfd's timer
//!   dies with its descriptor;
//!   the expirations are written through a private duplicate, so a
//!   descriptor number that the program reuses never receives one.
//! * Sleeps (`sleep.rs`): the library interposes `nanosleep`,
//!   `clock_nanosleep`, `sleep` and `usleep`. A thread that sleeps in one
//!   fires the timers itself while it sleeps (one thread at a time), as a
//!   CPU's own timer interrupt does in the kernel, and the workers sleep
//!   past them: a timer's signal to a sleeping program then costs one
//!   wake-up, as on the kernel, not two. When the thread wakes, the
//!   workers take the timers back without being woken (each sleeps on a
//!   timerfd the thread moves: `utimer::Serving`); if the thread stays
//!   away while it holds the role (a handler of the program's that
//!   blocks), they take them after a grace (`utimer::SERVE_GRACE`).
//! * Acceptance (`accept.rs`): the trampoline, the `sigwait` family and
//!   `read`/`__read_chk` of the program's signalfds report every signal
//!   they accept to utimer, which then queues each timer's signal on its
//!   own and latches its overrun at acceptance, as the kernel does
//!   (`utimer::posix`'s module docs). Every signal number is taken as
//!   reported, except one left at a default action that the kernel takes
//!   unseen (ignore, stop) and that no wait or signalfd reads.
//!
//! # Where a user-space library differs from the kernel
//!
//! Listed with each part, and gathered in `docs/using.md`: signals are
//! queued by the library's workers (`rt_sigqueueinfo`), so a reader that
//! the library does not see (a raw system call) gets a timer signal as
//! queued, and a signal left at a default action that the kernel takes
//! unseen is followed through the pending set (`utimer::posix`'s module
//! docs); a duplicate
//! of a timerfd (`dup`, `F_DUPFD`) reads its expirations but takes no
//! `timerfd_settime`; handlers installed by a raw `rt_sigaction` system
//! call bypass the deferral; the library relies on static TLS, so load it
//! with `LD_PRELOAD` or link it, not with `dlopen`. The library holds a
//! timerfd per worker and one per thread that has slept in a served sleep
//! (`TFD_CLOEXEC`, numbered from 3 up): the program's `close` of one
//! answers `EBADF` and `close_range` and `closefrom` close around them,
//! as if the numbers were free, but `dup2` or `dup3` onto one fails with
//! `EBUSY`, and a raw `close` system call takes one away (its timers then
//! fire up to a millisecond late). A served sleep is not stretched by the
//! thread's timer slack, as the kernel's is (up to 50 µs by default): it
//! ends at its time or just after, never before.

#![deny(unsafe_op_in_unsafe_fn)]
// glibc's names for glibc's types: `timer_t`.
#![allow(non_camel_case_types)]

mod accept;
mod critical;
mod exports;
mod global;
mod inherit;
mod real;
mod sched;
mod sleep;
mod timer;
mod timerfd;
mod trampoline;
mod verbose;
