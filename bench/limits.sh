#!/usr/bin/env bash
# The rate limiter and the retry timer, measured (not asserted in tests): how close a download with
# --max-download-limit / --max-overall-download-limit comes to the limit over ~10 s, and how long a
# --retry-wait retry after a 503 actually waits. Usage: bench/limits.sh [--ringdl PATH]
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RINGDL="$REPO/target/release/ringdl"
[[ ${1:-} == --ringdl ]] && RINGDL=$2
[[ -x $RINGDL ]] || (cd "$REPO" && cargo build --release --quiet)
WORK=$(mktemp -d /var/tmp/ringdl-limits.XXXXXX)
chmod 755 "$WORK"
cleanup() {
    [[ -f $WORK/nginx.pid ]] && kill "$(cat "$WORK/nginx.pid")" 2>/dev/null
    [[ -n ${PY:-} ]] && kill "$PY" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/www" "$WORK/out" && chmod 755 "$WORK/www"
head -c $((40 << 20)) /dev/urandom > "$WORK/www/f.bin"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
cat > "$WORK/nginx.conf" <<CONF
daemon on; worker_processes 1; pid $WORK/nginx.pid; error_log $WORK/error.log;
events {}
http { access_log off; client_body_temp_path $WORK/t1; proxy_temp_path $WORK/t2; fastcgi_temp_path $WORK/t3;
  uwsgi_temp_path $WORK/t4; scgi_temp_path $WORK/t5; server { listen 127.0.0.1:$PORT; root $WORK/www; } }
CONF
nginx -p "$WORK" -c "$WORK/nginx.conf"
URL="http://127.0.0.1:$PORT/f.bin"

echo "| what | command | bytes | seconds | achieved | limit | error |"
echo "|---|---|---|---|---|---|---|"
measure() { # name limit-bytes-per-s args...
    local name=$1 limit=$2; shift 2
    rm -f "$WORK/out/"*
    local t0 t1 bytes
    t0=$(date +%s.%N)
    "$RINGDL" --no-conf -q --allow-overwrite=true -d "$WORK/out" "$@" >/dev/null
    t1=$(date +%s.%N)
    bytes=$(cat "$WORK/out/"* | wc -c)
    python3 - "$name" "$limit" "$bytes" "$t0" "$t1" "$*" <<'PY'
import sys
name, limit, n, t0, t1, args = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
secs = t1 - t0
rate = n / secs
print(f"| {name} | `ringdl {args.replace(chr(10), ' ')}` | {n} | {secs:.2f} | {rate/1048576:.3f} MiB/s | {limit/1048576:.3f} MiB/s | {100*(rate-limit)/limit:+.1f} % |")
PY
}
head -c $((10 << 20)) "$WORK/www/f.bin" > "$WORK/www/ten.bin"
measure "per download, 1 connection" $((1 << 20)) --max-download-limit=1M "http://127.0.0.1:$PORT/ten.bin"
measure "per download, -x4" $((4 << 20)) --max-download-limit=4M -x4 -k1M "$URL"
head -c $((20 << 20)) "$WORK/www/f.bin" > "$WORK/www/a.bin"
head -c $((20 << 20)) "$WORK/www/f.bin" > "$WORK/www/b.bin"
measure "overall, two downloads (-Z)" $((4 << 20)) --max-overall-download-limit=4M -Z \
    "http://127.0.0.1:$PORT/a.bin" "http://127.0.0.1:$PORT/b.bin"

# Retry timer: a server that answers 503 (Retry-After: 2 for one route) to the first request.
PYPORT=$(free_port)
python3 - "$PYPORT" "$WORK/www/ten.bin" <<'PY' &
import http.server, sys
port, path = int(sys.argv[1]), sys.argv[2]
data = open(path, "rb").read()[:100000]
seen = set()
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        if self.path not in seen:
            seen.add(self.path)
            self.send_response(503)
            if "after" in self.path:
                self.send_header("Retry-After", "2")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
PY
PY=$!
sleep 0.5
echo
echo "| retry | command | wall s | expected wait s |"
echo "|---|---|---|---|"
for spec in "retry-wait=1:/plain:1" "retry-wait=3:/plain2:3" "retry-wait=1:/after:2"; do
    IFS=: read -r opt path want <<<"$spec"
    t0=$(date +%s.%N)
    "$RINGDL" --no-conf -q --allow-overwrite=true -d "$WORK/out" --"$opt" "http://127.0.0.1:$PYPORT$path" >/dev/null
    t1=$(date +%s.%N)
    printf '| 503 then 200 | `ringdl --%s URL%s` | %.2f | %s |\n' "$opt" "$path" "$(echo "$t1 - $t0" | bc)" "$want"
done
