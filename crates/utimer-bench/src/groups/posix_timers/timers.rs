//! Armed `SIGEV_NONE` timers, utimer's and the kernel's, for the parts that
//! poll or re-arm them, and the kernel/utimer ratio note of the cost
//! groups.

use std::time::Duration;

use utimer::{ClockId, ItimerSpec, Notify, TimerId, TimerSystem};

use crate::peers::posix::{itimerspec_periodic, Notify as KNotify, PosixTimer};

/// A setting that never expires during a run.
pub(super) const FAR: Duration = Duration::from_secs(3600);

/// Creates `n` armed `SIGEV_NONE` utimer timers.
pub(super) fn utimer_timers(sys: &TimerSystem, n: usize) -> Result<Vec<TimerId>, String> {
    (0..n)
        .map(|_| {
            let id = sys
                .posix()
                .timer_create(ClockId::Monotonic, Notify::None)
                .map_err(|e| format!("timer_create: {e}"))?;
            sys.posix()
                .timer_settime(id, false, ItimerSpec::periodic(FAR, FAR))
                .map_err(|e| format!("timer_settime: {e}"))?;
            Ok(id)
        })
        .collect()
}

/// Creates `n` armed `SIGEV_NONE` kernel timers.
pub(super) fn kernel_timers(n: usize) -> Result<Vec<PosixTimer>, String> {
    let spec = itimerspec_periodic(FAR, FAR);
    (0..n)
        .map(|_| {
            let t = PosixTimer::new(KNotify::None).map_err(|e| format!("timer_create: {e}"))?;
            t.settime(&spec)
                .map_err(|e| format!("timer_settime: {e}"))?;
            Ok(t)
        })
        .collect()
}

/// Notes the kernel/`ours` ratio of each of `cases` in `group` (from the
/// rows just recorded) against `target`.
pub(super) fn note_ratios(
    r: &mut crate::Runner,
    group: &str,
    cases: &[&str],
    ours: &str,
    target: &str,
) {
    let ratios: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            let get = |name: &str| {
                r.records
                    .iter()
                    .rev()
                    .find(|x| x.group == group && x.case == *c && x.impl_name == name)
                    .and_then(|x| x.ns_per_op)
            };
            let (u, k) = (get(ours)?, get("kernel")?);
            Some(format!("{c} {:.1}x", k / u))
        })
        .collect();
    if !ratios.is_empty() {
        r.note(
            group,
            &format!("kernel/{ours}: {} ({target})", ratios.join(", ")),
        );
    }
}
