#!/usr/bin/env bash
# The deterministic simulation at scale: runs the engine's simulation tests (src/engine/simulation/:
# single downloads, input lists with a third as many seeds per block, daemons driven over RPC with a
# fifth as many) over many seeds in an optimised build with debug assertions on (Cargo's `sim`
# profile: the engine's per-step checks are the invariants, and a block missing from the pool at
# the end is a panic, so a failure), on every core, and prints how many ran, how long it took and
# which failed (each with the command that replays it).
#
# Usage: bench/sim.sh [SEEDS] [FIRST]   (default 1000000 seeds from seed 1)
# Seeds are split into blocks of 10000, run by `nproc` workers at once.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SEEDS=${1:-1000000}
FIRST=${2:-1}
BLOCK=10000
JOBS=$(nproc)
cd "$REPO"
# One build, whose binary is then copied: editing the tree while this runs changes nothing here.
BIN=$(cargo test --profile sim --lib --no-run --message-format=json 2>/dev/null |
    python3 -c 'import sys, json
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "ringdl" and m["profile"]["test"]:
        print(m["executable"])')
LOG=$(mktemp -d /var/tmp/ringdl-sim.XXXXXX)
[[ -x $BIN ]] || { echo "sim.sh: the test build failed" >&2; exit 2; }
cp "$BIN" "$LOG/sim-tests"
BIN="$LOG/sim-tests"
start=$(date +%s)
blocks=$(( (SEEDS + 2 * BLOCK - 1) / (2 * BLOCK) ))
seq 0 $((blocks - 1)) | xargs -P "$JOBS" -I{} sh -c \
    "RINGDL_SIM_FIRST=\$(( $FIRST + {} * 2 * $BLOCK )) RINGDL_SIM_SEEDS=$BLOCK \
     '$BIN' simulated_ --test-threads=3 --nocapture > '$LOG/block-{}.log' 2>&1 || true"
end=$(date +%s)
ran=$(( blocks * 2 * BLOCK ))
lists=$(( blocks * (BLOCK / 3) ))
daemons=$(( blocks * (BLOCK / 5) ))
failed=$(grep -h "FAILED:" "$LOG"/block-*.log | sort -u || true)
echo "simulation: $ran seeds ($FIRST..$((FIRST + ran - 1))), $lists list seeds and $daemons daemon seeds in $((end - start)) s on $JOBS cores"
# How often each fault class fired, over every block (single downloads and lists).
cat "$LOG"/block-*.log | python3 -c 'import sys, collections
counts = collections.Counter()
for line in sys.stdin:
    if "faults fired:" in line:
        for word in line.split("faults fired:", 1)[1].split():
            name, _, n = word.rpartition("=")
            if n.isdigit():
                counts[name] += int(n)
print("faults fired: " + (" ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "none"))'
# Every block must have run to its end (a block that died without a report is a failure too).
done_blocks=$(grep -l "^simulation: seeds" "$LOG"/block-*.log | wc -l)
if (( done_blocks != blocks )); then
    echo "only $done_blocks of $blocks blocks reported: see $LOG" >&2
    exit 1
fi
if [[ -n $failed ]]; then
    echo "$failed"
    grep -h "replay:" "$LOG"/block-*.log | sort -u
    echo "logs: $LOG"
    exit 1
fi
echo "no seed failed"
rm -rf "$LOG"
