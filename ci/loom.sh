#!/usr/bin/env bash
# Loom models of the cross-thread protocols: crates/utimer/tests/loom.rs
# (modify, migration, expiry, drop, delete_sync) and the parker's model in
# src/sync/parker.rs.
# Under --cfg loom every atomic and the base lock come from loom (src/sync).
set -euo pipefail
cd "$(dirname "$0")/.."
RUSTFLAGS="--cfg loom ${RUSTFLAGS:-}" CARGO_TARGET_DIR=target/loom \
  cargo test -p utimer --release --lib --test loom -- --test-threads=1
