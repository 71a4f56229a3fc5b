#!/usr/bin/env bash
# The unit tests that touch no system call, under Miri (undefined behaviour, out-of-bounds and
# aliasing checks of the interpreter): the HTTP parsers, ranges and plans, control files, the
# command line and input lists, cookies, netrc, proxies' handshakes and the fuzzing entry points.
# The engine's own `unsafe` (reactor, sys) makes system calls Miri cannot run; bench/asan.sh covers
# it with AddressSanitizer instead.
#
# Usage: bench/miri.sh [EXTRA TEST FILTERS...]
# Needs the nightly toolchain with the miri and rust-src components (added here if missing).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^miri' ||
    rustup component add miri rust-src --toolchain nightly
FILTERS=(http:: plan:: store:: cli::input fuzzing:: "$@")
# Isolation off only for the clock (tests that build settings read the time); no file or socket.
MIRIFLAGS="${MIRIFLAGS:-} -Zmiri-disable-isolation" \
    cargo +nightly miri test --lib -- "${FILTERS[@]}" 2>&1 | tee /var/tmp/ringdl-miri.log |
    grep -E '^(test result|error|failures:|test .* FAILED)|Undefined Behavior' || true
grep -q '^test result: ok' /var/tmp/ringdl-miri.log
