#!/usr/bin/env bash
# Fuzzes the C API (fuzz/fuzz_targets/capi_calls.rs: random call sequences
# under AddressSanitizer) for SECONDS (default 30; by hand: 600 or more).
# Runs on the pinned nightly (ci/toolchains.sh); installs it and
# cargo-fuzz if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
. ci/toolchains.sh
use_nightly
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
cd fuzz
mkdir -p corpus/capi_calls
cargo +"$NIGHTLY" fuzz run capi_calls corpus/capi_calls -- \
  -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1
