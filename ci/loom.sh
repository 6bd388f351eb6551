#!/usr/bin/env bash
# Loom models of the cross-thread protocols (crates/utimer/tests/loom.rs).
# Under --cfg loom every atomic and the base lock come from loom (src/sync).
set -euo pipefail
cd "$(dirname "$0")/.."
RUSTFLAGS="--cfg loom ${RUSTFLAGS:-}" CARGO_TARGET_DIR=target/loom \
  cargo test -p utimer --release --test loom -- --test-threads=1
