#!/usr/bin/env python3
"""Daemon-mode benchmark: ringdl against aria2c as RPC servers.

1. Responsiveness under load: each daemon downloads a file (default 1 GiB) over HTTPS from a
   private nginx at full speed (-x8 -s8) while a client polls `aria2.tellActive` every 100 ms;
   the latency of every poll is recorded (median, p99, max), with the download's wall time and
   its SHA-256 (a wrong SHA fails the benchmark). Rounds alternate which tool goes first.
2. Memory with many results: each daemon is given N downloads (default 100 000, through
   `system.multicall` in batches of 1000) of a URI whose port refuses connections, with
   `--max-download-result=N`, and holds N stopped results; its RSS (VmRSS, VmHWM) is read from
   /proc, with the latency of `tellStopped(0, 1000)` and of `getGlobalStat`.
3. (--queued N) N paused downloads in the queue: RSS, how long adding them and a tellWaiting
   page take, idle CPU, and a saveSession of them all while another client polls.
4. (--finished N) N downloads that fail at once, with the default --max-download-result (1000):
   RSS after 1 000, 10 000, N/2 and N have finished, each batch waited for. A daemon that keeps
   1000 results should not grow with the downloads it has finished.

Usage: bench/rpc.py [--dir DIR] [--size BYTES] [--rounds N] [--results N] [--queued N]
                    [--finished N] [--tools ringdl,aria2c] [--ringdl BIN]
Needs nginx, aria2c, openssl; DIR on a real disk (default /var/tmp/ringdl-bench-rpc).
"""
import argparse
import hashlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def die(msg):
    print(f"rpc.py: {msg}", file=sys.stderr)
    sys.exit(1)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def call(port, method, params=None, secret="bench", timeout=30):
    if method.startswith("aria2."):
        params = [f"token:{secret}"] + (params or [])
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or []})
    req = urllib.request.Request(f"http://127.0.0.1:{port}/jsonrpc", data=body.encode())
    start = time.perf_counter()
    with urllib.request.urlopen(req, timeout=timeout) as r:
        v = json.loads(r.read())
    return v, time.perf_counter() - start


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                return h.hexdigest()
            h.update(b)


class Daemon:
    def __init__(self, tool, binary, out, extra):
        self.port = free_port()
        os.makedirs(out, exist_ok=True)
        args = [binary, "--enable-rpc", f"--rpc-listen-port={self.port}", "--rpc-secret=bench",
                "--no-conf", "-d", out, "--console-log-level=error", "-q"] + extra
        self.p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(200):
            try:
                call(self.port, "system.listMethods")
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        die(f"{tool} did not answer")

    def rss(self):
        kb = {}
        with open(f"/proc/{self.p.pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM"):
                    kb[k] = int(v.split()[0])
        return kb

    def unnamed_files(self):
        """The daemon's open files that have no name (its record and index files): their total
        size and how much of it is in the page cache (fincore), in KiB."""
        size = cached = 0
        fds = f"/proc/{self.p.pid}/fd"
        for fd in os.listdir(fds):
            path = os.path.join(fds, fd)
            try:
                if not os.readlink(path).endswith("(deleted)"):
                    continue
                size += os.stat(path).st_size
                out = subprocess.run(["fincore", "-b", "-n", "-o", "RES", path],
                                     capture_output=True, text=True).stdout.split()
                cached += int(out[0]) if out else 0
            except (OSError, ValueError):
                continue
        return {"unnamed_files_kib": size // 1024, "unnamed_cached_kib": cached // 1024}

    def cpu(self):
        """User plus system CPU seconds the daemon has used."""
        with open(f"/proc/{self.p.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        try:
            call(self.port, "aria2.forceShutdown", timeout=5)
        except OSError:
            pass
        try:
            self.p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def start_nginx(work, docroot):
    pki = os.path.join(work, "pki")
    os.makedirs(pki, exist_ok=True)
    if not os.path.exists(os.path.join(pki, "server.pem")):
        sh = lambda *a: subprocess.run(a, cwd=pki, check=True, capture_output=True)
        sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
           "-days", "90", "-subj", "/CN=bench CA", "-keyout", "ca.key", "-out", "ca.pem")
        sh("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
           "-subj", "/CN=127.0.0.1", "-keyout", "server.key", "-out", "server.csr")
        with open(os.path.join(pki, "ext.cnf"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        sh("openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
           "-CAcreateserial", "-days", "90", "-extfile", "ext.cnf", "-out", "server.pem")
    ngx = os.path.join(work, "nginx")
    for d in ("logs", "tmp"):
        os.makedirs(os.path.join(ngx, d), exist_ok=True)
    port = free_port()
    user = "user root;\n" if os.getuid() == 0 else ""
    with open(os.path.join(ngx, "nginx.conf"), "w") as f:
        f.write(f"""{user}worker_processes 1;
pid {ngx}/nginx.pid;
error_log {ngx}/logs/error.log warn;
events {{ worker_connections 1024; }}
http {{
    default_type application/octet-stream;
    access_log off;
    sendfile on;
    client_body_temp_path {ngx}/tmp/body;
    proxy_temp_path {ngx}/tmp/proxy;
    fastcgi_temp_path {ngx}/tmp/fastcgi;
    uwsgi_temp_path {ngx}/tmp/uwsgi;
    scgi_temp_path {ngx}/tmp/scgi;
    server {{
        listen 127.0.0.1:{port} ssl;
        root {docroot};
        ssl_certificate {pki}/server.pem;
        ssl_certificate_key {pki}/server.key;
    }}
}}
""")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    subprocess.run([nginx, "-p", ngx, "-c", f"{ngx}/nginx.conf", "-e", f"{ngx}/logs/error.log"],
                   check=True)
    return port, os.path.join(pki, "ca.pem"), lambda: subprocess.run(
        [nginx, "-p", ngx, "-c", f"{ngx}/nginx.conf", "-e", f"{ngx}/logs/error.log", "-s", "stop"])


def poll_during_download(tool, binary, work, url, ca, want_sha):
    out = os.path.join(work, "out", tool)
    shutil.rmtree(out, ignore_errors=True)
    d = Daemon(tool, binary, out, [f"--ca-certificate={ca}", "-x8", "-s8", "-k1M",
                                   "--file-allocation=none"])
    lat = []
    try:
        gid = call(d.port, "aria2.addUri", [[url]])[0]["result"]
        start = time.perf_counter()
        while True:
            v, dt = call(d.port, "aria2.tellActive", [["gid", "completedLength"]])
            lat.append(dt)
            st = call(d.port, "aria2.tellStatus", [gid, ["status"]])[0]["result"]["status"]
            if st not in ("active", "waiting"):
                break
            time.sleep(max(0.0, 0.1 - dt))
        wall = time.perf_counter() - start
        if st != "complete":
            die(f"{tool}: the download ended {st}")
    finally:
        d.stop()
    path = os.path.join(out, os.path.basename(url))
    got = sha256(path)
    if got != want_sha:
        die(f"{tool}: SHA-256 mismatch ({got})")
    os.remove(path)
    return {"polls": len(lat), "median_ms": statistics.median(lat) * 1000,
            "p99_ms": pct(lat, 99) * 1000, "max_ms": max(lat) * 1000, "wall_s": wall}


def many_results(tool, binary, work, n):
    out = os.path.join(work, "out", tool + "-results")
    shutil.rmtree(out, ignore_errors=True)
    dead = free_port()  # nothing listens there: each download fails at once
    d = Daemon(tool, binary, out, [f"--max-download-result={n}", "--max-tries=1",
                                   "--max-concurrent-downloads=16", "--retry-wait=0"])
    try:
        before = d.rss()
        start = time.perf_counter()
        url = f"http://127.0.0.1:{dead}/x"
        for i in range(0, n, 1000):
            calls = [{"methodName": "aria2.addUri",
                      "params": ["token:bench", [url], {"out": f"f{j}"}]}
                     for j in range(i, min(n, i + 1000))]
            call(d.port, "system.multicall", [calls], timeout=120)
        while True:
            stat = call(d.port, "aria2.getGlobalStat", timeout=120)[0]["result"]
            if int(stat["numStoppedTotal"]) >= n:
                break
            time.sleep(0.2)
        filled = time.perf_counter() - start
        lat_stopped = [call(d.port, "aria2.tellStopped", [0, 1000], timeout=120)[1] for _ in range(5)]
        lat_stat = [call(d.port, "aria2.getGlobalStat")[1] for _ in range(5)]
        after = d.rss()
    finally:
        d.stop()
    return {"results": n, "fill_s": filled, "rss_start_kib": before.get("VmRSS"),
            "rss_kib": after.get("VmRSS"), "hwm_kib": after.get("VmHWM"),
            "tellStopped_1000_ms": statistics.median(lat_stopped) * 1000,
            "getGlobalStat_ms": statistics.median(lat_stat) * 1000}


def finished_flat(tool, binary, work, n):
    """N downloads to a port where nothing listens, a thousand a call, each batch waited for
    until it has ended, with the default --max-download-result: RSS at four marks."""
    out = os.path.join(work, "out", tool + "-finished")
    shutil.rmtree(out, ignore_errors=True)
    dead = free_port()
    d = Daemon(tool, binary, out, ["--max-tries=1", "--retry-wait=0", "-j16"])
    marks = sorted({m for m in (1000, 10_000, n // 2, n) if 0 < m <= n})
    rows = []
    try:
        done = 0
        for m in marks:
            while done < m:
                k = min(1000, m - done)
                calls = [{"methodName": "aria2.addUri",
                          "params": ["token:bench", [f"http://127.0.0.1:{dead}/x{done + j}"],
                                     {"out": f"f{done + j}"}]} for j in range(k)]
                call(d.port, "system.multicall", [calls], timeout=300)
                done += k
                while True:
                    stat = call(d.port, "aria2.getGlobalStat", timeout=120)[0]["result"]
                    if int(stat["numStoppedTotal"]) >= done:
                        break
                    time.sleep(0.05)
            rows.append({"finished": m, "rss_kib": d.rss().get("VmRSS"),
                         "numStopped": int(stat["numStopped"])})
    finally:
        d.stop()
    return rows


def many_queued(tool, binary, work, n):
    """N paused downloads in the queue (nothing runs): RSS, and how long the adds and a
    tellWaiting page take."""
    out = os.path.join(work, "out", tool + "-queued")
    shutil.rmtree(out, ignore_errors=True)
    session = os.path.join(out, "session.txt")
    d = Daemon(tool, binary, out, [f"--save-session={session}"])
    try:
        before = d.rss()
        start = time.perf_counter()
        for i in range(0, n, 1000):
            calls = [{"methodName": "aria2.addUri",
                      "params": ["token:bench", [f"http://127.0.0.1:9/q/{j}.bin"],
                                 {"pause": "true"}]}
                     for j in range(i, min(n, i + 1000))]
            call(d.port, "system.multicall", [calls], timeout=300)
        filled = time.perf_counter() - start
        stat = call(d.port, "aria2.getGlobalStat", timeout=120)[0]["result"]
        if int(stat["numWaiting"]) != n:
            die(f"{tool}: {stat['numWaiting']} waiting, not {n}")
        lat = [call(d.port, "aria2.tellWaiting", [n // 2, 1000], timeout=120)[1] for _ in range(5)]
        # What the long queue costs the loop: CPU while idle for 10 s, and per cheap call (each
        # call is a step of the loop, after which the scheduler looks for a download to start).
        c0 = d.cpu()
        time.sleep(10)
        idle_cpu = d.cpu() - c0
        c0 = d.cpu()
        calls = 500
        for _ in range(calls):
            call(d.port, "aria2.getGlobalStat")
        per_call_ms = (d.cpu() - c0) / calls * 1000
        after = d.rss()
        files = d.unnamed_files()
        save = save_while_polling(d, session, n)
    finally:
        d.stop()
    return {"queued": n, "fill_s": filled, "rss_start_kib": before.get("VmRSS"),
            "rss_kib": after.get("VmRSS"), "hwm_kib": after.get("VmHWM"),
            "tellWaiting_1000_ms": statistics.median(lat) * 1000,
            "idle_cpu_s_per_10s": idle_cpu, "cpu_ms_per_getGlobalStat": per_call_ms, **files,
            **save}


def save_while_polling(d, session, n):
    """aria2.saveSession of the whole queue while another client calls getGlobalStat every
    10 ms: how long the save took, the slowest answer to the other client meanwhile, and how far
    the daemon's peak memory rose (VmHWM before and after)."""
    hwm0 = d.rss().get("VmHWM", 0)
    done = threading.Event()
    lat = []

    def poll():
        while not done.is_set():
            lat.append(call(d.port, "aria2.getGlobalStat", timeout=120)[1])
            time.sleep(0.01)

    t = threading.Thread(target=poll)
    t.start()
    start = time.perf_counter()
    try:
        call(d.port, "aria2.saveSession", timeout=600)
    finally:
        took = time.perf_counter() - start
        done.set()
        t.join()
    hwm1 = d.rss().get("VmHWM", 0)
    with open(session, "rb") as f:
        entries = sum(1 for line in f if line.startswith(b" gid="))
    if entries != n:
        die(f"the saved session holds {entries} entries, not {n}")
    return {"save_s": took, "save_max_getGlobalStat_ms": max(lat) * 1000 if lat else None,
            "save_polls": len(lat), "save_hwm_rise_kib": hwm1 - hwm0,
            "session_bytes": os.path.getsize(session)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/var/tmp/ringdl-bench-rpc")
    ap.add_argument("--size", type=int, default=1 << 30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--results", type=int, default=100_000)
    ap.add_argument("--tools", default="ringdl,aria2c")
    ap.add_argument("--queued", type=int, default=0,
                    help="also measure N paused downloads in the queue (e.g. 1000000)")
    ap.add_argument("--finished", type=int, default=0,
                    help="also measure RSS as N downloads finish with the default result limit")
    ap.add_argument("--ringdl", help="the ringdl binary to run (default: this tree's release build)")
    a = ap.parse_args()
    for prog in ("aria2c", "openssl"):
        if not shutil.which(prog):
            die(f"missing {prog}")
    if not (shutil.which("nginx") or os.path.exists("/usr/sbin/nginx")):
        die("missing nginx")
    binaries = {"ringdl": a.ringdl or os.path.join(REPO, "target/release/ringdl"),
                "aria2c": shutil.which("aria2c")}
    if not a.ringdl and not os.path.exists(binaries["ringdl"]):
        subprocess.run(["cargo", "build", "--release", "-q"], cwd=REPO, check=True)
    tools = a.tools.split(",")
    work = os.path.abspath(a.dir)
    docroot = os.path.join(work, "www")
    os.makedirs(docroot, exist_ok=True)
    big = os.path.join(docroot, f"big-{a.size}.bin")
    if not os.path.exists(big) or os.path.getsize(big) != a.size:
        with open(big, "wb") as f:
            left = a.size
            while left:
                n = min(left, 1 << 20)
                f.write(os.urandom(n))
                left -= n
    want = sha256(big)
    port, ca, stop_nginx = start_nginx(work, docroot)
    url = f"https://127.0.0.1:{port}/{os.path.basename(big)}"
    report = {"size": a.size, "rounds": [], "results": {}, "queued": {}, "finished": {}}
    try:
        for r in range(a.rounds):
            order = tools if r % 2 == 0 else list(reversed(tools))
            row = {}
            for t in order:
                row[t] = poll_during_download(t, binaries[t], work, url, ca, want)
                print(f"round {r + 1} {t}: {json.dumps(row[t])}", flush=True)
            report["rounds"].append(row)
        if a.results > 0:
            for t in tools:
                report["results"][t] = many_results(t, binaries[t], work, a.results)
                print(f"results {t}: {json.dumps(report['results'][t])}", flush=True)
        if a.queued > 0:
            for t in tools:
                report["queued"][t] = many_queued(t, binaries[t], work, a.queued)
                print(f"queued {t}: {json.dumps(report['queued'][t])}", flush=True)
        if a.finished > 0:
            for t in tools:
                report["finished"][t] = finished_flat(t, binaries[t], work, a.finished)
                print(f"finished {t}: {json.dumps(report['finished'][t])}", flush=True)
    finally:
        stop_nginx()
    print("summary:")
    for t in tools:
        if t in report["finished"]:
            marks = ", ".join(f"{x['finished']}: {x['rss_kib'] / 1024:.1f} MiB ({x['numStopped']} kept)"
                              for x in report["finished"][t])
            print(f"  {t}: RSS as downloads finish with the default result limit: {marks}")
        if t in report["queued"]:
            x = report["queued"][t]
            print(f"  {t}: {x['queued']} queued (paused) downloads: RSS {x['rss_kib'] / 1024:.1f} MiB "
                  f"(at start {x['rss_start_kib'] / 1024:.1f} MiB), added in {x['fill_s']:.1f} s, "
                  f"tellWaiting(N/2, 1000) {x['tellWaiting_1000_ms']:.1f} ms, "
                  f"idle CPU {x['idle_cpu_s_per_10s']:.2f} s per 10 s, "
                  f"CPU per getGlobalStat {x['cpu_ms_per_getGlobalStat']:.2f} ms; saveSession "
                  f"{x['save_s']:.2f} s ({x['session_bytes'] / 2**20:.0f} MiB), peak RSS +"
                  f"{x['save_hwm_rise_kib'] / 1024:.1f} MiB, slowest getGlobalStat meanwhile "
                  f"{x['save_max_getGlobalStat_ms']:.0f} ms; its unnamed files "
                  f"{x['unnamed_files_kib'] / 1024:.1f} MiB, {x['unnamed_cached_kib'] / 1024:.1f} MiB "
                  f"of it in the page cache")
        if not report["rounds"]:
            continue
        med = statistics.median(x[t]["median_ms"] for x in report["rounds"])
        p99 = statistics.median(x[t]["p99_ms"] for x in report["rounds"])
        mx = max(x[t]["max_ms"] for x in report["rounds"])
        wall = statistics.median(x[t]["wall_s"] for x in report["rounds"])
        print(f"  {t}: tellActive median {med:.2f} ms, p99 {p99:.2f} ms, max {mx:.1f} ms "
              f"(medians over {a.rounds} rounds; download wall {wall:.2f} s)")
        if t in report["results"]:
            x = report["results"][t]
            print(f"  {t}: {x['results']} stopped results: RSS {x['rss_kib'] / 1024:.1f} MiB "
                  f"(peak {x['hwm_kib'] / 1024:.1f} MiB, at start {x['rss_start_kib'] / 1024:.1f} MiB), "
                  f"tellStopped(0,1000) {x['tellStopped_1000_ms']:.1f} ms, filled in {x['fill_s']:.1f} s")
    with open(os.path.join(work, "report.json"), "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
