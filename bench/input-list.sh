#!/usr/bin/env bash
# Peak memory of ringdl against the length of an -i list: lists of 10 000, 100 000 and 1 000 000
# entries, each a tiny file from a private nginx on loopback, all written over one output name.
# A list is read one entry at a time and at most 1000 results are kept, so peak RSS should not grow
# with the list. Usage: bench/input-list.sh [--sizes "10000 100000 1000000"] [--ringdl PATH]
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SIZES="10000 100000 1000000"
RINGDL="$REPO/target/release/ringdl"
while [[ $# -gt 0 ]]; do
    case $1 in
        --sizes) SIZES=$2; shift 2 ;;
        --ringdl) RINGDL=$2; shift 2 ;;
        *) echo "usage: $0 [--sizes LIST] [--ringdl PATH]" >&2; exit 2 ;;
    esac
done
[[ -x $RINGDL ]] || (cd "$REPO" && cargo build --release --quiet)
WORK=$(mktemp -d /var/tmp/ringdl-list.XXXXXX)
trap '[[ -f $WORK/nginx.pid ]] && kill "$(cat "$WORK/nginx.pid")" 2>/dev/null; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/www" "$WORK/logs" "$WORK/out"
chmod 755 "$WORK" "$WORK/www"   # nginx's workers may run as another user
printf 'x' > "$WORK/www/tiny"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$WORK/nginx.conf" <<CONF
daemon on; worker_processes 1; pid $WORK/nginx.pid; error_log $WORK/logs/error.log;
events { worker_connections 1024; }
http { access_log off; keepalive_requests 100000000; client_body_temp_path $WORK/t1; proxy_temp_path $WORK/t2;
  fastcgi_temp_path $WORK/t3; uwsgi_temp_path $WORK/t4; scgi_temp_path $WORK/t5;
  server { listen 127.0.0.1:$PORT; root $WORK/www; } }
CONF
nginx -p "$WORK" -c "$WORK/nginx.conf"
echo "| entries | list size | wall s | peak RSS MiB | exit |"
echo "|---|---|---|---|---|"
for n in $SIZES; do
    python3 - "$n" "$PORT" > "$WORK/list.txt" <<'PY'
import sys
n, port = int(sys.argv[1]), sys.argv[2]
out = sys.stdout
for i in range(n):
    out.write(f"http://127.0.0.1:{port}/tiny?{i}\n  out=same.bin\n")
PY
    size=$(du -h "$WORK/list.txt" | cut -f1)
    /usr/bin/time -f "%e %M" -o "$WORK/time" "$RINGDL" --no-conf -q -j8 --allow-overwrite=true \
        --download-result=hide -d "$WORK/out" -i "$WORK/list.txt" && rc=0 || rc=$?
    read -r wall rss < <(tail -n 1 "$WORK/time")
    printf '| %s | %s | %s | %s | %s |\n' "$n" "$size" "$wall" "$(awk -v k="$rss" 'BEGIN { printf "%.1f", k / 1024 }')" "$rc"
done
