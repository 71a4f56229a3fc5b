#!/usr/bin/env bash
# ringdl benchmark: ringdl (io_uring, and its portable epoll reactor) vs aria2c vs curl, from a private nginx
# on loopback, in interleaved rounds.  See bench/README.md for what each figure
# means.  Usage: bench/run.sh [--rounds N] [--size 1G] [--quick] [--help]
set -uo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BENCH_DIR/.." && pwd)
ORIG_ARGS=("$@")

usage() {
    cat <<'EOF'
bench/run.sh [options]

  --rounds N        interleaved rounds (default 5; --quick: 1)
  --size SIZE       size of the large file, e.g. 1G, 256M, 64M (default 1G; --quick: 64M)
  --small N         number of small files, 1-30 KB each (default 300; --quick: 30)
  --quick           1 round, 64 MiB, 30 small files: a one-minute check of the harness
  --dir DIR         work directory on a real disk (default /var/tmp/ringdl-bench)
  --out FILE        where to write RESULTS.md (default: bench/RESULTS.md for a full run in
                    which every ringdl run succeeded; otherwise the run's results dir)
  --tools LIST      comma list out of ringdl,portable,aria2c,aria2c-best,curl,sftp (sftp:
                    OpenSSH's client, for the sftp scenario only; default
                    ringdl,portable,aria2c,curl, and aria2c-best too with --link; portable is
                    ringdl with --engine=portable; aria2c-best is aria2c with the settings its
                    users pick for speed: -x16 -s16 -k1M --file-allocation=falloc
                    --disk-cache=64M, whatever --conns says)
  --scenarios LIST  comma list out of https,http,small,strace,ftp,ftpsmall,sftp (default the
                    first four; ftp is the large file from a private vsftpd, anonymous, passive
                    mode; ftpsmall the small files from it; sftp the large file from a private
                    sshd, logged in with a password)
  --ringdl PATH     use this ringdl binary instead of building target/release/ringdl
  --no-build        do not run cargo build --release; use target/release/ringdl as it is
  --timeout SEC     kill a run after SEC seconds (default 600)
  --warmup N        unmeasured warm-up rounds before the measured ones (default 1; --quick: 0)
  --strace-size S   size of the file for the strace run (default 64M)
  --conns N         connections per large download: -x N -s N for ringdl and aria2c (default 8)
  --link RTT,RATE   a real-network link instead of loopback: nginx in a network namespace of its
                    own behind a veth pair with MTU 1500, tc netem adding RTT/2 each way and
                    shaping each direction to RATE (e.g. --link 20ms,1gbit). Needs root, ip and
                    tc; if the link cannot be made, one line says why and loopback is used.
                    Without sch_netem, tbf shapes and bench/netdelay (NFQUEUE; needs iptables
                    and cargo) holds the packets the server receives for the RTT.
  -h, --help        this text

Needs: nginx, aria2c, curl, openssl, fincore, strace, GNU time (/usr/bin/time), python3.
Traffic goes to 127.0.0.1 only, or with --link only over the veth pair this script makes (and
removes, with its namespace, on exit).
EOF
}

die() { echo "run.sh: $*" >&2; exit 2; }
note() { echo "== $*" >&2; }

to_bytes() { # 1G, 64M, 512K, 1000 -> bytes (binary units)
    local v=${1^^}
    case $v in
        *GIB|*G) v=${v%%G*}; echo $((v * 1024 * 1024 * 1024)) ;;
        *MIB|*M) v=${v%%M*}; echo $((v * 1024 * 1024)) ;;
        *KIB|*K) v=${v%%K*}; echo $((v * 1024)) ;;
        *[!0-9]*|'') return 1 ;;
        *) echo "$v" ;;
    esac
}

# ---------------------------------------------------------------- options
ROUNDS=""; SIZE=""; SMALL_N=""; QUICK=0; WORK=/var/tmp/ringdl-bench; OUT_MD=""
TOOLS_OPT=""; SCEN_OPT="https,http,small,strace"
RINGDL_OPT=""; BUILD=1; TIMEOUT=600; STRACE_SIZE=64M; WARMUP=""; CONNS=8; LINK=""
while [[ $# -gt 0 ]]; do
    case $1 in
        --rounds) ROUNDS=${2:?}; shift 2 ;;
        --rounds=*) ROUNDS=${1#*=}; shift ;;
        --size) SIZE=${2:?}; shift 2 ;;
        --size=*) SIZE=${1#*=}; shift ;;
        --small) SMALL_N=${2:?}; shift 2 ;;
        --small=*) SMALL_N=${1#*=}; shift ;;
        --quick) QUICK=1; shift ;;
        --dir) WORK=${2:?}; shift 2 ;;
        --dir=*) WORK=${1#*=}; shift ;;
        --out) OUT_MD=${2:?}; shift 2 ;;
        --out=*) OUT_MD=${1#*=}; shift ;;
        --tools) TOOLS_OPT=${2:?}; shift 2 ;;
        --tools=*) TOOLS_OPT=${1#*=}; shift ;;
        --scenarios) SCEN_OPT=${2:?}; shift 2 ;;
        --scenarios=*) SCEN_OPT=${1#*=}; shift ;;
        --ringdl) RINGDL_OPT=${2:?}; shift 2 ;;
        --ringdl=*) RINGDL_OPT=${1#*=}; shift ;;
        --no-build) BUILD=0; shift ;;
        --timeout) TIMEOUT=${2:?}; shift 2 ;;
        --timeout=*) TIMEOUT=${1#*=}; shift ;;
        --warmup) WARMUP=${2:?}; shift 2 ;;
        --warmup=*) WARMUP=${1#*=}; shift ;;
        --strace-size) STRACE_SIZE=${2:?}; shift 2 ;;
        --strace-size=*) STRACE_SIZE=${1#*=}; shift ;;
        --conns) CONNS=${2:?}; shift 2 ;;
        --conns=*) CONNS=${1#*=}; shift ;;
        --link) LINK=${2:?}; shift 2 ;;
        --link=*) LINK=${1#*=}; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done
if [[ $QUICK == 1 ]]; then
    : "${ROUNDS:=1}" "${SIZE:=64M}" "${SMALL_N:=30}" "${WARMUP:=0}"
else
    : "${ROUNDS:=5}" "${SIZE:=1G}" "${SMALL_N:=300}" "${WARMUP:=1}"
fi
[[ $WARMUP =~ ^[0-9]+$ ]] || die "--warmup must be a non-negative integer"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer"
[[ $SMALL_N =~ ^[1-9][0-9]*$ ]] || die "--small must be a positive integer"
[[ $TIMEOUT =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive integer"
SIZE_BYTES=$(to_bytes "$SIZE") || die "bad --size: $SIZE"
STRACE_BYTES=$(to_bytes "$STRACE_SIZE") || die "bad --strace-size: $STRACE_SIZE"
((SIZE_BYTES > 0)) || die "--size must be > 0"
DEFAULT_TOOLS="ringdl,portable,aria2c,curl"
[[ -n $LINK ]] && DEFAULT_TOOLS="ringdl,portable,aria2c,aria2c-best,curl"
: "${TOOLS_OPT:=$DEFAULT_TOOLS}"
IFS=, read -r -a TOOLS <<<"$TOOLS_OPT"
IFS=, read -r -a SCENARIOS <<<"$SCEN_OPT"
for t in "${TOOLS[@]}"; do [[ $t =~ ^(ringdl|portable|aria2c|aria2c-best|curl|sftp)$ ]] || die "unknown tool: $t"; done
for s in "${SCENARIOS[@]}"; do [[ $s =~ ^(https|http|small|strace|ftp|ftpsmall|sftp)$ ]] || die "unknown scenario: $s"; done
has_scen() { [[ ",$SCEN_OPT," == *",$1,"* ]]; }
has_tool() { [[ ",$TOOLS_OPT," == *",$1,"* ]]; }

for cmd in nginx aria2c curl openssl fincore python3 sha256sum dd timeout; do
    command -v "$cmd" >/dev/null 2>&1 || [[ -x /usr/sbin/$cmd ]] || die "missing tool: $cmd"
done
[[ -x /usr/bin/time ]] || die "missing GNU time at /usr/bin/time (Debian: apt-get install time)"
has_scen strace && { command -v strace >/dev/null || die "missing tool: strace"; }
if has_scen ftp || has_scen ftpsmall; then
    [[ -x /usr/sbin/vsftpd ]] || die "missing tool: vsftpd (Debian: apt-get install vsftpd)"
    [[ -z $LINK ]] || die "--link with the ftp scenario is not built: vsftpd serves on loopback only"
fi
if has_scen sftp; then
    [[ -x /usr/sbin/sshd ]] || die "missing tool: sshd (Debian: apt-get install openssh-server)"
    [[ -z $LINK ]] || die "--link with the sftp scenario is not built: sshd serves on loopback only"
    [[ $(id -u) == 0 ]] || die "the sftp scenario needs root (sshd, and a local user to log in as)"
fi
NGINX_BIN=$(command -v nginx || echo /usr/sbin/nginx)
CLK_TCK=$(getconf CLK_TCK)

# ---------------------------------------------------------------- work dir
mkdir -p "$WORK" || die "cannot create $WORK"
WORK=$(cd "$WORK" && pwd)
FSTYPE=$(findmnt -n -o FSTYPE -T "$WORK" 2>/dev/null || df --output=fstype "$WORK" | tail -1)
case $FSTYPE in
    tmpfs|ramfs|overlay*) die "$WORK is on $FSTYPE: use --dir on a real disk (page-cache residency and O_DIRECT need one)" ;;
esac
exec 9>"$WORK/.lock"
flock -n 9 || die "another bench/run.sh is using $WORK"

need=$(( (SIZE_BYTES * 2 + STRACE_BYTES * 2 + 64 * 1024 * 1024) / 1024 ))
avail=$(df --output=avail -k "$WORK" | tail -1)
((avail > need)) || die "not enough space in $WORK: need $((need / 1024)) MiB, have $((avail / 1024)) MiB"

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RES="$WORK/results/$STAMP"
DOCROOT="$WORK/www"
PKI="$WORK/pki"
NGX="$RES/nginx"
OUTBASE="$WORK/out"
mkdir -p "$RES"/{time,logs,strace} "$DOCROOT/small" "$PKI" "$NGX"/{logs,tmp} "$OUTBASE"
note "work dir $WORK ($FSTYPE), results in $RES"

NGINX_PID=""
VSFTPD_PID=""
NETNS=""
NS_EXEC=()
cleanup() {
    local rc=$?
    if [[ -n ${CUR_PGID:-} ]]; then
        kill -TERM -- "-$CUR_PGID" 2>/dev/null || kill -TERM "$CUR_PGID" 2>/dev/null
        wait "$CUR_PGID" 2>/dev/null
    fi
    if [[ -n $NGINX_PID ]] && kill -0 "$NGINX_PID" 2>/dev/null; then
        "${NS_EXEC[@]}" "$NGINX_BIN" -p "$NGX" -c "$NGX/nginx.conf" -e "$NGX/logs/error.log" -s stop 2>/dev/null || kill "$NGINX_PID" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$NGINX_PID" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$NGINX_PID" 2>/dev/null && kill -9 "$NGINX_PID" 2>/dev/null
    fi
    [[ -n $VSFTPD_PID ]] && kill "$VSFTPD_PID" 2>/dev/null
    [[ -n ${SSHD_PID:-} ]] && kill "$SSHD_PID" 2>/dev/null
    # The namespace goes with its end of the veth pair, which takes the other end with it.
    teardown_link
    rm -rf "$OUTBASE"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- ringdl
RINGDL_STATUS=ok
if [[ -n $RINGDL_OPT ]]; then
    RINGDL=$RINGDL_OPT
elif has_tool ringdl || has_tool portable; then
    RINGDL="$REPO/target/release/ringdl"
    if [[ $BUILD == 1 ]]; then
        note "cargo build --release"
        if ! (cd "$REPO" && cargo build --release) >"$RES/logs/cargo-build.log" 2>&1; then
            tail -20 "$RES/logs/cargo-build.log" >&2
            note "cargo build failed: ringdl runs will be marked failed (log: $RES/logs/cargo-build.log)"
            RINGDL_STATUS="build-failed"
        fi
    fi
else
    RINGDL="$REPO/target/release/ringdl"
fi
if [[ $RINGDL_STATUS == ok && ! -x $RINGDL ]]; then
    RINGDL_STATUS="missing"
    has_tool ringdl && note "ringdl binary not found at $RINGDL: its runs will be marked failed"
fi

# ---------------------------------------------------------------- test data
# Random data, made once per size and kept in the work dir between invocations.
make_random() { # path bytes
    local path=$1 bytes=$2
    if [[ -f $path && $(stat -c %s "$path") == "$bytes" && -f $path.sha256 ]]; then
        return 0
    fi
    note "creating $path ($bytes bytes)"
    rm -f "$path" "$path.sha256"
    # openssl's AES-CTR keystream is much faster than /dev/urandom and just as incompressible.
    # (openssl dies of SIGPIPE when head has enough: the size check below is what counts)
    { openssl enc -aes-256-ctr -pass "pass:$RANDOM$RANDOM$$" -nosalt -pbkdf2 </dev/zero 2>/dev/null \
        | head -c "$bytes" >"$path.tmp"; } || true
    [[ $(stat -c %s "$path.tmp") == "$bytes" ]] || die "short random file $path.tmp"
    mv "$path.tmp" "$path"
    sha256sum "$path" | cut -d' ' -f1 >"$path.sha256"
}
BIG_NAME="big-$SIZE_BYTES.bin"
STRACE_NAME="strace-$STRACE_BYTES.bin"
{ has_scen https || has_scen http || has_scen ftp || has_scen sftp; } && make_random "$DOCROOT/$BIG_NAME" "$SIZE_BYTES"
has_scen strace && make_random "$DOCROOT/$STRACE_NAME" "$STRACE_BYTES"

SMALL_DIR="$DOCROOT/small/n$SMALL_N"
if { has_scen small || has_scen ftpsmall; } && [[ ! -f $SMALL_DIR/MANIFEST.sha256 ]]; then
    note "creating $SMALL_N small files (1-30 KB) in $SMALL_DIR"
    rm -rf "$SMALL_DIR"; mkdir -p "$SMALL_DIR"
    python3 - "$SMALL_DIR" "$SMALL_N" <<'PY' || die "cannot create small files"
import os, random, sys, hashlib
d, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(20240601)          # sizes are reproducible; contents are random
lines = []
for i in range(n):
    size = rng.randint(1000, 30 * 1024)
    data = os.urandom(size)
    name = f"s{i:04d}.bin"
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)
    lines.append(f"{hashlib.sha256(data).hexdigest()}  {name}\n")
with open(os.path.join(d, "MANIFEST.sha256"), "w") as f:
    f.writelines(lines)
PY
fi
chmod -R a+rX "$DOCROOT"

# ---------------------------------------------------------------- the link (--link)
# shellcheck source=bench/link.sh
source "$(dirname "${BASH_SOURCE[0]}")/link.sh"
if [[ -n $LINK ]]; then
    setup_link "$LINK" && note "link: $LINK_DESC (namespace $NETNS)"
fi

# ---------------------------------------------------------------- certificates
if [[ ! -f $PKI/server.pem || ! -f $PKI/ca.pem ]] || ! openssl x509 -checkend 86400 -noout -in "$PKI/server.pem" >/dev/null 2>&1 ||
    ! openssl x509 -noout -ext subjectAltName -in "$PKI/server.pem" 2>/dev/null | grep -q "$LINK_SERVER"; then
    note "creating CA and server certificate for 127.0.0.1/localhost"
    rm -f "$PKI"/*
    (
        set -e
        cd "$PKI"
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 90 \
            -keyout ca.key -out ca.pem -subj "/CN=ringdl bench CA" \
            -addext "basicConstraints=critical,CA:TRUE" \
            -addext "keyUsage=critical,keyCertSign,cRLSign"
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
            -keyout server.key -out server.csr -subj "/CN=localhost"
        printf '%s\n' "subjectAltName=IP:127.0.0.1,IP:$LINK_SERVER,DNS:localhost" "basicConstraints=critical,CA:FALSE" \
            "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" >server.ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 90 \
            -extfile server.ext -out server.pem
    ) >"$RES/logs/openssl.log" 2>&1 || { cat "$RES/logs/openssl.log" >&2; die "openssl failed"; }
fi
CA="$PKI/ca.pem"

# ---------------------------------------------------------------- nginx
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
nginx_temp_dirs() { # one *_temp_path line per module this nginx was built with
    local v; v=$("$NGINX_BIN" -V 2>&1)
    echo "    client_body_temp_path $NGX/tmp/body;"
    [[ $v == *--without-http_proxy_module* ]] || echo "    proxy_temp_path $NGX/tmp/proxy;"
    [[ $v == *--without-http_fastcgi_module* ]] || echo "    fastcgi_temp_path $NGX/tmp/fastcgi;"
    [[ $v == *--without-http_uwsgi_module* ]] || echo "    uwsgi_temp_path $NGX/tmp/uwsgi;"
    [[ $v == *--without-http_scgi_module* ]] || echo "    scgi_temp_path $NGX/tmp/scgi;"
}
start_nginx() {
    local try
    for try in 1 2 3 4 5; do
        HTTP_PORT=$(free_port); HTTPS_PORT=$(free_port)
        [[ $HTTP_PORT != "$HTTPS_PORT" ]] || continue
        {
            [[ $(id -u) == 0 ]] && echo "user root;"
            cat <<EOF
worker_processes auto;
daemon on;
master_process on;
pid $NGX/nginx.pid;
error_log $NGX/logs/error.log warn;
events { worker_connections 1024; }
http {
    default_type application/octet-stream;
    types { }
    log_format bench '\$connection \$connection_requests \$status \$body_bytes_sent '
                     '"\$request" "\$http_range" \$ssl_protocol/\$ssl_cipher "\$http_user_agent"';
    access_log $NGX/logs/access.log bench;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 65s;
    keepalive_requests 100000;
$(nginx_temp_dirs)
    server {
        listen $SERVER_IP:$HTTP_PORT;
        root $DOCROOT;
    }
    server {
        listen $SERVER_IP:$HTTPS_PORT ssl;
        root $DOCROOT;
        ssl_certificate $PKI/server.pem;
        ssl_certificate_key $PKI/server.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache shared:bench:1m;
    }
}
EOF
        } >"$NGX/nginx.conf"
        rm -f "$NGX/nginx.pid"
        if "${NS_EXEC[@]}" "$NGINX_BIN" -p "$NGX" -c "$NGX/nginx.conf" -e "$NGX/logs/error.log" 2>>"$NGX/logs/start.log"; then
            for _ in $(seq 50); do [[ -s $NGX/nginx.pid ]] && break; sleep 0.1; done
            NGINX_PID=$(cat "$NGX/nginx.pid" 2>/dev/null)
            [[ -n $NGINX_PID ]] && return 0
        fi
        sleep 0.2
    done
    cat "$NGX/logs/start.log" "$NGX/logs/error.log" >&2 2>/dev/null
    die "nginx did not start"
}
start_nginx
HTTP_BASE="http://$SERVER_IP:$HTTP_PORT"
HTTPS_BASE="https://$SERVER_IP:$HTTPS_PORT"
note "nginx $NGINX_PID on $HTTP_BASE and $HTTPS_BASE"
for _ in $(seq 50); do
    curl -sS --cacert "$CA" -o /dev/null "$HTTPS_BASE/" -w '' 2>/dev/null && break
    curl -sS -o /dev/null "$HTTP_BASE/" 2>/dev/null && break
    sleep 0.1
done
# The docroot has no index: a 403/404 for "/" is fine; a TLS or connect error is not.
curl -sS --cacert "$CA" -o /dev/null "$HTTPS_BASE/" || die "HTTPS self-check against nginx failed"
curl -sS -o /dev/null "$HTTP_BASE/" || die "HTTP self-check against nginx failed"

# vsftpd for the ftp scenario: anonymous, the docroot as its root, passive mode, on loopback.
FTP_BASE=""
if has_scen ftp || has_scen ftpsmall; then
    FTPD="$RES/vsftpd"
    mkdir -p "$FTPD/empty"
    FTP_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    printf '%s\n' listen=YES listen_address=127.0.0.1 "listen_port=$FTP_PORT" anonymous_enable=YES \
        "anon_root=$DOCROOT" no_anon_password=YES local_enable=NO write_enable=NO \
        "secure_chroot_dir=$FTPD/empty" pasv_enable=YES seccomp_sandbox=NO background=NO \
        ftp_username=ftp max_clients=0 max_per_ip=0 >"$FTPD/vsftpd.conf"
    chmod o+rx "$DOCROOT"
    /usr/sbin/vsftpd "$FTPD/vsftpd.conf" >"$FTPD/stderr.log" 2>&1 &
    VSFTPD_PID=$!
    for _ in $(seq 50); do curl -sS -o /dev/null "ftp://127.0.0.1:$FTP_PORT/" 2>/dev/null && break; sleep 0.1; done
    curl -sS -o /dev/null "ftp://127.0.0.1:$FTP_PORT/" || die "vsftpd did not start (see $FTPD/stderr.log)"
    FTP_BASE="ftp://127.0.0.1:$FTP_PORT"
    note "vsftpd $VSFTPD_PID on $FTP_BASE"
fi

# sshd for the sftp scenario: host keys of its own, a local user with a password (made here if
# missing: ringdl's tests use the same one), internal-sftp, on loopback.
SFTP_BASE=""
SSHD_PID=""
SSH_USER=ringdltest
SSH_PASS=bench-pass
if has_scen sftp; then
    SSHD="$RES/sshd"
    mkdir -p "$SSHD/home" /run/sshd
    id "$SSH_USER" >/dev/null 2>&1 || useradd -M -d /tmp -s /bin/sh "$SSH_USER"
    echo "$SSH_USER:$SSH_PASS" | chpasswd
    ssh-keygen -q -t ecdsa -N '' -f "$SSHD/host_ecdsa"
    ssh-keygen -q -t ed25519 -N '' -f "$SSHD/client_ed25519"
    cp "$SSHD/client_ed25519.pub" "$SSHD/authorized_keys"
    SFTP_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    printf '%s\n' "Port $SFTP_PORT" "ListenAddress 127.0.0.1" "HostKey $SSHD/host_ecdsa" \
        "AuthorizedKeysFile $SSHD/authorized_keys" "StrictModes no" "UsePAM no" \
        "PasswordAuthentication yes" "Subsystem sftp internal-sftp" "PidFile none" \
        "LogLevel ERROR" "MaxStartups 100" >"$SSHD/sshd_config"
    chmod o+rx "$DOCROOT" "$(dirname "$DOCROOT")"; chmod o+r "$DOCROOT/$BIG_NAME"
    /usr/sbin/sshd -D -e -f "$SSHD/sshd_config" >"$SSHD/stderr.log" 2>&1 &
    SSHD_PID=$!
    for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$SFTP_PORT") 2>/dev/null && break; sleep 0.1; done
    SFTP_BASE="sftp://$SSH_USER:$SSH_PASS@127.0.0.1:$SFTP_PORT$DOCROOT"
    note "sshd $SSHD_PID on 127.0.0.1:$SFTP_PORT"
fi

# Keep the served files in the page cache so that nginx never waits on the disk.
note "warming the page cache with the source files"
for f in "$DOCROOT/$BIG_NAME" "$DOCROOT/$STRACE_NAME"; do [[ -f $f ]] && cat "$f" >/dev/null; done
[[ -d $SMALL_DIR ]] && cat "$SMALL_DIR"/*.bin >/dev/null

# ---------------------------------------------------------------- measuring
NG_PIDS=()
nginx_pids() { # master + workers
    NG_PIDS=("$NGINX_PID")
    # bench/netdelay, when it makes the link's delay, is the link's cost: counted with the server.
    [[ -n $LINK_DELAY_PID ]] && NG_PIDS+=("$LINK_DELAY_PID")
    local p
    for p in /proc/[0-9]*; do
        [[ -r $p/stat ]] || continue
        local f; read -r -a f 2>/dev/null <"$p/stat" || continue
        [[ ${f[3]} == "$NGINX_PID" ]] && NG_PIDS+=("${p#/proc/}")
        # vsftpd (the ftp scenario's server) and every session process it forked.
        [[ -n $VSFTPD_PID && ${f[1]} == "(vsftpd)" ]] && NG_PIDS+=("${p#/proc/}")
        # sshd (the sftp scenario's) and its session processes.
        [[ -n $SSHD_PID && ${f[1]} == "(sshd)" ]] && NG_PIDS+=("${p#/proc/}")
    done
}
# Kernel threads that are not the download's cost and are taken out of the machine-wide figure
# like nginx: kdamond (DAMON) pages out cold page cache on its own schedule on some VMs.
KD_PIDS=()
for p in /proc/[0-9]*; do
    read -r c 2>/dev/null <"$p/comm" && [[ $c == kdamond* ]] && KD_PIDS+=("${p#/proc/}")
done
# These use shell builtins only (no fork) because they run inside the measured window.
SUM_J=0
sum_jiffies() { # pid... -> SUM_J = utime + stime of those processes
    local pid f sum=0
    for pid in "$@"; do
        if read -r -a f 2>/dev/null <"/proc/$pid/stat"; then
            sum=$((sum + f[13] + f[14]))
            # vsftpd forks a process per session, which ends within the run: the listener reaps
            # them, so their CPU is in its cutime and cstime.
            [[ $pid == "$VSFTPD_PID" || $pid == "$SSHD_PID" ]] && sum=$((sum + f[15] + f[16]))
        fi
    done
    SUM_J=$sum
}
# Every other user-space process (not this script, not nginx, not a kernel thread): CPU of
# processes that share the machine, e.g. someone's cargo build.  utime+stime+cutime+cstime, so a
# child that another process reaps inside the window is still counted.  SELF_J is this shell's
# own utime+stime (the harness's overhead inside the window).
OTHER_J=0
SELF_J=0
other_jiffies() {
    local p line rest f sum=0 ng=" ${NG_PIDS[*]} "
    for p in /proc/[0-9]*; do
        read -r line 2>/dev/null <"$p/stat" || continue
        rest=${line##*) }
        read -r -a f <<<"$rest"   # f[0] = state, f[1] = ppid, f[11..14] = utime stime cutime cstime
        p=${p#/proc/}
        if [[ $p == "$$" ]]; then
            SELF_J=$((f[11] + f[12]))
            continue
        fi
        [[ ${f[1]} == 2 || $p == 2 || $ng == *" $p "* ]] && continue
        sum=$((sum + f[11] + f[12] + f[13] + f[14]))
    done
    OTHER_J=$sum
}
BUSY_J=0
busy_jiffies() { # all CPUs: user nice system irq softirq steal
    local cpu u n s idle iow irq sirq steal rest
    read -r cpu u n s idle iow irq sirq steal rest </proc/stat
    BUSY_J=$((u + n + s + irq + sirq + steal))
}
log_offset() { stat -c %s "$NGX/logs/access.log" 2>/dev/null || echo 0; }

RUNS_TSV="$RES/runs.tsv"
printf '%s\n' "round	scenario	tool	pos	exit	t0	t1	busy0	busy1	ng0	ng1	kd0	kd1	ot0	ot1	self0	self1	src_resident_pct	timefile	resident	filebytes	files_ok	files_total	log0	log1	fail" >"$RUNS_TSV"

# The command line of each tool for each scenario, into CMD.
CMD=()
tool_cmd() { # tool scenario outdir
    local tool=$1 scen=$2 out=$3
    CMD=()
    case $scen in
        sftp)
            case $tool in
                ringdl|portable|aria2c)
                    local bin=aria2c; [[ $tool != aria2c ]] && bin=$RINGDL
                    CMD=("$bin" "-x$CONNS" "-s$CONNS" --allow-overwrite=true -d "$out"
                         --console-log-level=warn --summary-interval=0 "${SFTP_BASE:-}/$BIG_NAME")
                    # (ringdl adds the host to known_hosts in a HOME of the bench's own.)
                    [[ $tool != aria2c ]] && CMD=(env "HOME=${SSHD:-}/home" "${CMD[@]}")
                    [[ $tool == portable ]] && CMD+=(--engine=portable) ;;
                curl)
                    CMD=(curl -sS --fail -k -u "$SSH_USER:$SSH_PASS" -o "$out/$BIG_NAME"
                         "sftp://127.0.0.1:${SFTP_PORT:-}$DOCROOT/$BIG_NAME") ;;
                sftp)
                    CMD=(sftp -q -i "${SSHD:-}/client_ed25519" -o StrictHostKeyChecking=no
                         -o UserKnownHostsFile=/dev/null -o BatchMode=yes -P "${SFTP_PORT:-}"
                         "$SSH_USER@127.0.0.1:$DOCROOT/$BIG_NAME" "$out/$BIG_NAME") ;;
            esac ;;
        https|http|strace|ftp)
            local base=$HTTPS_BASE name=$BIG_NAME
            [[ $scen == http ]] && base=$HTTP_BASE
            [[ $scen == ftp ]] && base=$FTP_BASE
            [[ $scen == strace ]] && name=$STRACE_NAME
            case $tool in
                ringdl|portable|aria2c)
                    local bin=aria2c; [[ $tool != aria2c ]] && bin=$RINGDL
                    CMD=("$bin" "-x$CONNS" "-s$CONNS" "--ca-certificate=$CA" --allow-overwrite=true -d "$out"
                         --console-log-level=warn --summary-interval=0 "$base/$name")
                    [[ $tool == portable ]] && CMD+=(--engine=portable) ;;
                aria2c-best)
                    CMD=(aria2c -x16 -s16 -k1M --file-allocation=falloc --disk-cache=64M
                         "--ca-certificate=$CA" --allow-overwrite=true -d "$out"
                         --console-log-level=warn --summary-interval=0 "$base/$name") ;;
                curl)
                    CMD=(curl -sS --fail --cacert "$CA" -o "$out/$name" "$base/$name") ;;
            esac ;;
        ftpsmall)
            # ringdl: each of the 16 connections logs in once and is kept for its next files (the
            # default --ftp-reuse-connection=true). aria2c gets --ftp-reuse-connection=false: with
            # its default it stops here (1.36: 170 of the 300 files, then nothing for 60 s).
            local urls=() f
            for f in "$SMALL_DIR"/*.bin; do urls+=("$FTP_BASE/small/n$SMALL_N/${f##*/}"); done
            case $tool in
                ringdl|portable|aria2c)
                    local bin=aria2c; [[ $tool != aria2c ]] && bin=$RINGDL
                    CMD=("$bin" -Z -j16 --allow-overwrite=true -d "$out"
                         --console-log-level=warn --summary-interval=0)
                    [[ $tool == portable ]] && CMD+=(--engine=portable)
                    [[ $tool == aria2c ]] && CMD+=(--ftp-reuse-connection=false)
                    CMD+=("${urls[@]}") ;;
                curl)
                    CMD=(curl -sS --fail -Z --parallel-max 16 --output-dir "$out"
                         --remote-name-all "${urls[@]}") ;;
            esac ;;
        small)
            local urls=() f
            for f in "$SMALL_DIR"/*.bin; do urls+=("$HTTPS_BASE/small/n$SMALL_N/${f##*/}"); done
            case $tool in
                ringdl|portable|aria2c)
                    local bin=aria2c; [[ $tool != aria2c ]] && bin=$RINGDL
                    CMD=("$bin" -Z -j16 "--ca-certificate=$CA" --allow-overwrite=true -d "$out"
                         --console-log-level=warn --summary-interval=0)
                    [[ $tool == portable ]] && CMD+=(--engine=portable)
                    CMD+=("${urls[@]}") ;;
                aria2c-best)
                    CMD=(aria2c -Z -j16 --file-allocation=none --disk-cache=64M "--ca-certificate=$CA"
                         --allow-overwrite=true -d "$out" --console-log-level=warn --summary-interval=0
                         "${urls[@]}") ;;
                curl)
                    CMD=(curl -sS --fail -Z --parallel-max 16 --cacert "$CA" --output-dir "$out"
                         --remote-name-all "${urls[@]}") ;;
            esac ;;
    esac
}
cmd_for_display() { # tool scenario: the command with the URI list shortened
    tool_cmd "$1" "$2" '$OUT'
    local s="" a n=0
    for a in "${CMD[@]}"; do
        if [[ $a == https://* || $a == http://* || $a == ftp://* ]]; then
            n=$((n + 1)); [[ $n -gt 1 ]] && continue
        fi
        a=${a//$WORK/\$WORK}; a=${a//$RINGDL/ringdl}
        s+="${s:+ }$a"
    done
    [[ $n -gt 1 ]] && s+=" ... ($n URIs)"
    echo "$s"
}

# Runs a command under timeout(1), output to a log, exit status in RC.  timeout puts itself in
# a process group of its own, which a terminal's Ctrl-C does not reach: cleanup() kills that group.
CUR_PGID=""
RC=0
run_limited() { # log cmd...
    local log=$1; shift
    timeout -k 5 "$TIMEOUT" "$@" >"$log" 2>&1 </dev/null &
    CUR_PGID=$!
    wait "$CUR_PGID"; RC=$?
    CUR_PGID=""
}

# Output checks.
sha_direct() { # SHA-256 read with O_DIRECT so the check does not fill the page cache
    local h
    if h=$(dd if="$1" iflag=direct bs=4M status=none 2>/dev/null | sha256sum); then
        echo "${h%% *}"
    else # the filesystem refused O_DIRECT: read it buffered
        h=$(sha256sum "$1"); echo "${h%% *}"
    fi
}
resident_bytes() { # sum of page-cache bytes of the given files
    fincore -b -n -o RES "$@" 2>/dev/null | awk '{s += $1} END {print s + 0}'
}

# The served files must be in the page cache before each run (DAMON or memory pressure may have
# paged them out since): prints how much of it was resident (%) before warming it.
warm_source() { # scenario
    local f size r
    case $1 in
        small|ftpsmall) cat "$SMALL_DIR"/*.bin >/dev/null; echo 100; return ;;
        strace) f="$DOCROOT/$STRACE_NAME" ;;
        *) f="$DOCROOT/$BIG_NAME" ;;
    esac
    size=$(stat -c %s "$f"); r=$(resident_bytes "$f")
    ((r < size)) && cat "$f" >/dev/null
    echo $((r * 100 / size))
}

# One measured run; appends a line to runs.tsv.
run_one() { # round scenario tool pos
    local round=$1 scen=$2 tool=$3 pos=$4
    local id="r${round}-${scen}-${tool}"
    local out="$OUTBASE/$id" tf="$RES/time/$id.txt" lg="$RES/logs/$id.log"
    rm -rf "$out"; mkdir -p "$out"
    tool_cmd "$tool" "$scen" "$out"
    # (A tool that has no command for this scenario, e.g. OpenSSH's sftp for HTTPS, sits it out.)
    if ((${#CMD[@]} == 0)); then rmdir "$out"; return; fi
    local fail="" rc=0 t0=0 t1=0 b0=0 b1=0 n0=0 n1=0 k0=0 k1=0 o0=0 o1=0 s0=0 s1=0 l0 l1 res=0 fbytes=0 fok=0 ftot=1
    local srcpct
    srcpct=$(warm_source "$scen")
    if [[ ($tool == ringdl || $tool == portable) && $RINGDL_STATUS != ok ]]; then
        fail="ringdl-$RINGDL_STATUS"; rc=127
        l0=$(log_offset); l1=$l0
    else
        nginx_pids
        sync; sleep 0.3
        l0=$(log_offset)
        other_jiffies; o0=$OTHER_J; s0=$SELF_J
        sum_jiffies "${KD_PIDS[@]}"; k0=$SUM_J; sum_jiffies "${NG_PIDS[@]}"; n0=$SUM_J
        busy_jiffies; b0=$BUSY_J
        t0=$EPOCHREALTIME
        run_limited "$lg" /usr/bin/time -v -o "$tf" "${CMD[@]}"
        rc=$RC
        t1=$EPOCHREALTIME
        sync
        busy_jiffies; b1=$BUSY_J
        sum_jiffies "${NG_PIDS[@]}"; n1=$SUM_J; sum_jiffies "${KD_PIDS[@]}"; k1=$SUM_J
        other_jiffies; o1=$OTHER_J; s1=$SELF_J
        l1=$(log_offset)
        ((rc == 124 || rc == 137)) && fail="timeout-${TIMEOUT}s"
        [[ -z $fail && $rc != 0 ]] && fail="exit-$rc"
    fi
    # Residency first (the checksum reads the files), then the checksums.
    if [[ $scen == small || $scen == ftpsmall ]]; then
        ftot=$SMALL_N
        local files=() f
        for f in "$SMALL_DIR"/*.bin; do [[ -f $out/${f##*/} ]] && files+=("$out/${f##*/}"); done
        if ((${#files[@]})); then
            res=$(resident_bytes "${files[@]}")
            fbytes=$(stat -c %s "${files[@]}" | awk '{s += $1} END {print s + 0}')
            fok=$(cd "$out" && sha256sum -c "$SMALL_DIR/MANIFEST.sha256" 2>/dev/null | grep -c ': OK$')
        fi
        [[ -z $fail && $fok != "$SMALL_N" ]] && fail="sha256-$((SMALL_N - fok))-of-$SMALL_N-bad"
    else
        local name=$BIG_NAME; [[ $scen == strace ]] && name=$STRACE_NAME
        local f="$out/$name"
        if [[ -f $f ]]; then
            res=$(resident_bytes "$f")
            fbytes=$(stat -c %s "$f")
            [[ $(sha_direct "$f") == "$(cat "$DOCROOT/$name.sha256")" ]] && fok=1
        fi
        if [[ -z $fail && $fok != 1 ]]; then
            if [[ -f $f ]]; then fail="sha256-mismatch"; else fail="no-output-file"; fi
        fi
    fi
    rm -rf "$out"
    printf '%s\t' "$round" "$scen" "$tool" "$pos" "$rc" "$t0" "$t1" "$b0" "$b1" "$n0" "$n1" "$k0" "$k1" "$o0" "$o1" "$s0" "$s1" \
        "$srcpct" "${tf#$RES/}" "$res" "$fbytes" "$fok" "$ftot" "$l0" "$l1" >>"$RUNS_TSV"
    printf '%s\n' "${fail:--}" >>"$RUNS_TSV"
    # One console line per run.
    awk -v r="$round" -v s="$scen" -v t="$tool" -v t0="$t0" -v t1="$t1" -v b0="$b0" -v b1="$b1" \
        -v n0="$n0" -v n1="$n1" -v k0="$k0" -v k1="$k1" -v s0="$s0" -v s1="$s1" -v o0="$o0" -v o1="$o1" -v hz="$CLK_TCK" -v res="$res" -v fb="$fbytes" -v fail="$fail" \
        -v tf="$tf" 'BEGIN {
            u = 0; sy = 0; rss = 0
            while ((getline line < tf) > 0) {
                if (line ~ /User time/) { sub(/.*: /, "", line); u = line }
                if (line ~ /System time/) { sub(/.*: /, "", line); sy = line }
                if (line ~ /Maximum resident/) { sub(/.*: /, "", line); rss = line }
            }
            pct = fb > 0 ? 100 * res / fb : 0
            printf "%s %-6s %-6s wall %6.2fs cpu %6.2fs machine %6.2fs (others %5.2fs) rss %6.1fMiB resident %5.1f%% %s\n",
                (r > 0 ? "round " r : "warm-up"), s, t, t1 - t0, u + sy, ((b1 - b0) - (n1 - n0) - (k1 - k0) - (s1 - s0)) / hz,
                (o1 - o0) / hz, rss / 1024, pct,
                fail == "" ? "ok" : "FAILED: " fail
        }' </dev/null
}

# strace -f -c of one download per tool.
run_strace() { # tool
    local tool=$1 out="$OUTBASE/strace-$1"
    rm -rf "$out"; mkdir -p "$out"
    local sf="$RES/strace/$tool.txt" lg="$RES/logs/strace-$tool.log" ok=0 rc
    if [[ ($tool == ringdl || $tool == portable) && $RINGDL_STATUS != ok ]]; then
        echo "ringdl-$RINGDL_STATUS" >"$sf.fail"; return
    fi
    tool_cmd "$tool" strace "$out"
    warm_source strace >/dev/null
    run_limited "$lg" strace -f -c -o "$sf" "${CMD[@]}"
    rc=$RC
    if [[ -f $out/$STRACE_NAME && $(sha_direct "$out/$STRACE_NAME") == "$(cat "$DOCROOT/$STRACE_NAME.sha256")" ]]; then
        ok=1
    fi
    if [[ $rc != 0 || $ok != 1 ]]; then
        echo "exit-$rc sha_ok=$ok" >"$sf.fail"
        note "strace $tool: FAILED (exit $rc, sha256 ok=$ok)"
    else
        note "strace $tool: ok"
    fi
    rm -rf "$out"
}

# ---------------------------------------------------------------- meta
{
    printf 'date\t%s\n' "$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    printf 'command\t%s\n' "bench/run.sh${ORIG_ARGS[*]:+ ${ORIG_ARGS[*]}}"
    printf 'quick\t%s\n' "$QUICK"
    printf 'rounds\t%s\n' "$ROUNDS"
    printf 'warmup\t%s\n' "$WARMUP"
    printf 'size_bytes\t%s\n' "$SIZE_BYTES"
    printf 'strace_bytes\t%s\n' "$STRACE_BYTES"
    printf 'small_n\t%s\n' "$SMALL_N"
    printf 'small_bytes\t%s\n' "$(stat -c %s "$SMALL_DIR"/*.bin 2>/dev/null | awk '{s += $1} END {print s + 0}')"
    printf 'tools\t%s\n' "$TOOLS_OPT"
    printf 'scenarios\t%s\n' "$SCEN_OPT"
    printf 'clk_tck\t%s\n' "$CLK_TCK"
    printf 'nproc\t%s\n' "$(nproc)"
    printf 'cpu_model\t%s\n' "$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
    printf 'mem\t%s\n' "$(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
    printf 'kernel\t%s\n' "$(uname -srm)"
    printf 'workdir\t%s\n' "$WORK"
    printf 'fs\t%s\n' "$(findmnt -n -o FSTYPE,SOURCE,OPTIONS -T "$WORK" 2>/dev/null | tr -s ' ' | head -1)"
    printf 'aria2c\t%s\n' "$(aria2c --version 2>/dev/null | awk 'NR == 1 {v = $1 " " $3}
        /^Libraries:/ {for (i = 2; i <= NF; i++) if ($i ~ /TLS|SSL/) v = v " (" $i ")"} END {print v}')"
    printf 'curl\t%s\n' "$(curl --version 2>/dev/null | awk 'NR == 1 {v = $1 " " $2
        for (i = 3; i <= NF; i++) if ($i ~ /^(OpenSSL|GnuTLS|wolfSSL|BoringSSL|LibreSSL|mbedTLS|rustls)/) v = v " (" $i ")"
        print v}')"
    printf 'nginx\t%s\n' "$("$NGINX_BIN" -v 2>&1 | head -1)"
    printf 'link\t%s\n' "$LINK_DESC"
    printf 'link_rate_bytes\t%s\n' "$LINK_RATE_BYTES"
    printf 'conns\t%s\n' "$CONNS"
    printf 'openssl\t%s\n' "$(openssl version 2>/dev/null)"
    rev=$(git -C "$REPO" rev-parse --short=12 HEAD 2>/dev/null || echo "no-commit")
    [[ -n $(git -C "$REPO" status --porcelain --untracked-files=no 2>/dev/null) ]] && rev+="-dirty"
    printf 'ringdl_rev\t%s\n' "$rev"
    printf 'ringdl_status\t%s\n' "$RINGDL_STATUS"
    printf 'ringdl_version\t%s\n' "$([[ $RINGDL_STATUS == ok ]] && timeout 5 "$RINGDL" --version 2>/dev/null | head -1)"
    printf 'kdamond\t%s\n' "${#KD_PIDS[@]}"
    printf 'nginx_workers\t%s\n' "$(nginx_pids; echo $((${#NG_PIDS[@]} - 1)))"
    printf 'source_resident\t%s\n' "$([[ -f $DOCROOT/$BIG_NAME ]] && resident_bytes "$DOCROOT/$BIG_NAME")"
    for s in https http small ftp ftpsmall sftp; do
        for t in ringdl portable aria2c aria2c-best curl sftp; do printf 'cmd_%s_%s\t%s\n' "$s" "$t" "$(cmd_for_display "$t" "$s")"; done
    done
    printf 'strace_cmd\t%s\n' "strace -f -c -o \$RESULT <the https command above, for the ${STRACE_BYTES}-byte file>"
} >"$RES/meta.tsv"

# How busy is the machine with nothing of ours running? (noise floor, % of one CPU)
sync; sleep 0.5
busy_jiffies; b0=$BUSY_J; sleep 3; busy_jiffies; b1=$BUSY_J
printf 'idle_busy_pct\t%s\n' "$(((b1 - b0) * 100 / (3 * CLK_TCK)))" >>"$RES/meta.tsv"
note "background load with nothing running: $(((b1 - b0) * 100 / (3 * CLK_TCK)))% of one CPU"

# ---------------------------------------------------------------- rounds
# Round 0..-(WARMUP-1) are warm-up rounds: run and checked like the others, written to warmup.tsv,
# left out of the report (the first large write of an invocation can be much slower).
play_round() { # round
    local r=$1 scen n shift_by i idx
    for scen in https http small ftp ftpsmall sftp; do
        has_scen "$scen" || continue
        # Rotate the tool order each round (and by scenario), so no tool always runs first.
        n=${#TOOLS[@]}
        shift_by=0; [[ $scen == http ]] && shift_by=1; [[ $scen == ftp ]] && shift_by=2
        [[ $scen == sftp ]] && shift_by=3; [[ $scen == ftpsmall ]] && shift_by=1
        for ((i = 0; i < n; i++)); do
            idx=$((((i + r - 1 + shift_by) % n + n) % n))
            run_one "$r" "$scen" "${TOOLS[$idx]}" "$((i + 1))"
        done
    done
}
if ((WARMUP > 0)); then
    MAIN_TSV=$RUNS_TSV
    RUNS_TSV="$RES/warmup.tsv"
    head -1 "$MAIN_TSV" >"$RUNS_TSV"
    for ((w = 0; w < WARMUP; w++)); do
        note "warm-up round $((w + 1)) of $WARMUP (not counted)"
        play_round "-$w"
    done
    RUNS_TSV=$MAIN_TSV
fi
for ((r = 1; r <= ROUNDS; r++)); do
    note "round $r of $ROUNDS"
    play_round "$r"
done

if has_scen strace; then
    note "strace -f -c runs (${STRACE_BYTES} bytes over HTTPS)"
    for t in "${TOOLS[@]}"; do run_strace "$t"; done
fi

# ---------------------------------------------------------------- report
ln -sf nginx/logs/access.log "$RES/access.log"

if [[ -z $OUT_MD ]]; then
    OUT_MD="$RES/RESULTS.md"
    if [[ $QUICK == 0 ]]; then
        nfail=$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "fail") f = i; next }
                             ($3 == "ringdl" || $3 == "portable") && $f != "-"' "$RUNS_TSV" | wc -l)
        nring=$(awk -F'\t' 'NR > 1 && ($3 == "ringdl" || $3 == "portable")' "$RUNS_TSV" | wc -l)
        if has_tool ringdl && ((nring > 0 && nfail == 0)) && [[ $TOOLS_OPT == "$DEFAULT_TOOLS" ]]; then
            OUT_MD="$BENCH_DIR/RESULTS.md"
        else
            note "not writing bench/RESULTS.md: ringdl failed $nfail of $nring runs or the tool set is partial (use --out to force)"
        fi
    fi
fi
python3 -B "$BENCH_DIR/report.py" "$RES" "$OUT_MD" || die "report.py failed (raw data in $RES)"
note "raw data: $RES/runs.csv, $RES/runs.json; report: $OUT_MD"
