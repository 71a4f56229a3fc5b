#!/usr/bin/env bash
# Coverage-guided fuzzing of the parsers of untrusted input (src/fuzzing.rs; targets in
# bench/fuzz/fuzz_targets/): each target runs for SECONDS under libFuzzer, two at a time (one per
# core), from the corpus kept in bench/fuzz/corpus/TARGET (grown by earlier runs). Prints per
# target the executions, the coverage and the crashes this run found; a crash's input is left in
# bench/fuzz/artifacts/TARGET/ to become a case in tests/fuzz-regressions/TARGET/.
#
# Usage: bench/fuzz.sh [SECONDS] [TARGET...]   (default 60 s, every target)
# Needs a nightly toolchain (rustup toolchain install nightly) and cargo-fuzz (cargo install
# cargo-fuzz).
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FUZZ="$REPO/bench/fuzz"
SECS=${1:-60}
shift || true
[[ $SECS =~ ^[0-9]+$ ]] || { echo "fuzz.sh: SECONDS must be a number, not '$SECS'" >&2; exit 2; }
TARGETS=("$@")
if [[ ${#TARGETS[@]} -eq 0 ]]; then
    for f in "$FUZZ"/fuzz_targets/*.rs; do TARGETS+=("$(basename "$f" .rs)"); done
fi
cargo fuzz --version >/dev/null 2>&1 || { echo "fuzz.sh: cargo-fuzz is missing: cargo install cargo-fuzz" >&2; exit 2; }
rustup toolchain list 2>/dev/null | grep -q '^nightly' || { echo "fuzz.sh: a nightly toolchain is missing: rustup toolchain install nightly" >&2; exit 2; }
LOG=$(mktemp -d /var/tmp/ringdl-fuzz.XXXXXX)
touch "$LOG/start"
cd "$REPO"
echo "fuzz.sh: building ${#TARGETS[@]} targets (logs in $LOG)"
for t in "${TARGETS[@]}"; do
    cargo +nightly fuzz build --fuzz-dir "$FUZZ" -O "$t" >>"$LOG/build.log" 2>&1 ||
        { tail -30 "$LOG/build.log" >&2; exit 1; }
done
run_one() {
    local t=$1
    mkdir -p "$FUZZ/corpus/$t" "$FUZZ/artifacts/$t"
    cargo +nightly fuzz run --fuzz-dir "$FUZZ" -O "$t" "$FUZZ/corpus/$t" -- \
        -max_total_time="$SECS" -print_final_stats=1 -artifact_prefix="$FUZZ/artifacts/$t/" \
        -rss_limit_mb=1024 >"$LOG/$t.log" 2>&1
    echo $? >"$LOG/$t.rc"
}
export -f run_one
export FUZZ SECS LOG
printf '%s\n' "${TARGETS[@]}" | xargs -P "$(nproc)" -I{} bash -c 'run_one {}'
printf '\n| target | seconds | executions | exec/s | coverage (edges) | corpus | crashes |\n|---|---|---|---|---|---|---|\n'
status=0
for t in "${TARGETS[@]}"; do
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$LOG/$t.log" | grep -o '[0-9]*$' | tail -1)
    rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$LOG/$t.log" | grep -o '[0-9]*$' | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$LOG/$t.log" | tail -1 | grep -o '[0-9]*')
    corpus=$(find "$FUZZ/corpus/$t" -type f | wc -l)
    crashes=$(find "$FUZZ/artifacts/$t" -type f -newer "$LOG/start" | wc -l)
    [[ $crashes -gt 0 || $(cat "$LOG/$t.rc") != 0 ]] && status=1
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$t" "$SECS" "${execs:-?}" "${rate:-?}" "${cov:-?}" "$corpus" "$crashes"
done
[[ $status == 0 ]] || echo "fuzz.sh: crashes or failed runs: see bench/fuzz/artifacts/ and $LOG" >&2
exit $status
