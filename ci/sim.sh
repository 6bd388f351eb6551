#!/usr/bin/env bash
# The pull model's deterministic simulator (utimer::sim) from the command
# line: the table for 8, 64, 512 and 1,024 workers on fixed seed 1, then one
# random seed (printed, so that a failure can be replayed with
# `utimer sim --workers 64 --nodes 2 --seed N`). tests/sim.rs runs more
# fixed seeds under `cargo test`, and SIM_SEED's in place of its default.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p utimer-cli
"${CARGO_TARGET_DIR:-target}"/release/utimer sim --ticks "${SIM_TICKS:-1000}"
seed=${SIM_SEED:-$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')}
echo "random seed: $seed"
"${CARGO_TARGET_DIR:-target}"/release/utimer sim --workers 64 --nodes 2 --seed "$seed" --ticks 3000
