//! `include/utimer.h` is what the pinned cbindgen generates from this
//! crate: CI fails when the checked-in header is stale. Run with
//! `UTIMER_BLESS=1` to rewrite it.

#[test]
fn the_checked_in_header_is_current() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let config =
        cbindgen::Config::from_file(format!("{dir}/cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let path = format!("{dir}/include/utimer.h");
    if std::env::var_os("UTIMER_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write the header");
        return;
    }
    let on_disk = std::fs::read(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "include/utimer.h is stale: run `UTIMER_BLESS=1 cargo test -p utimer-capi --test header` and commit it"
    );
}
