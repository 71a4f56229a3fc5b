# The real-network link of bench/run.sh and bench/ab.sh (sourced, not run): nginx in a network
# namespace of its own behind a veth pair with MTU 1500, each direction delayed and shaped by tc.
# The caller sets NETNS="" and NS_EXEC=() first, calls `teardown_link` on exit (it stops the
# delay and deletes "$NETNS", with it the pair), and calls `setup_link RTT,RATE`; on success nginx
# is started with "${NS_EXEC[@]}" and listens on $SERVER_IP. Needs root, ip and tc (and, on a
# kernel without sch_netem, iptables and cargo for the delay).
# The server's end: 10.231.0.2 in a namespace of its own; ours: 10.231.0.1. Each end's qdisc delays
# by RTT/2 and shapes to RATE, with a queue deep enough for the bandwidth-delay product; without
# netem, tbf shapes and bench/netdelay holds the packets the server receives for the whole RTT.
LINK_SERVER=10.231.0.2
LINK_CLIENT=10.231.0.1
SERVER_IP=127.0.0.1
LINK_DESC="loopback"
LINK_RATE_BYTES=""  # the link's rate in bytes/s, when there is a link
LINK_DELAY_PID=""   # bench/netdelay, when it makes the link's delay
setup_link() { # RTT,RATE -> 0 with the link up, else 1 and one line on stderr
    local rtt=${1%%,*} rate=${1#*,} half
    [[ $1 == *,* && $rtt =~ ^[0-9]+ms$ && $rate =~ ^[0-9]+(k|m|g)?bit$ ]] ||
        { echo "${0##*/}: --link wants RTT,RATE such as 20ms,1gbit (got $1)" >&2; return 1; }
    half=$(( ${rtt%ms} * 500 ))us
    command -v ip >/dev/null && command -v tc >/dev/null ||
        { echo "${0##*/}: --link needs ip and tc (Debian: apt-get install iproute2); using loopback" >&2; return 1; }
    NETNS="ringdl-bench-$$"
    local vr="rdlb$$a" vs="rdlb$$b" err
    vr=${vr:0:15}; vs=${vs:0:15}
    if ! err=$( {
        ip netns add "$NETNS" &&
        ip link add "$vr" mtu 1500 type veth peer name "$vs" mtu 1500 &&
        ip link set "$vs" netns "$NETNS" &&
        ip addr add "$LINK_CLIENT/30" dev "$vr" && ip link set "$vr" up &&
        ip netns exec "$NETNS" ip addr add "$LINK_SERVER/30" dev "$vs" &&
        ip netns exec "$NETNS" ip link set "$vs" up &&
        ip netns exec "$NETNS" ip link set lo up
    } 2>&1 ); then
        echo "${0##*/}: cannot make the link (${err//$'\n'/; }); using loopback" >&2
        ip netns del "$NETNS" 2>/dev/null; ip link del "$vr" 2>/dev/null
        NETNS=""
        return 1
    fi
    NS_EXEC=(ip netns exec "$NETNS")
    SERVER_IP=$LINK_SERVER
    if tc qdisc add dev "$vr" root netem delay "$half" rate "$rate" limit 200000 2>/dev/null &&
        ip netns exec "$NETNS" tc qdisc add dev "$vs" root netem delay "$half" rate "$rate" limit 200000 2>/dev/null; then
        LINK_DESC="veth, MTU 1500, netem $rtt RTT, $rate each way"
        LINK_RATE_BYTES=$(to_rate_bytes "$rate")
        return 0
    fi
    # Without netem (a kernel built without sch_netem) the rate is shaped with tbf (a burst of
    # 10 ms at that rate), and the delay is made by bench/netdelay: every packet the server's
    # namespace receives goes through an NFQUEUE queue that netdelay holds for the whole RTT (so
    # the RTT is all on one side; TCP's window sees the same RTT). Without iptables, cargo
    # or NFQUEUE the link has no added delay and says so.
    tc qdisc del dev "$vr" root 2>/dev/null
    local bytes burst
    bytes=$(to_rate_bytes "$rate")
    burst=$(( bytes / 100 > 65536 ? bytes / 100 : 65536 ))
    if err=$( { tc qdisc add dev "$vr" root tbf rate "$rate" burst "$burst" latency 50ms &&
        ip netns exec "$NETNS" tc qdisc add dev "$vs" root tbf rate "$rate" burst "$burst" latency 50ms; } 2>&1 ); then
        LINK_RATE_BYTES=$bytes
        if start_delay "$vs" "${rtt%ms}"; then
            LINK_DESC="veth, MTU 1500, $rate each way (tbf), $rtt RTT (netdelay on the server's side: this kernel has no netem)"
        else
            echo "${0##*/}: this kernel has no netem and $DELAY_ERR: the link has MTU 1500 and $rate each way, but no added delay (not $rtt RTT)" >&2
            LINK_DESC="veth, MTU 1500, $rate each way (tbf); no added delay: this kernel has no netem"
        fi
        return 0
    fi
    echo "${0##*/}: cannot shape the link (${err//$'\n'/; }); using loopback" >&2
    ip netns del "$NETNS" 2>/dev/null
    NETNS=""; NS_EXEC=(); SERVER_IP=127.0.0.1
    return 1
}
to_rate_bytes() { # 1gbit, 2500mbit, 100kbit -> bytes per second
    local n=${1%bit} m=1
    case $n in *g) m=1000000000; n=${n%g} ;; *m) m=1000000; n=${n%m} ;; *k) m=1000; n=${n%k} ;; esac
    echo $(( n * m / 8 ))
}
start_delay() { # server's veth, RTT in ms -> 0 with netdelay holding every packet the server
    # receives for the RTT; else 1 and DELAY_ERR says why
    local dev=$1 ms=$2 bin dir
    dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/netdelay"
    command -v iptables >/dev/null || { DELAY_ERR="no iptables (Debian: apt-get install iptables)"; return 1; }
    bin="$dir/target/release/netdelay"
    if [[ ! -x $bin ]]; then
        command -v cargo >/dev/null || { DELAY_ERR="no cargo to build bench/netdelay"; return 1; }
        cargo build --release --quiet --manifest-path "$dir/Cargo.toml" >/dev/null 2>&1 ||
            { DELAY_ERR="bench/netdelay does not build"; return 1; }
    fi
    # The packets held are the ones the server receives (requests and ACKs): holding its own
    # outgoing packets instead would keep them charged to its socket, whose small-queue limit
    # (about 1 ms of data below TCP) would then throttle the sender to a twentieth of the link.
    ip netns exec "$NETNS" iptables -A INPUT -i "$dev" -j NFQUEUE --queue-num 0 --queue-bypass 2>/dev/null ||
        { DELAY_ERR="iptables refused the NFQUEUE rule"; return 1; }
    # `ip netns exec` execs the command, so $! is netdelay itself.
    ip netns exec "$NETNS" "$bin" --queue 0 --delay-us $((ms * 1000)) &
    LINK_DELAY_PID=$!
    sleep 0.3
    kill -0 "$LINK_DELAY_PID" 2>/dev/null || { LINK_DELAY_PID=""; DELAY_ERR="netdelay did not start"; return 1; }
}
teardown_link() { # stops netdelay, then deletes the namespace (and with it the veth pair)
    if [[ -n $LINK_DELAY_PID ]]; then
        kill "$LINK_DELAY_PID" 2>/dev/null
        wait "$LINK_DELAY_PID" 2>/dev/null
        LINK_DELAY_PID=""
    fi
    [[ -n $NETNS ]] && ip netns del "$NETNS" 2>/dev/null
    return 0
}
