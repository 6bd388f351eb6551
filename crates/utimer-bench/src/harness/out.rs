//! Standard output of `utimer bench`, and what happens when it is closed.
//!
//! `println!` panics when stdout is a pipe whose reader went away
//! (`utimer bench | head`): Rust programs ignore `SIGPIPE`, so the write
//! fails with `EPIPE` instead of ending the process. Every line of the
//! bench goes through [`line`] instead: the first write that finds stdout
//! closed ends the process quietly with status 0, as the tool would have
//! ended had it only printed what the reader took; or, when the run still
//! has files to write (`--json`, `--plot`, `--markdown`:
//! [`keep_running_when_closed`]), the run goes on without printing and
//! writes them. Other write errors (a full disk behind a redirection) are
//! ignored as before: the tables are not the run's only record.

use std::fmt;
use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Stdout was found closed.
static CLOSED: AtomicBool = AtomicBool::new(false);
/// Whether a closed stdout lets the run go on (it has files to write).
static KEEP_RUNNING: AtomicBool = AtomicBool::new(false);

/// Whether a closed stdout lets the run go on, silent, instead of ending
/// the process (set when the run has files to write).
pub(crate) fn keep_running_when_closed(keep: bool) {
    KEEP_RUNNING.store(keep, Ordering::Relaxed);
}

/// Writes `args` and a newline to stdout; see the module docs for a
/// closed stdout.
pub(crate) fn line(args: fmt::Arguments<'_>) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    let written = out.write_fmt(args).and_then(|()| out.write_all(b"\n"));
    if let Err(e) = written {
        if e.kind() == ErrorKind::BrokenPipe {
            drop(out);
            closed();
        }
    }
}

/// Flushes stdout, with [`line`]'s handling of a closed stdout.
pub(crate) fn flush() {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    if let Err(e) = std::io::stdout().flush() {
        if e.kind() == ErrorKind::BrokenPipe {
            closed();
        }
    }
}

/// Stdout's reader is gone: stop printing, and end the process unless the
/// run has files to write.
fn closed() {
    CLOSED.store(true, Ordering::Relaxed);
    if !KEEP_RUNNING.load(Ordering::Relaxed) {
        crate::harness::progress::finish();
        std::process::exit(0);
    }
}

/// `println!` through [`line`].
macro_rules! outln {
    () => {
        $crate::harness::out::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::harness::out::line(format_args!($($arg)*))
    };
}

/// `eprintln!` that ignores a failed write (stderr closed too) instead of
/// panicking.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub(crate) use {errln, outln};
