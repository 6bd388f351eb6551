//! Unmodified programs on the drop-in: each `tests/c/*.c` is a plain C
//! program that knows nothing of utimer (system headers only, linked
//! against glibc). It runs twice: on the kernel, which proves that it
//! checks the kernel's behaviour, and with `LD_PRELOAD` of the freshly
//! built `libutimer_posix.so`, which must behave the same. A run under the
//! library counts only because the library is known to serve it:
//! `the_library_serves_the_program` below asks the dynamic linker where
//! each interposed function of a program resolves, so that a silently
//! ignored preload cannot pass. They use the
//! C test harness the C API's tests use,
//! `crates/utimer-capi/tests/c/check.h`, built the same way
//! (`crates/utimer-capi/tests/c/cc.rs`): a passing program prints
//! `<name>: ok` as its last line of output and exits 0.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../../utimer-capi/tests/c/cc.rs"]
mod cc;

/// The cdylib cargo built for these tests (beside the test binary, or one
/// level up).
fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().expect("target/<profile>/deps");
    [
        deps.to_path_buf(),
        deps.parent().map(Path::to_path_buf).unwrap_or_default(),
    ]
    .iter()
    .map(|d| d.join("libutimer_posix.so"))
    .find(|p| p.exists())
    .unwrap_or_else(|| panic!("libutimer_posix.so not built next to {}", exe.display()))
}

/// Compiles `tests/c/<name>.c` as a program of its own (no utimer header,
/// no utimer library; the C test harness from the C API's tests).
fn compile(name: &str) -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::env::temp_dir().join(format!("utimer-posix-{name}-{}", std::process::id()));
    let status = cc::cc(&manifest.join("../utimer-capi/tests/c"))
        .arg(manifest.join("tests/c").join(format!("{name}.c")))
        .args(["-lrt", "-o"])
        .arg(&out)
        .status()
        .unwrap_or_else(|e| panic!("running the C compiler: {e}"));
    assert!(status.success(), "{name}.c does not compile");
    out
}

/// Writes `source` to `<name>.c` in a fresh scratch directory and builds
/// it with `flags`; returns the directory and the program.
fn build_inline(name: &str, source: &str, flags: &[&str]) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("utimer-posix-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let exe = dir.join(name);
    let ok = Command::new("cc")
        .arg(&src)
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .status()
        .unwrap()
        .success();
    assert!(ok, "{name}.c does not compile");
    (dir, exe)
}

/// Runs `prog` (with `preload`, if any) and checks its verdict.
fn run(name: &str, prog: &Path, preload: Option<&Path>) {
    let mut cmd = Command::new(prog);
    cmd.arg(prog);
    if let Some(lib) = preload {
        cmd.env("LD_PRELOAD", lib);
    }
    let out = cmd.output().expect("run the program");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let on = if preload.is_some() {
        "utimer"
    } else {
        "the kernel"
    };
    assert!(
        out.status.success() && stdout.lines().last() == Some(&format!("{name}: ok")),
        "{name} on {on}: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
}

/// Both runs of one program.
fn both(name: &str) {
    let prog = compile(name);
    run(name, &prog, None);
    run(name, &prog, Some(&library()));
    let _ = std::fs::remove_file(&prog);
}

/// Preloaded, and linked at build time, the library's functions are the
/// ones the program calls.
#[test]
fn the_library_serves_the_program() {
    // A program that asks the dynamic linker where its functions live.
    let dir = std::env::temp_dir().join(format!("utimer-posix-which-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("which.c");
    std::fs::write(
        &src,
        "#define _GNU_SOURCE\n#include <dlfcn.h>\n#include <stdio.h>\n#include <time.h>\n\
         #include <sys/timerfd.h>\n#include <signal.h>\n#include <unistd.h>\n#include <sched.h>\n#include <pthread.h>\n\
         static void show(void *f) { Dl_info i; dladdr(f, &i); printf(\"%s\\n\", i.dli_fname); }\n\
         int main(void) { show((void *)timer_create); show((void *)timer_settime);\n\
         show((void *)timerfd_create); show((void *)sigaction); show((void *)close);\n\
         show((void *)sched_setscheduler); show((void *)pthread_setschedprio);\n\
         show((void *)close_range); show((void *)closefrom);\n\
         show((void *)execve); show((void *)execl);\n\
         show((void *)nanosleep); show((void *)clock_nanosleep); show((void *)sleep); show((void *)usleep); return 0; }\n",
    )
    .unwrap();
    let exe = dir.join("which");
    let ok = Command::new("cc")
        .arg(&src)
        .args(["-lrt", "-ldl", "-pthread", "-o"])
        .arg(&exe)
        .status()
        .unwrap()
        .success();
    assert!(ok, "which.c does not compile");
    let lib = library();
    let out = Command::new(&exe).env("LD_PRELOAD", &lib).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 15, "{text}");
    for line in text.lines() {
        assert!(
            line.ends_with("libutimer_posix.so"),
            "not served by the library: {text}"
        );
    }
    let plain = Command::new(&exe).output().unwrap();
    let text = String::from_utf8_lossy(&plain.stdout);
    assert!(!text.contains("libutimer_posix"), "{text}");
    // Linked with it at build time: the same, with no preload.
    let linked = dir.join("which-linked");
    let libdir = lib.parent().unwrap();
    let ok = Command::new("cc")
        .arg(&src)
        .arg("-L")
        .arg(libdir)
        .arg(format!("-Wl,-rpath,{}", libdir.display()))
        .args(["-lutimer_posix", "-lrt", "-ldl", "-pthread", "-o"])
        .arg(&linked)
        .status()
        .unwrap()
        .success();
    assert!(ok, "which.c does not link with -lutimer_posix");
    // Its run path names the library just built: cargo's LD_LIBRARY_PATH
    // (which comes first) could name an older copy in target/<profile>.
    let out = Command::new(&linked)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 15, "{text}");
    for line in text.lines() {
        assert!(
            line.ends_with("libutimer_posix.so"),
            "linked, not served: {text}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sleep() {
    both("sleep");
}

#[test]
fn timers() {
    both("timers");
}

#[test]
fn overrun() {
    both("overrun");
}

#[test]
fn signals() {
    both("signals");
}

#[test]
fn timerfd() {
    both("timerfd");
}

#[test]
fn fork() {
    both("fork");
}

#[test]
fn inherit() {
    both("inherit");
}

#[test]
fn sigsafe() {
    both("sigsafe");
}

#[test]
fn sched() {
    both("sched");
}

/// `UTIMER_POSIX=verbose`: the library says on stderr, in one line, that
/// it serves the program; without it (or without the library) nothing of
/// utimer's appears, and the program's own output is the same either way.
#[test]
fn verbose_prints_one_line_when_asked() {
    // A POSIX timer and a timerfd, each let fire once.
    let (dir, exe) = build_inline(
        "fire",
        "#include <signal.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <time.h>\n\
         #include <unistd.h>\n#include <sys/timerfd.h>\n\
         int main(void) {\n\
           struct sigevent ev = {.sigev_notify = SIGEV_NONE};\n\
           timer_t t; struct itimerspec ms = {{0, 0}, {0, 1000000}}, left;\n\
           if (timer_create(CLOCK_MONOTONIC, &ev, &t) || timer_settime(t, 0, &ms, NULL)) return 1;\n\
           do usleep(1000); while (timer_gettime(t, &left) == 0 && left.it_value.tv_nsec);\n\
           int fd = timerfd_create(CLOCK_MONOTONIC, 0);\n\
           uint64_t n = 0;\n\
           if (fd < 0 || timerfd_settime(fd, 0, &ms, NULL) || read(fd, &n, 8) != 8) return 1;\n\
           printf(\"fired: %llu\\n\", (unsigned long long)n);\n\
           return timer_delete(t);\n\
         }\n",
        &["-lrt"],
    );
    let lib = library();
    // (stdout, the lines of stderr that name utimer, pid) of one run.
    let run = |preload: bool, env: &[(&str, &str)]| {
        let mut cmd = Command::new(&exe);
        cmd.env_remove("UTIMER_POSIX").env_remove("UTIMER_WORKERS");
        if preload {
            cmd.env("LD_PRELOAD", &lib);
        }
        cmd.envs(env.iter().copied());
        let child = cmd
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{env:?}: {}\n{stdout}{stderr}",
            out.status
        );
        let lines: Vec<String> = stderr
            .lines()
            .filter(|l| l.contains("utimer"))
            .map(str::to_owned)
            .collect();
        (stdout, lines, pid)
    };
    let verbose = [("UTIMER_POSIX", "verbose")];
    let (plain, none, _) = run(false, &verbose);
    assert_eq!(plain, "fired: 1\n");
    assert!(none.is_empty(), "the kernel's run: {none:?}");
    let (quiet_out, quiet, _) = run(true, &[]);
    assert_eq!(quiet_out, plain);
    assert!(quiet.is_empty(), "not asked for: {quiet:?}");
    let (off_out, off, _) = run(true, &[("UTIMER_POSIX", "off")]);
    assert_eq!(off_out, plain);
    assert!(off.is_empty(), "UTIMER_POSIX=off: {off:?}");
    let (out, lines, pid) = run(true, &verbose);
    assert_eq!(out, plain, "the program's output is unchanged");
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    assert!(
        line.starts_with(&format!("utimer-posix: pid {pid}: ")),
        "{line}"
    );
    for part in [
        "CLOCK_MONOTONIC",
        "utimer-worker-",
        "one pinned to each CPU",
        "to the kernel: ",
    ] {
        assert!(line.contains(part), "no {part:?} in {line}");
    }
    let (_, lines, _) = run(
        true,
        &[("UTIMER_POSIX", "verbose"), ("UTIMER_WORKERS", "3")],
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains(" 3 workers (") && lines[0].contains("unpinned"),
        "{lines:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The drop-in's settings from the environment: a value it can use takes
/// effect silently; one it cannot is reported once on stderr (one line,
/// starting `utimer:`) and ignored, the default taking its place.
#[test]
fn environment_values_are_checked() {
    // Creates a timer (which starts the library's system, if it serves the
    // program), then prints how many utimer worker threads run, once every
    // thread but the main one has named itself (a new thread names itself
    // when it starts, after the library's call returned).
    let (dir, exe) = build_inline(
        "env",
        "#define _GNU_SOURCE\n#include <dirent.h>\n#include <signal.h>\n#include <stdio.h>\n\
         #include <string.h>\n#include <time.h>\n#include <unistd.h>\n\
         static int count(int *unnamed) {\n\
           int n = 0; *unnamed = 0; DIR *d = opendir(\"/proc/self/task\"); struct dirent *e;\n\
           while ((e = readdir(d)) != NULL) {\n\
             if (e->d_name[0] == '.') continue;\n\
             char path[300], comm[64] = {0};\n\
             snprintf(path, sizeof path, \"/proc/self/task/%s/comm\", e->d_name);\n\
             FILE *f = fopen(path, \"r\"); if (!f) continue;\n\
             if (fgets(comm, sizeof comm, f)) {\n\
               if (strncmp(comm, \"utimer-worker\", 13) == 0) n++;\n\
               else if (strncmp(comm, \"utimer-\", 7) != 0) (*unnamed)++;\n\
             }\n\
             fclose(f);\n\
           }\n\
           closedir(d); return n; }\n\
         int main(void) {\n\
           struct sigevent ev; memset(&ev, 0, sizeof ev); ev.sigev_notify = SIGEV_NONE;\n\
           timer_t t; if (timer_create(CLOCK_MONOTONIC, &ev, &t) != 0) return 3;\n\
           timer_t u; if (timer_create(CLOCK_MONOTONIC, &ev, &u) != 0) return 3;\n\
           int unnamed, n = count(&unnamed);\n\
           for (int i = 0; i < 10000 && unnamed > 1; i++) { usleep(1000); n = count(&unnamed); }\n\
           printf(\"workers %d\\n\", n); return 0; }\n",
        &["-lrt"],
    );
    let lib = library();
    let run = |vars: &[(&str, &str)]| {
        let mut cmd = Command::new(&exe);
        cmd.env("LD_PRELOAD", &lib)
            .env_remove("UTIMER_WORKERS")
            .env_remove("UTIMER_POSIX");
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{vars:?}: {}\n{stderr}", out.status);
        let workers: usize = stdout
            .trim()
            .strip_prefix("workers ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{vars:?}: {stdout}"));
        (workers, stderr)
    };
    let (default, stderr) = run(&[]);
    assert!(default >= 1, "the library serves the program");
    assert_eq!(stderr, "");
    // Values it can use: silent.
    assert_eq!(run(&[("UTIMER_WORKERS", "2")]), (2, String::new()));
    assert_eq!(run(&[("UTIMER_WORKERS", "0")]), (default, String::new()));
    assert_eq!(run(&[("UTIMER_POSIX", "on")]), (default, String::new()));
    assert_eq!(run(&[("UTIMER_POSIX", "off")]), (0, String::new()));
    // Values it cannot: one line each, and the default.
    for (var, value) in [
        ("UTIMER_WORKERS", "banana"),
        ("UTIMER_WORKERS", "-3"),
        ("UTIMER_WORKERS", "100000"),
        ("UTIMER_POSIX", "of"),
        ("UTIMER_POSIX", "OFF"),
    ] {
        let (workers, stderr) = run(&[(var, value)]);
        assert_eq!(workers, default, "{var}={value} is ignored");
        assert_eq!(stderr.lines().count(), 1, "{var}={value}: {stderr}");
        assert!(
            stderr.starts_with(&format!("utimer: {var}=\"{value}\" ignored")),
            "{var}={value}: {stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
