//! `posix-dropin`: the POSIX timer and timerfd calls as an unmodified
//! program makes them, through the drop-in library (`libutimer_posix.so`)
//! against glibc's system calls, single thread, ns/op:
//!
//! * `settime_rearm`: an armed timer moved to a new far value;
//! * `gettime`, `getoverrun`: of an armed timer;
//! * `create_delete`: `timer_create` then `timer_delete`;
//! * `timerfd_settime`: an armed timerfd moved to a new far value.
//!
//! The library is loaded as the dynamic linker loads a preloaded one
//! (`dlopen`), and each function is the one a program's reference binds
//! to: `dlvsym(…, "timer_settime", "GLIBC_2.34")`. So each row includes
//! everything the library adds to utimer's call: the `timer_t` decoding,
//! the critical section that makes the calls async-signal-safe, and the
//! timerfd table. The kernel's row calls glibc's function of the same
//! name and version. Timers are `SIGEV_NONE` (neither side queues one),
//! timerfds `CLOCK_MONOTONIC`, armed far ahead so that nothing expires.
//!
//! The library is found beside the bench's executable (`cargo build
//! --release -p utimer-posix` puts it there; the group builds it when it
//! is missing and `cargo` is at hand) or at `UTIMER_POSIX_LIB`.

use std::ffi::{c_int, c_void, CStr};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use super::timers::FAR;
use crate::harness::plot::Chart;
use crate::{time, Contender, GroupDoc, Runner, Schedule};

const DROPIN: &str = "posix-dropin";

const DOC: GroupDoc = GroupDoc {
    title: "The drop-in library against glibc's system calls",
    about: "Single-thread cost of the POSIX timer and timerfd calls as an unmodified \
         program makes them: through `libutimer_posix.so`, each function the one a program's \
         reference binds to (`timer_settime@GLIBC_2.34`, `timerfd_settime@GLIBC_2.8`), \
         against glibc's function of that name, which makes the system call. `SIGEV_NONE` \
         timers and `CLOCK_MONOTONIC` timerfds armed far ahead; ns per operation.",
    look_for: "The kernel/utimer ratio of each call (the target is at least 5x). The \
         drop-in's rows include what it adds to utimer's own calls: the critical section \
         that makes them async-signal-safe, the `timer_t` decoding, the timerfd table.",
};

type Create = unsafe extern "C" fn(libc::clockid_t, *mut libc::sigevent, *mut *mut c_void) -> c_int;
type SetTime = unsafe extern "C" fn(
    *mut c_void,
    c_int,
    *const libc::itimerspec,
    *mut libc::itimerspec,
) -> c_int;
type GetTime = unsafe extern "C" fn(*mut c_void, *mut libc::itimerspec) -> c_int;
type OneArg = unsafe extern "C" fn(*mut c_void) -> c_int;
type FdCreate = unsafe extern "C" fn(libc::clockid_t, c_int) -> c_int;
type FdSetTime =
    unsafe extern "C" fn(c_int, c_int, *const libc::itimerspec, *mut libc::itimerspec) -> c_int;

/// One side's functions.
#[derive(Clone, Copy)]
struct Calls {
    create: Create,
    settime: SetTime,
    gettime: GetTime,
    getoverrun: OneArg,
    delete: OneArg,
    fd_create: FdCreate,
    fd_settime: FdSetTime,
}

/// `name@version` from `handle`.
fn sym(handle: *mut c_void, name: &CStr, version: &CStr) -> Result<*mut c_void, String> {
    // SAFETY: both strings are NUL-terminated; a null result is checked.
    let p = unsafe { libc::dlvsym(handle, name.as_ptr(), version.as_ptr()) };
    if p.is_null() {
        Err(format!("{name:?}@{version:?} not found"))
    } else {
        Ok(p)
    }
}

/// The calls of the object `handle` (the drop-in's, or glibc's with
/// `RTLD_DEFAULT` in this process, where the drop-in is loaded locally).
fn calls(handle: *mut c_void) -> Result<Calls, String> {
    let v34 = c"GLIBC_2.34";
    let v8 = c"GLIBC_2.8";
    // SAFETY: each symbol is the function of that name and version, whose
    // prototype is glibc's (the types above).
    unsafe {
        Ok(Calls {
            create: std::mem::transmute::<*mut c_void, Create>(sym(handle, c"timer_create", v34)?),
            settime: std::mem::transmute::<*mut c_void, SetTime>(sym(
                handle,
                c"timer_settime",
                v34,
            )?),
            gettime: std::mem::transmute::<*mut c_void, GetTime>(sym(
                handle,
                c"timer_gettime",
                v34,
            )?),
            getoverrun: std::mem::transmute::<*mut c_void, OneArg>(sym(
                handle,
                c"timer_getoverrun",
                v34,
            )?),
            delete: std::mem::transmute::<*mut c_void, OneArg>(sym(handle, c"timer_delete", v34)?),
            fd_create: std::mem::transmute::<*mut c_void, FdCreate>(sym(
                handle,
                c"timerfd_create",
                v8,
            )?),
            fd_settime: std::mem::transmute::<*mut c_void, FdSetTime>(sym(
                handle,
                c"timerfd_settime",
                v8,
            )?),
        })
    }
}

/// Where the library is, building it if need be.
fn library() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("UTIMER_POSIX_LIB") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = exe.parent().ok_or("no executable directory")?.to_path_buf();
    let here = [
        dir.join("libutimer_posix.so"),
        dir.join("../libutimer_posix.so"),
    ];
    if let Some(p) = here.iter().find(|p| p.exists()) {
        return Ok(p.clone());
    }
    let cargo = std::env::var_os("CARGO")
        .ok_or("libutimer_posix.so not built (cargo build --release -p utimer-posix)")?;
    let profile = if cfg!(debug_assertions) {
        "dev"
    } else {
        "release"
    };
    let ok = std::process::Command::new(cargo)
        .args(["build", "-q", "--profile", profile, "-p", "utimer-posix"])
        .status()
        .map_err(|e| e.to_string())?
        .success();
    here.into_iter()
        .find(|p| ok && p.exists())
        .ok_or_else(|| "could not build libutimer_posix.so".into())
}

/// Both sides: (drop-in, glibc).
fn sides() -> Result<(Calls, Calls), String> {
    let lib = library()?;
    let path =
        std::ffi::CString::new(lib.to_string_lossy().as_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: a NUL-terminated path; RTLD_LOCAL keeps the library's
    // exports out of this process's own symbol lookups (its glibc calls
    // stay glibc's), as the kernel's side needs.
    let h = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if h.is_null() {
        return Err(format!("dlopen {} failed", lib.display()));
    }
    Ok((calls(h)?, calls(libc::RTLD_DEFAULT)?))
}

fn spec(i: u64) -> libc::itimerspec {
    let d = FAR + Duration::from_nanos(i & 1023);
    libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: d.as_secs() as libc::time_t,
            tv_nsec: d.subsec_nanos() as libc::c_long,
        },
    }
}

/// A `SIGEV_NONE` timer armed far ahead, made with `c`.
fn armed(c: &Calls) -> Result<*mut c_void, String> {
    // SAFETY: a zeroed sigevent is valid; the calls get live pointers.
    unsafe {
        let mut ev: libc::sigevent = std::mem::zeroed();
        ev.sigev_notify = libc::SIGEV_NONE;
        let mut t = std::ptr::null_mut();
        if (c.create)(libc::CLOCK_MONOTONIC, &mut ev, &mut t) != 0 {
            return Err("timer_create failed".into());
        }
        (c.settime)(t, 0, &spec(0), std::ptr::null_mut());
        Ok(t)
    }
}

/// A timer handle that crosses into the measured closure.
#[derive(Clone, Copy)]
struct Handle(usize);

/// The measured loop of one call, for one side.
fn contender(name: &'static str, c: Calls, case: &'static str) -> Contender<'static> {
    Contender::batched(name, move || {
        let t = Handle(armed(&c)? as usize);
        // SAFETY: fd_create takes integers.
        let fd = unsafe { (c.fd_create)(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err("timerfd_create failed".into());
        }
        Ok(move |n: u64| {
            let t = t.0 as *mut c_void;
            let mut cur: libc::itimerspec = libc::itimerspec {
                it_interval: libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
            };
            // SAFETY: live timers and descriptors of this side, live values.
            time(|| unsafe {
                match case {
                    "settime_rearm" => {
                        for i in 0..n {
                            black_box((c.settime)(t, 0, &spec(i), std::ptr::null_mut()));
                        }
                    }
                    "gettime" => {
                        for _ in 0..n {
                            black_box((c.gettime)(black_box(t), &mut cur));
                        }
                    }
                    "getoverrun" => {
                        for _ in 0..n {
                            black_box((c.getoverrun)(black_box(t)));
                        }
                    }
                    "create_delete" => {
                        let mut ev: libc::sigevent = std::mem::zeroed();
                        ev.sigev_notify = libc::SIGEV_NONE;
                        for _ in 0..n {
                            let mut nt = std::ptr::null_mut();
                            if (c.create)(libc::CLOCK_MONOTONIC, &mut ev, &mut nt) == 0 {
                                black_box((c.delete)(nt));
                            }
                        }
                    }
                    _ => {
                        for i in 0..n {
                            black_box((c.fd_settime)(fd, 0, &spec(i), std::ptr::null_mut()));
                        }
                    }
                }
            })
        })
    })
}

pub(crate) fn run(r: &mut Runner) {
    let cases = [
        "settime_rearm",
        "gettime",
        "getoverrun",
        "create_delete",
        "timerfd_settime",
    ];
    if !cases.iter().any(|c| r.wants(DROPIN, c)) {
        return;
    }
    r.enter_group(
        DROPIN,
        DOC,
        "POSIX timer and timerfd calls through the drop-in library (libutimer_posix.so,\n\
         each function the one a program binds to) vs glibc's system calls (ns/op)",
    );
    let (ours, glibc) = match sides() {
        Ok(s) => s,
        Err(e) => {
            r.note(DROPIN, &format!("not measured: {e}"));
            return;
        }
    };
    for case in cases {
        r.case(
            DROPIN,
            case,
            Chart::Bars,
            Schedule::Interleaved,
            move || {
                vec![
                    contender("utimer drop-in", ours, case),
                    contender("kernel", glibc, case),
                ]
            },
        );
    }
    super::timers::note_ratios(r, DROPIN, &cases, "utimer drop-in", "target >= 5x");
}
