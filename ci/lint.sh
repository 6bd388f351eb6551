#!/usr/bin/env bash
# Formatting, lints and rustdoc (broken doc links fail), exactly as CI runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup component add rustfmt clippy >/dev/null 2>&1 || true
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
# utimer-async's optional features (DelayQueue, Stream, tokio's Instant).
cargo clippy -p utimer-async --all-features --all-targets -- -D warnings
# The pull model's tracepoints compile (and cost nothing when off).
cargo clippy -p utimer --features tracing -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
RUSTDOCFLAGS="-D warnings" cargo doc -p utimer-async --all-features --no-deps --quiet
