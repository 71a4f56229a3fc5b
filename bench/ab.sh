#!/usr/bin/env bash
# Two ringdl builds and aria2c, interleaved (the order rotates every round), on the same download
# over HTTPS (or HTTP) from nginx on loopback or over bench/link.sh's shaped veth link: CPU
# (user+sys) of each run, the medians of the same-round ratios, and a byte check of every output.
# For "did this change cost anything", which bench/run.sh cannot say when the machine itself
# changed between two of its runs. `small`: 300 files of 1-30 KB over HTTPS (`-Z -j16`), each run
# into a new directory after a sync, against curl -Z instead of aria2c; wall is the figure.
#
# Usage: bench/ab.sh OLD_RINGDL NEW_RINGDL [ROUNDS] [https|http|small] [--link RTT,RATE]
#                    [--conns N] [--size MIB]
# Defaults: 6 rounds, https, loopback, -x8 -s8, 1024 MiB. Needs nginx, openssl, aria2c (curl for
# small), GNU time, python3 (and root, ip and tc for --link; without them one line says so and
# loopback is used).
# Traffic stays on 127.0.0.1, or on the veth pair this script makes.
set -euo pipefail
OLD=$1 NEW=$2 ROUNDS=${3:-6} SCHEME=${4:-https}
shift $(($# < 4 ? $# : 4))
LINK="" CONNS=8 MIB=1024
while (($#)); do
    case $1 in
        --link) LINK=${2:?}; shift 2 ;;
        --conns) CONNS=${2:?}; shift 2 ;;
        --size) MIB=${2:?}; shift 2 ;;
        *) echo "ab.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
NETNS=""
NS_EXEC=()
SERVER_IP=127.0.0.1
# shellcheck source=bench/link.sh
source "$(dirname "${BASH_SOURCE[0]}")/link.sh"
WORK=$(mktemp -d /var/tmp/ringdl-ab.XXXXXX)
chmod 755 "$WORK"
cleanup() {
    [[ -f $WORK/nginx.pid ]] && kill "$(cat "$WORK/nginx.pid")" 2>/dev/null
    sleep 0.2
    teardown_link
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/www" "$WORK/out" "$WORK/logs" && chmod 755 "$WORK/www"
THIRD=aria2c
if [[ $SCHEME == small ]]; then
    THIRD=curl
    mkdir -p "$WORK/www/small"
    python3 - "$WORK/www/small" <<'PY'
import os, random, sys
rng = random.Random(300)
for i in range(300):
    with open(os.path.join(sys.argv[1], f"s{i:04d}.bin"), "wb") as f:
        f.write(os.urandom(rng.randint(1000, 30000)))
PY
else
    head -c $((MIB << 20)) /dev/urandom > "$WORK/www/big.bin"
fi
WHERE=loopback
if [[ -n $LINK ]] && setup_link "$LINK"; then
    WHERE=$LINK_DESC
fi
(
    cd "$WORK"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -keyout ca.key \
        -out ca.pem -subj "/CN=ringdl ab CA" -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign"
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout key.pem -out server.csr \
        -subj "/CN=localhost"
    printf '%s\n' "subjectAltName=IP:127.0.0.1,IP:$LINK_SERVER" "basicConstraints=critical,CA:FALSE" \
        "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
        -extfile server.ext -out cert.pem
) >/dev/null 2>&1
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
SSL=""
[[ $SCHEME != http ]] && SSL="ssl; ssl_protocols TLSv1.2 TLSv1.3; ssl_certificate $WORK/cert.pem; ssl_certificate_key $WORK/key.pem"
cat > "$WORK/nginx.conf" <<CONF
daemon on; worker_processes 2; pid $WORK/nginx.pid; error_log $WORK/logs/error.log;
events {}
http { access_log off; sendfile on; client_body_temp_path $WORK/t1; proxy_temp_path $WORK/t2;
  fastcgi_temp_path $WORK/t3; uwsgi_temp_path $WORK/t4; scgi_temp_path $WORK/t5;
  server { listen $SERVER_IP:$PORT $SSL; root $WORK/www; } }
CONF
"${NS_EXEC[@]}" nginx -p "$WORK" -c "$WORK/nginx.conf" -e "$WORK/logs/error.log"
URL="$SCHEME://$SERVER_IP:$PORT/big.bin"
SMALL_URLS=()
for ((i = 0; i < 300; i++)); do
    SMALL_URLS+=("$(printf 'https://%s:%s/small/s%04d.bin' "$SERVER_IP" "$PORT" "$i")")
done
tools=(old new "$THIRD")
BAD=0
declare -A BIN=([old]=$OLD [new]=$NEW [aria2c]=aria2c [curl]=curl)
for ((r = 1; r <= ROUNDS; r++)); do
    for ((k = 0; k < 3; k++)); do
        t=${tools[$(((r + k) % 3))]}
        rm -rf "$WORK/out"
        mkdir "$WORK/out"
        sync
        # Wall from bash's microsecond clock (GNU time's %e has 10 ms steps, too coarse for
        # the small files); CPU and peak RSS from GNU time.
        TIME=(/usr/bin/time -f "%U %S %M" -o "$WORK/one")
        t0=$EPOCHREALTIME
        if [[ $SCHEME != small ]]; then
            "${TIME[@]}" "${BIN[$t]}" --no-conf -q -x"$CONNS" -s"$CONNS" --ca-certificate="$WORK/ca.pem" \
                --allow-overwrite=true -d "$WORK/out" "$URL" >/dev/null 2>&1 || true
            t1=$EPOCHREALTIME
            cmp -s "$WORK/out/big.bin" "$WORK/www/big.bin" || { echo "round $r: $t's output differs"; BAD=1; }
        elif [[ $t == curl ]]; then
            "${TIME[@]}" curl -sS --fail -Z --parallel-max 16 --cacert "$WORK/ca.pem" \
                --output-dir "$WORK/out" --remote-name-all "${SMALL_URLS[@]}" >/dev/null 2>&1 || true
            t1=$EPOCHREALTIME
            diff -rq "$WORK/out" "$WORK/www/small" >/dev/null || { echo "round $r: $t's output differs"; BAD=1; }
        else
            "${TIME[@]}" "${BIN[$t]}" --no-conf -q -Z -j16 --ca-certificate="$WORK/ca.pem" \
                --allow-overwrite=true -d "$WORK/out" "${SMALL_URLS[@]}" >/dev/null 2>&1 || true
            t1=$EPOCHREALTIME
            diff -rq "$WORK/out" "$WORK/www/small" >/dev/null || { echo "round $r: $t's output differs"; BAD=1; }
        fi
        wall=$(python3 -c "print(f'{$t1 - $t0:.6f}')")
        echo "$r $t $wall $(tail -n1 "$WORK/one")" >> "$WORK/times"
    done
done
python3 - "$WORK/times" "$OLD" "$NEW" "$SCHEME" "$ROUNDS" "$MIB" "$CONNS" "$WHERE" "$THIRD" <<'PY'
import statistics as st, sys
path, old, new, scheme, rounds, mib, conns, where, third = sys.argv[1:]
by = {}
for line in open(path):
    if line.startswith("Command"):
        continue
    r, t, wall, user, sys_, rss = line.split()
    by.setdefault(r, {})[t] = (float(user) + float(sys_), float(wall), int(rss) / 1024)
def med(f):
    v = sorted(f(x) for x in by.values())
    return f"{st.median(v):.2f}× ({v[0]:.2f}–{v[-1]:.2f})"
if scheme == "small":
    print(f"300 small files over HTTPS, -Z -j16, {where}, {rounds} rounds; old = {old}, new = {new}")
else:
    print(f"{scheme}, {mib} MiB, -x{conns} -s{conns}, {where}, {rounds} rounds; old = {old}, new = {new}")
for t in ("old", "new", third):
    print(f"  {t:6} CPU s median {st.median(x[t][0] for x in by.values()):.3f}, "
          f"wall s {st.median(x[t][1] for x in by.values()):.3f}, peak RSS MiB "
          f"{max(x[t][2] for x in by.values()):.1f}")
print("  new / old CPU:   ", med(lambda x: x["new"][0] / x["old"][0]))
print(f"  old / {third} CPU:", med(lambda x: x["old"][0] / x[third][0]))
print(f"  new / {third} CPU:", med(lambda x: x["new"][0] / x[third][0]))
print("  new / old wall:  ", med(lambda x: x["new"][1] / x["old"][1]))
if scheme == "small":
    print(f"  old / {third} wall:", med(lambda x: x["old"][1] / x[third][1]))
    print(f"  new / {third} wall:", med(lambda x: x["new"][1] / x[third][1]))
PY
(( BAD == 0 )) || { echo "ab.sh: an output differed from the source"; exit 1; }
