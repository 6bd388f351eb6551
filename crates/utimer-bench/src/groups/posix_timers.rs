//! POSIX timers: the lookup of a timer ID without a global lock (Eric
//! Dumazet, 2011) and the kernel's 2025 posix-timers rework, replayed on
//! utimer's user-space POSIX timers, with the calls' single-thread costs
//! and the wake-up lateness of hrtimers and sleeps beside them.
//!
//! In 2011 every `timer_gettime()` found its timer under one process-wide
//! spinlock, `idr_lock`. The patch's benchmark: 16 processes calling
//! `timer_gettime()` on a 2x4x2 (16 CPU) machine took 78.7 s before (98% of
//! the CPU time spinning in `lock_timer`) and 3.3 s after the lookup became
//! an RCU read. Five groups, all named `posix-*` so that `--filter posix-`
//! selects them together:
//!
//! * **`posix-lookup`** ([`lookup`]): `timer_gettime` throughput of N
//!   threads, utimer's lock-free lookup against a global lock and the
//!   kernel's syscall;
//! * **`posix-workload2025`** ([`workload2025`]): the benchmark of the
//!   kernel's 2025 rework: create, `timer_getoverrun`, delete;
//! * **`posix-costs`** ([`costs`]): single-thread costs, utimer vs the
//!   kernel syscall;
//! * **`posix-dropin`** ([`dropin`]): the same calls as a program makes
//!   them, through the drop-in library, vs glibc's system calls;
//! * **`posix-latency`** ([`latency`]): wake-up lateness of hrtimers and
//!   sleeps vs timerfd and tokio.
//!
//! The parts import nothing from each other: what two of them share (making
//! armed timers) lives in [`timers`].

mod costs;
mod dropin;
mod latency;
mod lookup;
mod timers;
mod workload2025;

pub(crate) use costs::run as run_costs;
pub(crate) use dropin::run as run_dropin;
pub(crate) use latency::run as run_latency;
pub(crate) use lookup::run as run_lookup;
pub(crate) use workload2025::run as run_workload2025;
