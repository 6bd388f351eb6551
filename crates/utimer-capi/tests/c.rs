//! The C API's own tests, in C: `tests/c/*.c` compiled with the system C
//! compiler against `include/utimer.h` and the freshly built
//! `libutimer_capi.so` (as `libutimer.so`), under AddressSanitizer and UndefinedBehaviorSanitizer
//! (any report fails the run), then run one by one.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `target/<profile>`, where cargo put this crate's cdylib.
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/..")
        .to_path_buf()
}

fn compile_and_run(name: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let built = lib_dir().join("libutimer_capi.so");
    assert!(built.exists(), "{} not built", built.display());
    // Laid out as `make install` does: libutimer.so and its soname.
    let libs = lib_dir().join(format!("capi-{name}"));
    std::fs::create_dir_all(&libs).expect("library dir");
    for file in ["libutimer.so", "libutimer.so.0"] {
        std::fs::copy(&built, libs.join(file)).expect("copy the library");
    }
    let out = std::env::temp_dir().join(format!("utimer-capi-{name}-{}", std::process::id()));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-O1"])
        .args(["-fsanitize=address,undefined", "-fno-sanitize-recover=all"])
        .arg("-fno-omit-frame-pointer")
        .arg("-I")
        .arg(dir.join("include"))
        .arg(dir.join("tests/c").join(format!("{name}.c")))
        .arg("-L")
        .arg(&libs)
        .arg(format!("-Wl,-rpath,{}", libs.display()))
        .args(["-lutimer", "-lpthread", "-o"])
        .arg(&out)
        .status()
        .unwrap_or_else(|e| panic!("running {cc}: {e}"));
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
        run.status.success() && stdout.contains(&format!("{name}: ok")),
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

#[test]
fn event_loop() {
    compile_and_run("loop");
}
