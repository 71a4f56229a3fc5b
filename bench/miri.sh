#!/usr/bin/env bash
# The unit tests that touch no system call, under Miri (undefined behaviour, out-of-bounds and
# aliasing checks of the interpreter): the response-head, chunked, range, naming, redirect, auth and
# proxy-handshake code, plans, control files and input lists. Cookies (cookie_store and its public
# suffix list) and inflation (zlib-rs) take tens of minutes a test under Miri and are left out.
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
FILTERS=(http::head http::chunked http::range http::naming http::redirect http::auth http::proxy
         http::request plan:: store::control cli::input "$@")
# Tests that loop over millions of inputs (they run in the normal suite): hours under Miri.
SKIP=(--skip a_million_entries_stream --skip long_lines_are_accepted_up_to_the_limit
      --skip mutated_files_never_panic --skip from_done_matches_a_byte_map
      --skip every_truncation_is_an_error --skip hostile_counts_do_not_allocate
      --skip a_gzip_bomb --skip save_and_load --skip split_at_every_pair_of_boundaries
      --skip entry_points_accept_ordinary_input)
# Isolation off only for the clock (tests that build settings read the time); no file or socket.
MIRIFLAGS="${MIRIFLAGS:-} -Zmiri-disable-isolation" \
    cargo +nightly miri test --lib -- "${FILTERS[@]}" "${SKIP[@]}" 2>&1 | tee /var/tmp/ringdl-miri.log |
    grep -E '^(test result|error|failures:|test .* FAILED)|Undefined Behavior' || true
grep -q '^test result: ok' /var/tmp/ringdl-miri.log
