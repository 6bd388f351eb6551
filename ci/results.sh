#!/usr/bin/env bash
# Regenerates docs/results.md and docs/plots/ from one `utimer bench` run,
# and docs/programs.md from one ci/programs.sh run
# (full mode; extra arguments go to `utimer bench`, e.g. `--quick`). The
# page is written by `utimer bench --markdown` and must not be edited by
# hand; the stale charts are removed first, so docs/plots/ holds exactly
# this run's. Every row also lands in target/results.json.
#   ci/results.sh [ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
cargo build --release -q -p utimer-cli
mkdir -p docs/plots
rm -f docs/plots/*.svg
"$target/release/utimer" bench --markdown docs/results.md --plot docs/plots \
  --json "$target/results.json" "$@"
# Other projects' programs on the kernel and on the drop-in library, the
# same day: docs/programs.md (generated too; see ci/programs.sh).
OUT=docs/programs.md SECONDS_EACH="${SECONDS_EACH:-5}" ci/programs.sh >/dev/null
