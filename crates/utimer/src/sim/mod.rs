//! A deterministic simulator of the pull model: the real hierarchy, bases,
//! idle computation, remote expiry and stall monitor, driven by virtual
//! time (a manual clock) and virtual workers on one thread.
//!
//! Each simulated tick, in a seeded random order, every virtual worker
//! acts: a busy one reaches its tick point (its expiry run, which expires
//! idle workers' movable timers where it is the migrator), arms and cancels
//! timers, and may go idle or stall (skip its tick points for a while); an
//! idle one sleeps until the tick its idle computation returned or until
//! its waker is called, and jobs arrive now and then to wake idle workers.
//! Other arms come "from outside" onto idle workers' bases, and now and
//! then a worker is taken offline (its timers move) or brought back. The monitor
//! runs when its round asked for the tick, or when it was woken.
//!
//! After every tick the simulator checks:
//!
//! * the hierarchy: each group's active mask and migrator agree with its
//!   children ([`Metrics::check_hierarchy`](crate::Metrics::check_hierarchy));
//! * each timer fires at most once, never before its expiry, and not later
//!   than one tick after its bucket's expiry (its granularity), or the stall
//!   bound plus three ticks when a worker was stalled around then;
//! * an idle worker wakes from its own sleep only for its pinned timers or
//!   as the last worker to go idle, and its waker is called only for a
//!   pinned timer armed on it or while no worker is active.
//!
//! At the end every worker becomes busy until every timer not cancelled
//! has fired: exactly once. A failure names the seed, the tick and what
//! broke. `utimer sim` runs it from the command line; `tests/sim.rs` runs
//! fixed seeds and one random seed in CI. With `UTIMER_SIM_TRACE` set in
//! the environment, every step, arm, firing and hot-plug is printed, and a
//! failure dumps the hierarchy.
//!
//! `world.rs` holds the simulated world and its checks.

mod world;

use std::fmt;
use world::Sim;

/// What to simulate.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Virtual workers.
    pub workers: usize,
    /// NUMA nodes they are spread over.
    pub nodes: usize,
    /// Seed of every random choice.
    pub seed: u64,
    /// Simulated ticks (1 ms each) before the final drain.
    pub ticks: u64,
    /// Ticks a busy worker may miss before it counts as stalled.
    pub stall_bound: u64,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            workers: 64,
            nodes: 1,
            seed: 1,
            ticks: 2_000,
            stall_bound: 2,
        }
    }
}

/// Mean and maximum of a per-operation count.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct Spread {
    /// Mean.
    pub mean: f64,
    /// Maximum.
    pub max: u64,
}

#[derive(Default)]
pub(crate) struct Tally {
    sum: u64,
    n: u64,
    max: u64,
}

impl Tally {
    pub(crate) fn add(&mut self, v: u64) {
        self.sum += v;
        self.n += 1;
        self.max = self.max.max(v);
    }
    pub(crate) fn spread(&self) -> Spread {
        Spread {
            mean: if self.n == 0 {
                0.0
            } else {
                self.sum as f64 / self.n as f64
            },
            max: self.max,
        }
    }
}

/// What a run measured.
#[derive(Clone, Debug, Default)]
pub struct SimReport {
    /// Workers simulated.
    pub workers: usize,
    /// Levels of the hierarchy.
    pub levels: u8,
    /// Compare-and-swaps per idle entry.
    pub idle_entry_cas: Spread,
    /// Group locks per idle entry.
    pub idle_entry_locks: Spread,
    /// Compare-and-swaps per idle exit.
    pub idle_exit_cas: Spread,
    /// Group locks per idle exit (always 0: going active is lock-free).
    pub idle_exit_locks: Spread,
    /// Idle entries simulated.
    pub idle_entries: u64,
    /// Times an idle worker woke for a timer (its own sleep ending, or its
    /// waker called), per simulated second, over all workers.
    pub timer_wakeups_per_sec: f64,
    /// Timers armed and fired.
    pub timers_armed: u64,
    /// Timers that fired.
    pub timers_fired: u64,
    /// Remote expiries (base runs on behalf of idle or stalled workers).
    pub remote_expiries: u64,
    /// Stalls the monitor found.
    pub stalls: u64,
    /// Worst lateness of a movable timer, in ticks after its bucket's
    /// expiry.
    pub max_late_global: u64,
    /// Workers taken offline or brought back online.
    pub hotplugs: u64,
}

/// A broken promise, with what reproduces it.
#[derive(Clone, Debug)]
pub struct SimFailure {
    /// The run's seed.
    pub seed: u64,
    /// The tick at which the check failed.
    pub tick: u64,
    /// What broke.
    pub what: String,
}

impl fmt::Display for SimFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seed {} tick {}: {}", self.seed, self.tick, self.what)
    }
}

impl std::error::Error for SimFailure {}

/// SplitMix64: small, seeded, good enough for schedules.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub(crate) fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }
}

/// Runs one simulation.
///
/// # Errors
/// The first broken promise.
pub fn run(cfg: &SimConfig) -> Result<SimReport, SimFailure> {
    let mut sim = Sim::new(cfg.clone());
    for _ in 0..cfg.ticks {
        sim.step(true)?;
    }
    sim.drain()?;
    Ok(sim.finish())
}

/// Runs `ticks` random steps on `workers` workers and `nodes` nodes from
/// `seed`, with the default stall bound.
///
/// # Errors
/// As [`run`].
pub fn run_seed(
    workers: usize,
    nodes: usize,
    seed: u64,
    ticks: u64,
) -> Result<SimReport, SimFailure> {
    run(&SimConfig {
        workers,
        nodes,
        seed,
        ticks,
        ..SimConfig::default()
    })
}
