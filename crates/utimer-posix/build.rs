//! The drop-in's link: glibc's version nodes (utimer-posix.map), so that
//! each export carries the version a program's reference names, and a
//! soname of its own.
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rerun-if-changed=utimer-posix.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={dir}/utimer-posix.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libutimer_posix.so");
}
