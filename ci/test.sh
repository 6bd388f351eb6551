#!/usr/bin/env bash
# The test command the README gives: every unit, integration and doc test.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace
