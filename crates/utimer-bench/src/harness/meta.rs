//! What a run's JSON file says about the run itself, so that two files can
//! be compared: the machine (CPU model, CPUs, kernel, memory), the date,
//! the build of the tool (version and git revision), the mode, the filter
//! and the method's parameters. The banner a run prints first and the
//! results page show the same machine.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

/// Which build of the tool made a run: set by the front end, which knows
/// its own version and the git revision it was built from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ToolInfo {
    /// The tool's name, `utimer`.
    pub name: String,
    /// The tool's version (its crate's).
    pub version: String,
    /// The git commit the tool was built from, or `unknown` when it was
    /// built outside a git checkout (from a source archive, say).
    pub git_revision: String,
}

impl Default for ToolInfo {
    /// This crate's version and an unknown revision.
    fn default() -> Self {
        ToolInfo {
            name: "utimer".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            git_revision: "unknown".to_string(),
        }
    }
}

/// The machine a run measured, as far as the process can see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Machine {
    /// The CPU model (`model name` of `/proc/cpuinfo`), or `unknown CPU`.
    pub cpu_model: String,
    /// The CPUs this process may run on (what `nproc` prints).
    pub cpus: usize,
    /// The kernel release (what `uname -r` prints), or `unknown`.
    pub kernel: String,
    /// The operating system, e.g. `linux`.
    pub os: String,
    /// The CPU architecture, e.g. `x86_64`.
    pub arch: String,
    /// The machine's memory in bytes (`MemTotal` of `/proc/meminfo`).
    pub memory_bytes: Option<u64>,
}

impl Machine {
    /// Reads the machine's description from the system.
    pub fn detect() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        Machine {
            cpu_model: cpu_model(&cpuinfo).unwrap_or_else(|| "unknown CPU".to_string()),
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            kernel: kernel_release().unwrap_or_else(|| "unknown".to_string()),
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
            memory_bytes: mem_total(&meminfo),
        }
    }

    /// The one-line description the banner and the results page show:
    /// `2 CPUs (nproc), <CPU model>, Linux <release>`.
    pub fn describe(&self) -> String {
        format!(
            "{} CPUs (nproc), {}, Linux {}",
            self.cpus, self.cpu_model, self.kernel
        )
    }
}

/// The first `model name` of a `/proc/cpuinfo` text.
fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim() == "model name")
        .map(|(_, m)| m.trim().to_string())
        .filter(|m| !m.is_empty())
}

/// `MemTotal` of a `/proc/meminfo` text, in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The kernel release, from `uname(2)`.
fn kernel_release() -> Option<String> {
    // SAFETY: `utsname` is plain data, for which all zeroes is valid.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable `utsname`.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let bytes: Vec<u8> = u
        .release
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    let s = String::from_utf8_lossy(&bytes).trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// The method's parameters of a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Method {
    /// Repetitions (samples) per contender in a repeated case.
    pub repetitions: usize,
    /// The least duration of one batch, in milliseconds.
    pub batch_target_ms: u64,
}

/// Everything the JSON file says about a run besides its rows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunMeta {
    /// The build of the tool that ran.
    pub tool: ToolInfo,
    /// When the run started, UTC, RFC 3339 (`2026-11-26T18:07:26Z`).
    pub date: String,
    /// `quick` or `full`.
    pub mode: String,
    /// The `--filter` substring, or `null` for every case.
    pub filter: Option<String>,
    /// The machine.
    pub machine: Machine,
    /// The method's parameters.
    pub method: Method,
    /// The run's wall time in seconds.
    pub duration_s: f64,
}

/// The JSON file of a run: what ran where ([`RunMeta`]), then every row
/// in run order.
#[derive(Debug, Serialize)]
pub struct JsonFile<'a> {
    /// The layout of the file: 2 for this one (the first layout was a
    /// bare array of rows).
    pub schema: u32,
    /// What ran where.
    pub meta: &'a RunMeta,
    /// Every row, in run order.
    pub results: &'a [crate::Record],
}

/// The layout [`JsonFile`] writes.
pub const JSON_SCHEMA: u32 = 2;

/// `t` in UTC as RFC 3339 with whole seconds: `YYYY-MM-DDTHH:MM:SSZ`.
pub fn rfc3339_utc(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (h, m, s) = (secs / 3_600 % 24, secs / 60 % 60, secs % 60);
    format!("{}T{h:02}:{m:02}:{s:02}Z", utc_date(t))
}

/// `YYYY-MM-DD` of `t` in UTC (the civil-from-days algorithm).
pub fn utc_date(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn reads_cpuinfo_and_meminfo() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\n\
                       model name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu\n";
        assert_eq!(
            cpu_model(cpuinfo).as_deref(),
            Some("Intel(R) Xeon(R) Processor")
        );
        assert_eq!(cpu_model("processor\t: 0\n"), None);
        let meminfo = "MemTotal:        8039424 kB\nMemFree:  1 kB\n";
        assert_eq!(mem_total(meminfo), Some(8_039_424 * 1024));
        assert_eq!(mem_total(""), None);
    }

    #[test]
    fn detects_this_machine() {
        let m = Machine::detect();
        assert!(m.cpus >= 1);
        assert!(!m.kernel.is_empty() && m.kernel != "unknown");
        assert!(m.describe().contains(&m.kernel));
    }

    #[test]
    fn utc_dates() {
        let at = |s: u64| utc_date(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01");
        assert_eq!(at(951_868_800), "2000-03-01");
        assert_eq!(at(1_709_164_800 + 86_399), "2024-02-29");
        assert_eq!(at(1_735_689_599), "2024-12-31");
    }

    #[test]
    fn rfc3339_dates() {
        let at = |s: u64| rfc3339_utc(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400 + 3_600 * 13 + 61), "2000-02-29T13:01:01Z");
        assert_eq!(at(1_798_761_599), "2026-12-31T23:59:59Z");
    }
}
