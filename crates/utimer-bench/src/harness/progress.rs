//! The progress line of `utimer bench`: when stderr is a terminal, one line
//! there, rewritten in place with `\r`, says which group and case is running
//! and how many groups are done; it is cleared before every table is printed
//! (stdout is usually the same terminal) and at the end of the run. When
//! stderr is not a terminal nothing is written.
//!
//! The state is process-wide so that the printing functions in `report` and
//! the kernel replays' own tables (`rearm_shares`) can clear the line without a handle; only
//! [`crate::run`] switches it on, so tests and the Criterion benches never
//! draw it.

use std::io::Write;
use std::sync::Mutex;

struct State {
    enabled: bool,
    /// The number of groups a full run has; `None` for a filtered run.
    total: Option<usize>,
    /// Groups entered so far (the current one included).
    entered: usize,
    group: String,
    /// What the line says is running: the group, or `group/case`.
    what: String,
    /// Whether the line is on screen.
    shown: bool,
}

static STATE: Mutex<State> = Mutex::new(State {
    enabled: false,
    total: None,
    entered: 0,
    group: String::new(),
    what: String::new(),
    shown: false,
});

fn with(f: impl FnOnce(&mut State)) {
    // A panic elsewhere must not silence the rest of the run.
    let mut s = STATE.lock().unwrap_or_else(|e| e.into_inner());
    if s.enabled {
        f(&mut s);
    }
}

fn erase(s: &mut State) {
    if s.shown {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K");
        let _ = err.flush();
        s.shown = false;
    }
}

fn draw(s: &mut State) {
    if s.what.is_empty() {
        return;
    }
    let done = s.entered.saturating_sub(1);
    let count = match s.total {
        Some(t) => format!("{done}/{t} groups done"),
        None => format!("{done} groups done"),
    };
    // Stay on one line of a narrow terminal: `\r` only returns to the start
    // of the last line.
    let mut line = format!("[{count}] running {}", s.what);
    if line.chars().count() > 79 {
        line = line.chars().take(78).collect::<String>() + "…";
    }
    // Flush stdout first, so that the table printed just before cannot land
    // after the progress line.
    let _ = std::io::stdout().flush();
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\x1b[2K{line}");
    let _ = err.flush();
    s.shown = true;
}

/// Switches the line on (`enabled`) for a run of `total` groups (`None`
/// when the count is unknown, i.e. a filtered run).
pub(crate) fn start(enabled: bool, total: Option<usize>) {
    let mut s = STATE.lock().unwrap_or_else(|e| e.into_inner());
    *s = State {
        enabled,
        total,
        entered: 0,
        group: String::new(),
        what: String::new(),
        shown: false,
    };
}

/// A new group starts.
pub(crate) fn group(name: &str) {
    with(|s| {
        s.entered += 1;
        s.group = name.to_string();
        s.what = name.to_string();
        draw(s);
    });
}

/// A case of the current group starts.
pub(crate) fn case(group: &str, case: &str) {
    with(|s| {
        s.what = format!("{group}/{case}");
        draw(s);
    });
}

/// Removes the line before something is printed to stdout.
pub(crate) fn clear() {
    with(erase);
}

/// Shows the line again after a printout; after a case's table it names
/// the group only, until the next case starts.
pub(crate) fn redraw(case_done: bool) {
    with(|s| {
        if case_done {
            s.what = s.group.clone();
        }
        draw(s);
    });
}

/// Removes the line for good.
pub(crate) fn finish() {
    with(|s| {
        erase(s);
        s.enabled = false;
    });
}
