//! The shared library's soname, so that it installs as `libutimer.so.0`.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libutimer.so.0");
}
