#!/usr/bin/env bash
# The engine's own `unsafe` (the reactors, the buffer pool, sys.rs) under AddressSanitizer: the
# reactor contract tests on io_uring and on epoll, the pool's tests, and the whole-engine
# simulation, built with -Zsanitizer=address (nightly). Use-after-free, out-of-bounds and
# double-free in the code that hands memory to the kernel would abort the run.
#
# Usage: bench/asan.sh [EXTRA TEST FILTERS...]
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
rustup toolchain list 2>/dev/null | grep -q '^nightly' || { echo "asan.sh: needs a nightly toolchain" >&2; exit 2; }
TARGET=$(rustc -vV | sed -n 's/^host: //p')
# Leak checks off: the reactors' tests deliberately keep a ring's table alive in one case.
RUSTFLAGS="-Zsanitizer=address" ASAN_OPTIONS="detect_leaks=0" RINGDL_SIM_SEEDS="${RINGDL_SIM_SEEDS:-200}" \
    cargo +nightly test --target "$TARGET" --target-dir target/asan --lib -- \
    engine::reactor:: engine::simulation:: engine::sys:: "$@" 2>&1 | tee /var/tmp/ringdl-asan.log |
    grep -E '^(test result|error)|ERROR: AddressSanitizer|FAILED' || true
grep -q '^test result: ok' /var/tmp/ringdl-asan.log
