#!/usr/bin/env bash
# The unit tests that touch no system call, under Miri (undefined behaviour, out-of-bounds and
# aliasing checks of the interpreter): the response-head, chunked, range, naming, redirect, auth and
# proxy-handshake code, plans, control files and checksums, input lists and the option table, the
# RPC envelope, HTTP server side and WebSocket frames, and the engine's own `unsafe` that Miri can
# run (the buffer pool on its anonymous mapping, the operation table, socket addresses). Cookies
# (cookie_store and its public suffix list), inflation (zlib-rs) and the generated completions take
# tens of minutes a test under Miri and are left out; the reactors make system calls Miri cannot
# run, and bench/asan.sh covers them with AddressSanitizer instead.
#
# Usage: bench/miri.sh [EXTRA TEST FILTERS...]
# Needs the nightly toolchain with the miri and rust-src components (added here if missing).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^miri' ||
    rustup component add miri rust-src --toolchain nightly
FILTERS=(http::head http::chunked http::range http::naming http::redirect http::auth http::proxy
         http::request plan:: store::control store::checksum cli::input cli::defs cli::table
         engine::reactor::pool engine::reactor::table engine::sys rpc:: ui::exit ui::format
         ui::tests "$@")
# Tests that touch the file system or run programs (Miri cannot run those calls). Tests that
# loop over many inputs take fewer under cfg(miri) instead of being skipped.
SKIP=(--skip save_and_load --skip same_facts_as_aria2c)
# Isolation off only for the clock (tests that build settings read the time); no file or socket.
MIRIFLAGS="${MIRIFLAGS:-} -Zmiri-disable-isolation" \
    cargo +nightly miri test --lib -- "${FILTERS[@]}" "${SKIP[@]}" --test-threads=1 2>&1 | tee /var/tmp/ringdl-miri.log |
    grep -E '^(test result|error|failures:|test .* FAILED)|Undefined Behavior' || true
grep -q '^test result: ok' /var/tmp/ringdl-miri.log
