#!/usr/bin/env bash
# Two ringdl builds and aria2c, interleaved (the order rotates every round), on the same 1 GiB
# download over HTTPS (or HTTP) from nginx on loopback: CPU (user+sys) of each run, the median of
# the same-round ratios, and a byte check of every output. For "did this change cost anything",
# which bench/run.sh cannot say when the machine itself changed between two of its runs.
#
# Usage: bench/ab.sh OLD_RINGDL NEW_RINGDL [ROUNDS] [https|http]   (default 6 rounds, https)
# Needs nginx, openssl, aria2c, GNU time, python3. Traffic stays on 127.0.0.1.
set -euo pipefail
OLD=$1 NEW=$2 ROUNDS=${3:-6} SCHEME=${4:-https}
WORK=$(mktemp -d /var/tmp/ringdl-ab.XXXXXX)
chmod 755 "$WORK"
cleanup() {
    [[ -f $WORK/nginx.pid ]] && kill "$(cat "$WORK/nginx.pid")" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/www" "$WORK/out" "$WORK/logs" && chmod 755 "$WORK/www"
head -c $((1 << 30)) /dev/urandom > "$WORK/www/big.bin"
(
    cd "$WORK"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -keyout ca.key \
        -out ca.pem -subj "/CN=ringdl ab CA" -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign"
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout key.pem -out server.csr \
        -subj "/CN=localhost"
    printf '%s\n' "subjectAltName=IP:127.0.0.1" "basicConstraints=critical,CA:FALSE" \
        "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
        -extfile server.ext -out cert.pem
) >/dev/null 2>&1
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
SSL=""
[[ $SCHEME == https ]] && SSL="ssl; ssl_protocols TLSv1.2 TLSv1.3; ssl_certificate $WORK/cert.pem; ssl_certificate_key $WORK/key.pem"
cat > "$WORK/nginx.conf" <<CONF
daemon on; worker_processes 2; pid $WORK/nginx.pid; error_log $WORK/logs/error.log;
events {}
http { access_log off; sendfile on; client_body_temp_path $WORK/t1; proxy_temp_path $WORK/t2;
  fastcgi_temp_path $WORK/t3; uwsgi_temp_path $WORK/t4; scgi_temp_path $WORK/t5;
  server { listen 127.0.0.1:$PORT $SSL; root $WORK/www; } }
CONF
nginx -p "$WORK" -c "$WORK/nginx.conf" -e "$WORK/logs/error.log"
URL="$SCHEME://127.0.0.1:$PORT/big.bin"
tools=(old new aria2c)
declare -A BIN=([old]=$OLD [new]=$NEW [aria2c]=aria2c)
for ((r = 1; r <= ROUNDS; r++)); do
    for ((k = 0; k < 3; k++)); do
        t=${tools[$(((r + k) % 3))]}
        rm -f "$WORK/out"/*
        sync
        /usr/bin/time -f "$r $t %e %U %S %M" -a -o "$WORK/times" "${BIN[$t]}" --no-conf -q -x8 -s8 \
            --ca-certificate="$WORK/ca.pem" --allow-overwrite=true -d "$WORK/out" "$URL" >/dev/null 2>&1 || true
        cmp -s "$WORK/out/big.bin" "$WORK/www/big.bin" || echo "round $r: $t's output differs"
    done
done
python3 - "$WORK/times" "$OLD" "$NEW" "$SCHEME" "$ROUNDS" <<'PY'
import statistics as st, sys
path, old, new, scheme, rounds = sys.argv[1:]
by = {}
for line in open(path):
    if line.startswith("Command"):
        continue
    r, t, wall, user, sys_, rss = line.split()
    by.setdefault(r, {})[t] = (float(user) + float(sys_), float(wall), int(rss) / 1024)
def med(f):
    v = sorted(f(x) for x in by.values())
    return f"{st.median(v):.2f}× ({v[0]:.2f}–{v[-1]:.2f})"
print(f"{scheme}, 1 GiB, -x8 -s8, {rounds} rounds; old = {old}, new = {new}")
for t in ("old", "new", "aria2c"):
    print(f"  {t:6} CPU s median {st.median(x[t][0] for x in by.values()):.2f}, "
          f"wall s {st.median(x[t][1] for x in by.values()):.2f}, peak RSS MiB "
          f"{max(x[t][2] for x in by.values()):.1f}")
print("  new / old CPU:   ", med(lambda x: x["new"][0] / x["old"][0]))
print("  old / aria2c CPU:", med(lambda x: x["old"][0] / x["aria2c"][0]))
print("  new / aria2c CPU:", med(lambda x: x["new"][0] / x["aria2c"][0]))
PY
