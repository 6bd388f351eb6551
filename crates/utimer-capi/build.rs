//! The shared library's soname, so that it installs as `libutimer.so.0`.
fn main() {
    // Not `rustc-cdylib-link-arg`, which cargo also applies to the cdylibs
    // of dependent packages (the drop-in library, which has a soname of its
    // own). Executables ignore a soname.
    println!("cargo:rustc-link-arg=-Wl,-soname,libutimer.so.0");
}
