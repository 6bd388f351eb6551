//! The C API's own tests, in C: `tests/c/*.c` compiled with the system C
//! compiler against `include/utimer.h` and the freshly built
//! `libutimer_capi.so` (as `libutimer.so`), under AddressSanitizer and UndefinedBehaviorSanitizer
//! (any report fails the run), then run one by one. They use the C test
//! harness `tests/c/check.h` and its convention: a passing program prints
//! `<name>: ok` as its last line of output and exits 0.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "c/cc.rs"]
mod cc;

/// Where cargo put this crate's cdylib for the tests: beside the test
/// binary (`target/<profile>/deps`; `cargo build` also copies it one level
/// up, but `cargo test` alone does not).
fn built_library() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().expect("target/<profile>/deps");
    let candidates = [
        deps.to_path_buf(),
        deps.parent().map(Path::to_path_buf).unwrap_or_default(),
    ];
    candidates
        .iter()
        .map(|d| d.join("libutimer_capi.so"))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("libutimer_capi.so not built next to {}", exe.display()))
}

fn compile_and_run(name: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let built = built_library();
    // Laid out as `make install` does: libutimer.so and its soname.
    let libs = built.parent().expect("dir").join(format!("capi-{name}"));
    std::fs::create_dir_all(&libs).expect("library dir");
    for file in ["libutimer.so", "libutimer.so.0"] {
        std::fs::copy(&built, libs.join(file)).expect("copy the library");
    }
    let out = std::env::temp_dir().join(format!("utimer-capi-{name}-{}", std::process::id()));
    let harness = dir.join("tests/c");
    let status = cc::cc(&harness)
        .args(["-fsanitize=address,undefined", "-fno-sanitize-recover=all"])
        .arg("-fno-omit-frame-pointer")
        .arg("-I")
        .arg(dir.join("include"))
        .arg(harness.join(format!("{name}.c")))
        .arg("-L")
        .arg(&libs)
        .arg(format!("-Wl,-rpath,{}", libs.display()))
        .args(["-lutimer", "-o"])
        .arg(&out)
        .status()
        .unwrap_or_else(|e| panic!("running the C compiler: {e}"));
    assert!(status.success(), "{name}.c does not compile");
    let run = Command::new(&out)
        .env("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1")
        .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        .output()
        .expect("run the C test");
    let _ = std::fs::remove_file(&out);
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success() && stdout.lines().last() == Some(&format!("{name}: ok")),
        "{name} failed: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        run.status
    );
}

#[test]
fn posix_timers() {
    compile_and_run("posix");
}

#[test]
fn wheel_timers() {
    compile_and_run("wheel");
}

/// The wheel family's old names (kept for one release) still work.
#[test]
fn wheel_timers_by_their_old_names() {
    compile_and_run("wheel_old_names");
}

/// The header marks an old name deprecated: a call of one fails a build
/// with `-Werror`, naming the new one.
#[test]
fn an_old_wheel_name_warns_at_compile_time() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = std::env::temp_dir().join(format!("utimer-old-name-{}.c", std::process::id()));
    std::fs::write(
        &src,
        "#include <utimer.h>\nint f(struct utimer_timer_list *t) { return utimer_mod_timer(t, 1); }\n",
    )
    .expect("write the probe");
    let out = cc::cc(&dir.join("tests/c"))
        .arg("-I")
        .arg(dir.join("include"))
        .args(["-c", "-o", "/dev/null"])
        .arg(&src)
        .output()
        .expect("run the C compiler");
    let _ = std::fs::remove_file(&src);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains("deprecated")
            && stderr.contains("utimer_wheel_mod"),
        "a call of utimer_mod_timer compiled without the deprecation: {stderr}"
    );
}

#[test]
fn event_loop() {
    compile_and_run("loop");
}

#[test]
fn timerfds_and_signal_acceptance() {
    compile_and_run("timerfd");
}
