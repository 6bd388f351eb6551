//! `posix-latency`: how late utimer's high-resolution timers wake, beside
//! the kernel's timerfd and tokio, sample by sample.
//!
//! * **Periodic 1 ms**: an hrtimer on a [`utimer::Runtime`] whose callback
//!   forwards its expiry by one interval ([`utimer::HrFire::forward`]) and
//!   restarts, against a periodic timerfd (absolute first expiry,
//!   `TFD_TIMER_ABSTIME`, 1 ms interval) read by a thread. Lateness is the
//!   `CLOCK_MONOTONIC` reading in the callback (after the read) minus the
//!   expiry that fired: the hrtimer's [`utimer::HrFire::expires`], the
//!   timerfd's first expiry plus the expirations already read times the
//!   interval (the oldest expiry not yet reported, as for the hrtimer).
//! * **Sleeps** of 1 ms, 10 ms, 100 ms and 1 s (quick mode: 1 ms and 10 ms
//!   only, few samples): utimer's [`utimer::Sleeper`] (an hrtimer on the
//!   runtime's worker unparks the sleeping thread), a one-shot timerfd
//!   (`poll` then `read`), and `tokio::time::sleep` in a current-thread
//!   runtime; samples one after the other. Lateness is the time after the
//!   call returned minus the deadline computed just before the call.
//!
//! Each row set gives p50, p99, min and max in µs; a negative value would be
//! a wake-up before the deadline, and the `early_samples` table counts them
//! (a timer must never fire early).

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use utimer::{ClockId, HrRestart, Ktime, Runtime};

use crate::harness::plot::Chart;
use crate::peers::timerfd::{sleep_until, TimerFd};
use crate::{GroupDoc, Record, Runner};

const GROUP: &str = "posix-latency";

/// The group's section of the results page (`--markdown`).
const DOC: GroupDoc = GroupDoc {
    title: "Wake-up lateness of hrtimers and sleeps",
    about: "How late utimer's high-resolution timers wake, sample by sample, in µs (p50 / p99 \
         / min / max; negative would be early). `periodic_1ms`: an hrtimer on a `Runtime` \
         whose callback forwards its expiry by 1 ms and restarts, against a periodic timerfd \
         read by a thread. `sleep_*`: sequential sleeps of 1 ms to 1 s (1 ms and 10 ms with \
         `--quick`), utimer's `Sleeper` against a one-shot timerfd and `tokio::time::sleep` on \
         a current-thread runtime. `early_samples` counts wake-ups before their deadline.",
    look_for: "utimer's medians should match timerfd's: both are woken by the kernel's \
         high-resolution timers, and utimer adds a hand-off from its worker. tokio's wheel \
         counts whole milliseconds, so it wakes about a millisecond late. The p99s move with \
         the machine's noise from run to run for every implementation. `early_samples` must be \
         0 everywhere: a timer never fires early.",
};

const INTERVAL: Duration = Duration::from_millis(1);

/// `CLOCK_MONOTONIC` in nanoseconds.
fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `now - expected` in µs, negative if early.
fn late_us(now: u64, expected: u64) -> f64 {
    (now as i128 - expected as i128) as f64 / 1e3
}

/// `now - deadline` in µs, negative if early.
fn late_instant_us(now: Instant, deadline: Instant) -> f64 {
    match now.checked_duration_since(deadline) {
        Some(d) => d.as_secs_f64() * 1e6,
        None => -(deadline - now).as_secs_f64() * 1e6,
    }
}

/// `n` wake-ups of a periodic 1 ms hrtimer on `rt`'s worker 0.
fn periodic_utimer(rt: &Runtime, n: usize) -> Result<Vec<f64>, String> {
    let samples = Arc::new(Mutex::new(Vec::with_capacity(n)));
    let s = samples.clone();
    let timer = rt
        .system()
        .hrtimer_on(0, ClockId::Monotonic, move |fire| {
            let now = mono_ns();
            let mut v = s.lock().unwrap_or_else(|e| e.into_inner());
            v.push(late_us(now, fire.expires().as_nanos()));
            if v.len() >= n {
                return HrRestart::NoRestart;
            }
            fire.forward(INTERVAL);
            HrRestart::Restart
        })
        .map_err(|e| format!("hrtimer: {e}"))?;
    timer
        .start(Ktime::from_nanos(mono_ns()) + INTERVAL)
        .map_err(|e| format!("start: {e}"))?;
    let give_up = Instant::now() + INTERVAL * n as u32 + Duration::from_secs(5);
    while samples.lock().unwrap_or_else(|e| e.into_inner()).len() < n {
        if Instant::now() > give_up {
            return Err("the hrtimer stopped firing".into());
        }
        thread::sleep(Duration::from_millis(2));
    }
    let _ = timer.cancel();
    let v = samples.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok(v)
}

/// `n` wake-ups of a periodic 1 ms timerfd, read by a thread of its own.
fn periodic_timerfd(n: usize) -> Result<Vec<f64>, String> {
    let reader = thread::spawn(move || -> Result<Vec<f64>, String> {
        let fd = TimerFd::new().map_err(|e| format!("timerfd_create: {e}"))?;
        let step = INTERVAL.as_nanos() as u64;
        let first = mono_ns() + step;
        fd.set_periodic_abs(first, INTERVAL)
            .map_err(|e| format!("timerfd_settime: {e}"))?;
        let mut seen = 0u64;
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let count = fd.wait().map_err(|e| format!("read: {e}"))?;
            let now = mono_ns();
            out.push(late_us(now, first + seen * step));
            seen += count;
        }
        Ok(out)
    });
    reader.join().map_err(|_| "reader panicked".to_string())?
}

/// One way to sleep.
#[derive(Copy, Clone, Debug)]
enum Sleep {
    Utimer,
    TimerFd,
    Tokio,
}

impl Sleep {
    fn name(self) -> &'static str {
        match self {
            Sleep::Utimer => "utimer Sleeper",
            Sleep::TimerFd => "timerfd one-shot",
            Sleep::Tokio => "tokio sleep",
        }
    }
}

/// `n` sequential sleeps of `d`: lateness past the deadline taken just
/// before each call.
fn sleeps(rt: &Runtime, how: Sleep, d: Duration, n: usize) -> Result<Vec<f64>, String> {
    let mut out = Vec::with_capacity(n);
    match how {
        Sleep::Utimer => {
            let sleeper = rt.system().sleeper();
            for _ in 0..n {
                let deadline = Instant::now() + d;
                sleeper.sleep(d).map_err(|e| format!("sleep: {e}"))?;
                out.push(late_instant_us(Instant::now(), deadline));
            }
        }
        Sleep::TimerFd => {
            for _ in 0..n {
                let deadline = Instant::now() + d;
                if !sleep_until(deadline) {
                    return Err("timerfd sleep failed".into());
                }
                out.push(late_instant_us(Instant::now(), deadline));
            }
        }
        Sleep::Tokio => {
            let tokio = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .map_err(|e| format!("tokio: {e}"))?;
            tokio.block_on(async {
                for _ in 0..n {
                    let deadline = Instant::now() + d;
                    tokio::time::sleep(d).await;
                    out.push(late_instant_us(Instant::now(), deadline));
                }
            });
        }
    }
    Ok(out)
}

/// The rows of one implementation in one case, plus its early count.
fn rows(case: &str, name: &str, mode: &str, lat: Result<Vec<f64>, String>) -> (Vec<Record>, u64) {
    let mut lat = match lat {
        Ok(v) if !v.is_empty() => v,
        Ok(_) => {
            return (
                vec![Record::skipped(GROUP, case, name, mode, "no sample")],
                0,
            )
        }
        Err(e) => return (vec![Record::skipped(GROUP, case, name, mode, &e)], 0),
    };
    lat.sort_by(f64::total_cmp);
    let pick = |q: f64| lat[((lat.len() - 1) as f64 * q).round() as usize];
    let n = lat.len() as u64;
    let early = lat.iter().filter(|&&v| v < 0.0).count() as u64;
    let records = [
        ("p50", pick(0.5)),
        ("p99", pick(0.99)),
        ("min", lat[0]),
        ("max", lat[lat.len() - 1]),
    ]
    .into_iter()
    .map(|(label, v)| {
        Record::value(GROUP, case, &format!("{name} {label}"), mode, v, "µs").with_ops(n)
    })
    .collect();
    (records, early)
}

pub(crate) fn run(r: &mut Runner) {
    let periodic_case = "periodic_1ms";
    // (sleep, samples quick, samples full); 0 = not in this mode.
    let sleep_plan: [(u64, usize, usize); 4] =
        [(1, 20, 200), (10, 8, 100), (100, 0, 20), (1000, 0, 5)];
    let sleep_cases: Vec<(String, Duration, usize)> = sleep_plan
        .iter()
        .map(|&(ms, q, f)| {
            (
                format!("sleep_{ms}ms"),
                Duration::from_millis(ms),
                r.pick(q, f),
            )
        })
        .filter(|(_, _, n)| *n > 0)
        .collect();
    let wants_periodic = r.wants(GROUP, periodic_case);
    if !wants_periodic
        && !sleep_cases.iter().any(|(c, _, _)| r.wants(GROUP, c))
        && !r.wants(GROUP, "early_samples")
    {
        return;
    }
    r.enter_group(
        GROUP,
        DOC,
        "hrtimers and sleeps: wake-up lateness in µs (p50 / p99 / min / max; negative = early).\n\
         periodic_1ms: hrtimer forwarded by 1 ms on a Runtime vs a periodic timerfd;\n\
         sleep_*: sequential sleeps, utimer Sleeper vs timerfd vs tokio current-thread",
    );
    let rt = match Runtime::new(2) {
        Ok(rt) => rt,
        Err(e) => {
            r.note(GROUP, &format!("no runtime: {e}"));
            return;
        }
    };
    thread::sleep(Duration::from_millis(20));
    let mut early = Vec::new();
    let mut total_early = 0;
    let mut note_early = |case: &str, name: &str, e: u64, recs: &[Record]| {
        if let Some(n) = recs.first().and_then(|x| x.ops_per_sample) {
            early.push(
                Record::value(
                    GROUP,
                    "early_samples",
                    &format!("{name} {case}"),
                    "",
                    e as f64,
                    "samples",
                )
                .with_ops(n),
            );
        }
        total_early += e;
    };
    if wants_periodic {
        let n = r.pick(50, 1000);
        let (mut records, e) = rows(
            periodic_case,
            "utimer hrtimer",
            r.mode(),
            periodic_utimer(&rt, n),
        );
        note_early(periodic_case, "utimer hrtimer", e, &records);
        let (more, e) = rows(
            periodic_case,
            "timerfd periodic",
            r.mode(),
            periodic_timerfd(n),
        );
        note_early(periodic_case, "timerfd periodic", e, &more);
        records.extend(more);
        r.values(GROUP, periodic_case, Chart::Percentiles, records);
    }
    for (case, d, n) in &sleep_cases {
        if !r.wants(GROUP, case) {
            continue;
        }
        let mut records = Vec::new();
        for how in [Sleep::Utimer, Sleep::TimerFd, Sleep::Tokio] {
            let (recs, e) = rows(case, how.name(), r.mode(), sleeps(&rt, how, *d, *n));
            note_early(case, how.name(), e, &recs);
            records.extend(recs);
        }
        r.values(GROUP, case, Chart::Percentiles, records);
    }
    for rec in &mut early {
        rec.mode = r.mode().to_string();
    }
    if !early.is_empty() {
        r.values(GROUP, "early_samples", Chart::Bars, early);
    }
    r.note(
        GROUP,
        &if total_early == 0 {
            "never early: every sample woke at or after its deadline".to_string()
        } else {
            format!("{total_early} sample(s) woke BEFORE their deadline (see early_samples)")
        },
    );
}
