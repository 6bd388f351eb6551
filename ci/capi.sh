#!/usr/bin/env bash
# The C library as a C user gets it: `make install` into a scratch prefix,
# then the epoll echo server example built with pkg-config alone (shared,
# and static against libutimer.a) and run against a client: it echoes, and
# closes the connection once it has been idle for its timeout. The C API's
# own tests (ASan + UBSan) run under `cargo test` (crates/utimer-capi/tests).
# First, include/utimer.h on its own, as strict C11 and as C++17, every
# warning an error: it needs no feature macro and no language of its user
# (installs Debian's g++ if there is no C++ compiler).
set -euo pipefail
cd "$(dirname "$0")/.."
cc=${CC:-cc}
cxx=${CXX:-c++}
if ! command -v "$cxx" >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends g++ >/dev/null
fi
for lang in "$cc -x c -std=c11" "$cxx -x c++ -std=c++17"; do
  # Included twice: the include guard holds. $lang splits into its words.
  # shellcheck disable=SC2086
  printf '#include <utimer.h>\n#include <utimer.h>\n' |
    $lang -Wall -Wextra -pedantic -Werror -fsyntax-only -I crates/utimer-capi/include -
  echo "utimer.h alone: ok ($lang -Wall -Wextra -pedantic -Werror)"
done
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
make -s install PREFIX="$prefix"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -o "$prefix/hello" crates/utimer-capi/examples/hello.c \
  $(pkg-config --cflags --libs utimer) -Wl,-rpath,"$prefix/lib"
"$prefix/hello"
src=crates/utimer-capi/examples/echo_server.c
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -o "$prefix/echo_shared" "$src" \
  $(pkg-config --cflags --libs utimer) -Wl,-rpath,"$prefix/lib"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -o "$prefix/echo_static" "$src" \
  $(pkg-config --cflags utimer) "$prefix/lib/libutimer.a" $(pkg-config --static --libs-only-l utimer | sed 's/-lutimer//')
for server in echo_shared echo_static; do
  python3 - "$prefix/$server" <<'PY'
import socket, subprocess, sys, time
srv = subprocess.Popen([sys.argv[1], "0", "200", "--once"], stdout=subprocess.PIPE, text=True)
try:
    port = int(srv.stdout.readline().split()[-1])
    c = socket.create_connection(("127.0.0.1", port), timeout=5)
    c.sendall(b"hello")
    assert c.recv(100) == b"hello", "no echo"
    start = time.monotonic()
    assert c.recv(100) == b"", "expected the idle close"
    idle = time.monotonic() - start
    assert idle >= 0.19, f"closed early: {idle:.3f} s"
    assert srv.wait(timeout=5) == 0
    print(f"{sys.argv[1].rsplit('/', 1)[1]}: echoed, closed after {idle * 1000:.0f} ms idle (timeout 200 ms)")
finally:
    if srv.poll() is None:
        srv.kill()
PY
done
