#!/usr/bin/env bash
# The soak at length: tests/soak.rs (two long-lived ringdl processes, one per reactor, working
# through a long mixed input list from the in-repo server, with cut and reset responses, sampled
# every second for RSS, open descriptors, operations in flight, connections, blocks out and
# download places) for SECONDS, in a release build. Prints the test's summary (what goes into
# bench/RESULTS.md); exits non-zero if anything climbed or a file came out wrong.
#
# Usage: bench/soak.sh [SECONDS]   (default 1800)
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECS=${1:-1800}
[[ $SECS =~ ^[0-9]+$ ]] || { echo "soak.sh: SECONDS must be a number, not '$SECS'" >&2; exit 2; }
cd "$REPO"
echo "soak.sh: $SECS s at $(git rev-parse --short HEAD), started $(date -u +%FT%TZ)"
LOG=/var/tmp/ringdl-soak.log
RINGDL_SOAK_SECS=$SECS cargo test --release --test tests soak:: -- --nocapture --test-threads=1 >"$LOG" 2>&1
rc=$?
grep -E '^(soak:|uring:|portable:|test result)' "$LOG"
[[ $rc == 0 ]] || { grep -A3 'panicked' "$LOG"; echo "soak.sh: failed (whole output in $LOG)" >&2; }
exit $rc
