# Sourced by the CI scripts: the toolchains they build with, pinned, and
# how each is installed when missing. Bump NIGHTLY on purpose (Miri,
# ThreadSanitizer and cargo-fuzz change from one nightly to the next: a new
# one is tried by hand, then pinned here); MSRV is read from Cargo.toml,
# the one place that declares it.

# The nightly that Miri, ThreadSanitizer and the fuzzer run on.
NIGHTLY=nightly-2026-05-20
# The declared minimum Rust (`rust-version` of the workspace).
MSRV=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml)

# ensure_toolchain TOOLCHAIN [COMPONENT...]: installs TOOLCHAIN (minimal
# profile) with COMPONENTs unless each is there already; fails if rustup
# cannot.
ensure_toolchain() {
  local tc=$1
  shift
  local have
  have=$(rustup component list --toolchain "$tc" --installed 2>/dev/null || true)
  local missing=0 c
  if [[ -z "$have" ]]; then missing=1; fi
  for c in "$@"; do
    grep -q "^$c" <<<"$have" || missing=1
  done
  if [[ $missing == 1 ]]; then
    local comps=()
    if [[ $# -gt 0 ]]; then comps=(--component "$(IFS=,; echo "$*")"); fi
    rustup toolchain install "$tc" --profile minimal "${comps[@]}"
  fi
}

# use_nightly [COMPONENT...]: sets NIGHTLY to the pinned nightly, installed
# with COMPONENTs; where rustup cannot fetch it, to the `nightly` channel's
# toolchain (as installed, or installed now), said loudly: the run is then
# on a nightly that was not pinned.
use_nightly() {
  if ensure_toolchain "$NIGHTLY" "$@"; then
    return 0
  fi
  echo "toolchains: WARNING: $NIGHTLY could not be installed here; running on the nightly channel's toolchain instead" >&2
  NIGHTLY=nightly
  ensure_toolchain "$NIGHTLY" "$@"
  rustc +"$NIGHTLY" --version >&2
}
