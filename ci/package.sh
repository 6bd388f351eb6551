#!/usr/bin/env bash
# The libraries as crates.io would get them: `cargo package` of utimer,
# utimer-async and utimer-capi, each .crate then unpacked and built on its
# own (cargo's verification). They are packaged in one call so that
# utimer-async's and utimer-capi's dependency on utimer resolves to the
# utimer .crate just packaged (cargo's local overlay of the packages being
# packaged) rather than to crates.io, where it is not. utimer-cli and
# utimer-bench are not published (publish = false) and not packaged here.
# Then each package must carry the license files (the crates' LICENSE-*
# are symlinks to the root's) and the README. --allow-dirty: it checks the
# working tree as it is, committed or not.
set -euo pipefail
cd "$(dirname "$0")/.."
crates=(utimer utimer-async utimer-capi)
# `cargo package` verifies each crate against the others through a local
# registry of the packages it has just written, and treats that registry's
# crates as immutable once seen: it reuses their extraction (in
# $CARGO_HOME/registry/src/-HASH/) and their compiled artifacts while the
# version is unchanged, so a second run on the same machine would verify
# against an earlier run's sources. Start from neither: a target directory
# of its own, emptied first, and no extraction of our own crates (the local
# registries' folders are the ones named with a leading '-'; crates.io's
# are left alone).
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/package-check"
rm -rf "$CARGO_TARGET_DIR"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' crates/utimer/Cargo.toml | head -1)
for crate in "${crates[@]}"; do
  rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/"$crate-$version"
done
cargo package --allow-dirty "${crates[@]/#/-p}"
for crate in "${crates[@]}"; do
  files=$(cargo package --allow-dirty --list --quiet -p "$crate")
  for file in LICENSE-MIT LICENSE-APACHE README.md; do
    if ! grep -qx "$file" <<<"$files"; then
      echo "ci/package.sh: $file is missing from the $crate package" >&2
      exit 1
    fi
  done
  echo "$crate: packaged with LICENSE-MIT, LICENSE-APACHE and README.md"
done
