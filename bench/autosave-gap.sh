#!/usr/bin/env bash
# How long the loop thread goes without entering the ring while control files are autosaved: a
# rate-limited download (so it runs ~10 s) with --auto-save-interval=1, traced with strace; the
# longest gap between two io_uring_enter calls of the loop thread is the longest time every
# transfer stood still. Also says which thread ran the control-file syscalls (fsync, rename).
#
# Usage: bench/autosave-gap.sh [RINGDL ...]   (default: target/release/ringdl)
# Needs nginx, strace, python3. Traffic stays on 127.0.0.1; everything it starts, it stops.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BINS=("$@")
[[ ${#BINS[@]} -gt 0 ]] || BINS=("$REPO/target/release/ringdl")
WORK=$(mktemp -d /var/tmp/ringdl-gap.XXXXXX)
chmod 755 "$WORK"
cleanup() {
    [[ -f $WORK/nginx.pid ]] && kill "$(cat "$WORK/nginx.pid")" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/www" "$WORK/out" && chmod 755 "$WORK/www"
head -c $((200 << 20)) /dev/urandom > "$WORK/www/f.bin"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$WORK/nginx.conf" <<CONF
daemon on; worker_processes 1; pid $WORK/nginx.pid; error_log $WORK/error.log;
events {}
http { access_log off; client_body_temp_path $WORK/t1; proxy_temp_path $WORK/t2; fastcgi_temp_path $WORK/t3;
  uwsgi_temp_path $WORK/t4; scgi_temp_path $WORK/t5; server { listen 127.0.0.1:$PORT; root $WORK/www; } }
CONF
nginx -p "$WORK" -c "$WORK/nginx.conf"
for bin in "${BINS[@]}"; do
    rm -rf "$WORK/out"/*
    strace -f -tt -T -e trace=io_uring_enter,fsync,fdatasync,rename,renameat,renameat2 \
        -o "$WORK/trace" "$bin" --no-conf -q -d "$WORK/out" -x4 -s4 --max-download-limit=20M \
        --auto-save-interval=1 "http://127.0.0.1:$PORT/f.bin" || true
    cmp -s "$WORK/out/f.bin" "$WORK/www/f.bin" && ok=identical || ok=DIFFERENT
    python3 - "$WORK/trace" "$bin" "$ok" <<'PY'
import re, sys
trace, binary, ok = sys.argv[1:]
lines = open(trace).read().splitlines()
main = int(lines[0].split()[0])
def t(s):
    h, m, rest = s.split(":")
    return int(h) * 3600 + int(m) * 60 + float(rest)
enters, saves, pending = [], {}, {}
for line in lines:
    # A call another thread interrupted in the trace is split: "name(... <unfinished ...>", then
    # "<... name resumed> ...) = r <duration>" (the duration counts from the first line).
    m = re.match(r"(\d+)\s+(\S+) (\w+)\(.*<unfinished \.\.\.>$", line)
    if m:
        pending[(int(m[1]), m[3])] = t(m[2])
        continue
    m = re.match(r"(\d+)\s+(\S+) <\.\.\. (\w+) resumed>.*<([\d.]+)>$", line)
    if m:
        pid, name, dur = int(m[1]), m[3], float(m[4])
        start = pending.pop((pid, name), t(m[2]) - dur)
    else:
        m = re.match(r"(\d+)\s+(\S+) (\w+)\(.*<([\d.]+)>$", line)
        if not m:
            continue
        pid, name, dur = int(m[1]), m[3], float(m[4])
        start = t(m[2])
    if name == "io_uring_enter" and pid == main:
        enters.append((start, start + dur))
    elif name != "io_uring_enter":
        who = "loop thread" if pid == main else "another thread"
        saves.setdefault(who, []).append(dur)
enters.sort()
gaps = [b[0] - a[1] for a, b in zip(enters, enters[1:])]
gaps.sort()
p99 = gaps[int(len(gaps) * 0.99)] if gaps else 0
print(f"{binary}: {len(enters)} ring entries; longest gap between them {max(gaps) * 1000:.2f} ms, "
      f"99th percentile {p99 * 1000:.3f} ms; file {ok}")
for who, d in sorted(saves.items()):
    print(f"  fsync/rename on the {who}: {len(d)} calls, {sum(d) * 1000:.1f} ms in all, longest {max(d) * 1000:.2f} ms")
PY
done
