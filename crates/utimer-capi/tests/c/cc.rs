//! How both crates' C tests are compiled: the C API's (`tests/c.rs` here)
//! and the drop-in's (`crates/utimer-posix/tests/programs.rs`, which
//! includes this file by its path). Each adds what is its own: the C API's
//! header, library and sanitizers; the drop-in's `-lrt`.

use std::path::Path;
use std::process::Command;

/// The C compiler (`$CC`, or `cc`) with the flags every C test is built
/// with and `harness`, the folder of `check.h` (this file's), on the
/// include path.
pub(crate) fn cc(harness: &Path) -> Command {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut cmd = Command::new(cc);
    cmd.args([
        "-std=gnu11",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-O1",
        "-g",
        "-pthread",
    ])
    .arg("-I")
    .arg(harness);
    cmd
}
