#!/usr/bin/env python3
"""Turn the raw data of one bench/run.sh invocation into runs.csv, runs.json and RESULTS.md.

usage: report.py RESULTS_DIR OUT_MD

RESULTS_DIR holds meta.tsv, runs.tsv, time/*.txt, access.log and strace/*.txt as written by
bench/run.sh.  Only the standard library is used.
"""

import csv
import json
import os
import re
import statistics
import sys

KEEP_MARKER = "<!-- Below: measurements by other bench/ scripts; bench/run.sh keeps them. -->"

TOOLS = ["ringdl", "portable", "aria2c", "aria2c-best", "curl", "sftp"]
SCENARIOS = {
    "https": "Large file over HTTPS",
    "http": "Large file over plain HTTP",
    "small": "Small files over HTTPS",
    "ftp": "Large file over FTP (vsftpd, passive mode; its CPU in the nginx column)",
    "ftpsmall": "Small files over FTP (vsftpd, -j16: each control connection kept for the next file; its CPU in the nginx column)",
    "sftp": "Large file over SFTP (OpenSSH's sshd, password login; its CPU in the nginx column)",
}
LARGE = ("https", "http", "ftp", "sftp")
NAMES = {"https": "HTTPS", "http": "HTTP", "ftp": "FTP", "sftp": "SFTP"}
RW_FAMILY = ["read", "write", "pread64", "pwrite64", "readv", "writev",
             "recvfrom", "sendto", "recvmsg", "sendmsg"]
# Data-moving calls outside the family the target names; shown so the count cannot be dodged.
RW_OTHER = ["preadv", "pwritev", "preadv2", "pwritev2", "recvmmsg", "sendmmsg",
            "splice", "sendfile", "copy_file_range", "vmsplice", "tee"]
MIB = 1024 * 1024

# Targets from the issues (issue 12 tightened CPU and RSS: 0.30x aria2c, 10 MiB at -x8).
CPU_RATIO_TARGET = 0.30
RSS_TARGET_MIB = 10
# A tool "reached the link rate" when its goodput is at least this share of the link's rate
# (TCP/IP headers take about 5% at MTU 1500).
LINK_RATE_SHARE = 0.90
RESIDENCY_TARGET_PCT = 1.0
STRACE_TARGET = 200


def read_meta(res):
    meta = {}
    with open(os.path.join(res, "meta.tsv")) as f:
        for line in f:
            line = line.rstrip("\n")
            if "\t" in line:
                k, v = line.split("\t", 1)
                meta[k] = v
    return meta


def parse_time(path):
    """GNU time -v output -> user, sys (s), max RSS (KiB), exit status."""
    out = {"user_s": None, "sys_s": None, "maxrss_kib": None, "time_exit": None}
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("User time (seconds):"):
                    out["user_s"] = float(line.split(":")[1])
                elif line.startswith("System time (seconds):"):
                    out["sys_s"] = float(line.split(":")[1])
                elif line.startswith("Maximum resident set size (kbytes):"):
                    out["maxrss_kib"] = int(line.split(":")[1])
                elif line.startswith("Exit status:"):
                    out["time_exit"] = int(line.split(":")[1])
    except OSError:
        pass
    return out


LOG_RE = re.compile(r'^(\d+) (\d+) (\d+) (\d+) "([^"]*)" "([^"]*)" (\S+) "([^"]*)"$')


def parse_log_slice(log_bytes, start, end):
    """Requests nginx logged between two byte offsets of its access log."""
    reqs = conns = ranges = 0
    statuses = {}
    tls = set()
    ids = set()
    chunk = log_bytes[start:end].decode("utf-8", "replace")
    for line in chunk.splitlines():
        m = LOG_RE.match(line)
        if not m:
            continue
        reqs += 1
        ids.add(m.group(1))
        statuses[m.group(3)] = statuses.get(m.group(3), 0) + 1
        if m.group(6) not in ("-", ""):
            ranges += 1
        if m.group(7) not in ("/", "-/-", "-"):
            tls.add(m.group(7))
    conns = len(ids)
    return {
        "requests": reqs,
        "connections": conns,
        "range_requests": ranges,
        "statuses": " ".join(f"{k}x{v}" for k, v in sorted(statuses.items())),
        "tls": " ".join(sorted(tls)),
    }


def load_runs(res, meta):
    hz = int(meta.get("clk_tck", "100"))
    try:
        with open(os.path.join(res, "access.log"), "rb") as f:
            log_bytes = f.read()
    except OSError:
        log_bytes = b""
    runs = []
    with open(os.path.join(res, "runs.tsv")) as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    for row in rows:
        t = parse_time(os.path.join(res, row["timefile"]))
        fail = row["fail"] if row["fail"] != "-" else ""
        measured = float(row["t1"]) > 0
        r = {
            "round": int(row["round"]),
            "scenario": row["scenario"],
            "tool": row["tool"],
            "position": int(row["pos"]),
            "ok": fail == "",
            "fail": fail,
            "exit": int(row["exit"]),
        }
        if measured:
            busy = (int(row["busy1"]) - int(row["busy0"])) / hz
            ngx = (int(row["ng1"]) - int(row["ng0"])) / hz
            kd = (int(row["kd1"]) - int(row["kd0"])) / hz
            own = (int(row["self1"]) - int(row["self0"])) / hz
            others = (int(row["ot1"]) - int(row["ot0"])) / hz
            machine = busy - ngx - kd - own
            r.update({
                "wall_s": round(float(row["t1"]) - float(row["t0"]), 4),
                "user_s": t["user_s"],
                "sys_s": t["sys_s"],
                "cpu_s": (round(t["user_s"] + t["sys_s"], 3)
                          if t["user_s"] is not None and t["sys_s"] is not None else None),
                "maxrss_mib": round(t["maxrss_kib"] / 1024, 2) if t["maxrss_kib"] is not None else None,
                "machine_cpu_s": round(machine, 3),
                "machine_quiet_cpu_s": round(max(machine - others, 0.0), 3),
                "others_cpu_s": round(others, 3),
                "nginx_cpu_s": round(ngx, 3),
                "kdamond_cpu_s": round(kd, 3),
                "harness_cpu_s": round(own, 3),
                "busy_all_s": round(busy, 3),
            })
        else:
            r.update({k: None for k in ("wall_s", "user_s", "sys_s", "cpu_s", "maxrss_mib",
                                        "machine_cpu_s", "machine_quiet_cpu_s", "others_cpu_s",
                                        "nginx_cpu_s", "kdamond_cpu_s", "harness_cpu_s",
                                        "busy_all_s")})
        fb = int(row["filebytes"])
        resb = int(row["resident"])
        r.update({
            "file_bytes": fb,
            "resident_bytes": resb,
            "resident_pct": round(100.0 * resb / fb, 3) if fb > 0 else None,
            "files_ok": int(row["files_ok"]),
            "files_total": int(row["files_total"]),
            "source_resident_pct_before": int(row["src_resident_pct"] or 0),
        })
        r.update(parse_log_slice(log_bytes, int(row["log0"]), int(row["log1"])))
        r["timefile"] = row["timefile"]
        runs.append(r)
    return runs


def parse_strace(path):
    """strace -c summary -> {syscall: calls}."""
    calls = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 5 or parts[0].startswith(("%", "-")) or parts[-1] == "total":
                continue
            try:
                float(parts[0])
                calls[parts[-1]] = calls.get(parts[-1], 0) + int(parts[3])
            except ValueError:
                continue
    return calls


def load_strace(res, tools):
    out = {}
    for tool in tools:
        path = os.path.join(res, "strace", tool + ".txt")
        entry = {"tool": tool}
        if os.path.exists(path + ".fail"):
            with open(path + ".fail") as f:
                entry["fail"] = f.read().strip()
        if os.path.exists(path):
            calls = parse_strace(path)
            entry["rw_family"] = sum(calls.get(s, 0) for s in RW_FAMILY)
            entry["rw_other"] = sum(calls.get(s, 0) for s in RW_OTHER)
            entry["io_uring_enter"] = calls.get("io_uring_enter", 0)
            entry["total"] = sum(calls.values())
            entry["by_call"] = {s: calls[s] for s in RW_FAMILY + RW_OTHER + ["io_uring_enter"] if s in calls}
        elif "fail" not in entry:
            continue
        out[tool] = entry
    return out


# ------------------------------------------------------------------ statistics
def med(xs):
    return statistics.median(xs) if xs else None


def fmt(x, nd=2):
    if x is None:
        return "—"
    return f"{x:.{nd}f}"


def fmt_stat(xs, nd=2):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "—"
    if len(xs) == 1:
        return fmt(xs[0], nd)
    return f"{fmt(med(xs), nd)} ({fmt(min(xs), nd)}–{fmt(max(xs), nd)})"


def ok_runs(runs, scen, tool):
    return [r for r in runs if r["scenario"] == scen and r["tool"] == tool and r["ok"]]


def all_runs(runs, scen, tool):
    return [r for r in runs if r["scenario"] == scen and r["tool"] == tool]


def pair_ratios(runs, scen, a, b, key):
    """ringdl/other ratio within each round where both succeeded."""
    by_round = {}
    for r in runs:
        if r["scenario"] == scen and r["ok"] and r["tool"] in (a, b):
            by_round.setdefault(r["round"], {})[r["tool"]] = r
    ratios = []
    for rnd in sorted(by_round):
        pair = by_round[rnd]
        if a in pair and b in pair:
            x, y = pair[a].get(key), pair[b].get(key)
            if x is not None and y not in (None, 0):
                ratios.append(x / y)
    return ratios


def fmt_ratio(xs):
    if not xs:
        return "—"
    if len(xs) == 1:
        return f"{xs[0]:.2f}× (1 pair)"
    return f"{med(xs):.2f}× ({min(xs):.2f}–{max(xs):.2f}, {len(xs)} pairs)"


def size_label(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    if n >= MIB:
        return f"{n / MIB:.1f} MiB"
    return f"{n} bytes"


# ------------------------------------------------------------------ report
def scenario_table(runs, scen, tools, meta):
    lines = []
    large = scen in LARGE
    head = ["tool", "ok", "wall s", "CPU s (user+sys)", "machine CPU s (excl. nginx)",
            "machine CPU s, less other processes", "other processes CPU s", "nginx CPU s",
            "peak RSS MiB"]
    if large:
        head += ["resident MiB", "resident %", "MiB/s"]
    else:
        head += ["resident KiB"]
    head += ["requests", "connections", "ranged"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for tool in tools:
        rs = ok_runs(runs, scen, tool)
        n_all = len(all_runs(runs, scen, tool))
        if n_all == 0:
            continue
        row = [tool, f"{len(rs)}/{n_all}"]
        row.append(fmt_stat([r["wall_s"] for r in rs]))
        row.append(fmt_stat([r["cpu_s"] for r in rs]))
        row.append(fmt_stat([r["machine_cpu_s"] for r in rs]))
        row.append(fmt_stat([r["machine_quiet_cpu_s"] for r in rs]))
        row.append(fmt_stat([r["others_cpu_s"] for r in rs]))
        row.append(fmt_stat([r["nginx_cpu_s"] for r in rs]))
        row.append(fmt_stat([r["maxrss_mib"] for r in rs], 1))
        if large:
            row.append(fmt_stat([r["resident_bytes"] / MIB for r in rs], 1))
            row.append(fmt_stat([r["resident_pct"] for r in rs], 1))
            row.append(fmt_stat([r["file_bytes"] / MIB / r["wall_s"] for r in rs if r["wall_s"]], 0))
        else:
            row.append(fmt_stat([r["resident_bytes"] / 1024 for r in rs], 0))
        row.append(fmt_stat([r["requests"] for r in rs], 0))
        row.append(fmt_stat([r["connections"] for r in rs], 0))
        row.append(fmt_stat([r["range_requests"] for r in rs], 0))
        lines.append("| " + " | ".join(row) + " |")
    fails = [r for r in runs if r["scenario"] == scen and not r["ok"]]
    if fails:
        lines.append("")
        lines.append("Failed runs (excluded from the figures above): " + "; ".join(
            f"round {r['round']} {r['tool']}: {r['fail']}" for r in fails))
    tls = sorted({f"{r['tool']}: {r['tls']}" for r in runs
                  if r["scenario"] == scen and r["tls"] and r["ok"]})
    if tls:
        lines.append("")
        lines.append("Negotiated TLS (from nginx's log): " + "; ".join(tls) + ".")
    return lines


def ratio_table(runs, scen, tools):
    lines = []
    ran = {r["tool"] for r in runs if r["scenario"] == scen}
    # (A tool with no command for this scenario, OpenSSH's sftp for HTTPS, has no pair.)
    pairs = [(a, b) for a in ("ringdl", "portable") for b in ("aria2c", "aria2c-best", "curl", "sftp")
             if a in tools and b in tools and b in ran]
    if "ringdl" in tools and "portable" in tools:
        pairs.append(("ringdl", "portable"))
    if not pairs:
        return lines
    metrics = [("cpu_s", "CPU"), ("machine_cpu_s", "machine CPU"),
               ("machine_quiet_cpu_s", "machine CPU less other processes"), ("wall_s", "wall"),
               ("maxrss_mib", "peak RSS")]
    head = ["ratio (median of same-round pairs)"] + [m[1] for m in metrics]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for a, b in pairs:
        row = [f"{a} / {b}"]
        for key, _ in metrics:
            row.append(fmt_ratio(pair_ratios(runs, scen, a, b, key)))
        lines.append("| " + " | ".join(row) + " |")
    return lines


def target_line(label, ok, have, figure, nfail, nall):
    """One line per target: met only when every ringdl run succeeded and the figure holds."""
    failnote = f"ringdl failed {nfail} of {nall} runs" if nfail else ""
    if not have:
        return f"- {label}: **missed** — not measured ({failnote or 'no data'})"
    word = "met" if ok and not nfail else "**missed**"
    return f"- {label}: {word} — {figure}" + (f" ({failnote})" if failnote else "")


def targets(runs, strace, tools, meta):
    out = []
    if "ringdl" not in tools:
        return ["- ringdl was not part of this run: no target can be judged."]
    for scen in LARGE:
        rall = all_runs(runs, scen, "ringdl")
        if not rall:
            continue
        rs = ok_runs(runs, scen, "ringdl")
        name = NAMES[scen]
        nfail, nall = len(rall) - len(rs), len(rall)
        if "aria2c" in tools:
            for key, label in (("cpu_s", "CPU (process)"),
                               ("machine_cpu_s", "CPU (machine-wide, excl. nginx)")):
                xs = pair_ratios(runs, scen, "ringdl", "aria2c", key)
                ok = bool(xs) and med(xs) <= CPU_RATIO_TARGET
                fig = fmt_ratio(xs)
                if key == "machine_cpu_s" and xs:
                    fig += (" (less other processes: "
                            + fmt_ratio(pair_ratios(runs, scen, "ringdl", "aria2c", "machine_quiet_cpu_s"))
                            + ")")
                out.append(target_line(f"{name} {label} <= {CPU_RATIO_TARGET}× aria2c", ok, xs,
                                       fig, nfail, nall))
        for other in ("aria2c", "aria2c-best"):
            if other not in tools:
                continue
            xs = pair_ratios(runs, scen, "ringdl", other, "wall_s")
            ok = bool(xs) and med(xs) <= 1.0
            out.append(target_line(f"{name} wall <= {other}", ok, xs, fmt_ratio(xs), nfail, nall))
        rate = int(meta.get("link_rate_bytes") or 0)
        if rate:
            for tool in tools:
                ts = [r["file_bytes"] / r["wall_s"] for r in ok_runs(runs, scen, tool) if r["wall_s"]]
                if not ts:
                    continue
                share = med(ts) / rate
                line = (f"{name} {tool} at the link rate (>= {LINK_RATE_SHARE:.0%} of "
                        f"{rate * 8 / 1e9:g} Gbit/s)")
                fig = f"median {med(ts) / MIB:.0f} MiB/s, {share:.1%} of the link"
                if tool == "ringdl":
                    out.append(target_line(line, share >= LINK_RATE_SHARE, ts, fig, nfail, nall))
                else:
                    out.append(f"- {line}: {'yes' if share >= LINK_RATE_SHARE else 'no'} — {fig}")
        rss = [r["maxrss_mib"] for r in rs if r["maxrss_mib"] is not None]
        ok = bool(rss) and max(rss) <= RSS_TARGET_MIB
        fig = f"max {max(rss):.1f} MiB over {len(rss)} run{'s' if len(rss) != 1 else ''}" if rss else ""
        conns = meta.get("conns", "8")
        label = f"{name} peak RSS <= {RSS_TARGET_MIB} MiB" + (
            "" if conns == "8" else f" (this run: -x{conns}; the target is for -x8)")
        out.append(target_line(label, ok, rss, fig, nfail, nall))
        pct = [r["resident_pct"] for r in rs if r["resident_pct"] is not None]
        ok = bool(pct) and max(pct) <= RESIDENCY_TARGET_PCT
        res_mib = max((r["resident_bytes"] for r in rs), default=0) / MIB
        fig = (f"max {max(pct):.2f}% ({res_mib:.1f} MiB) of the output file in the page cache "
               f"after the run + sync" if pct else "")
        out.append(target_line(f"{name} page-cache residency <= {RESIDENCY_TARGET_PCT:g}% of the file",
                               ok, pct, fig, nfail, nall))
    out += portable_targets(runs, tools)
    rall = all_runs(runs, "small", "ringdl")
    rs = ok_runs(runs, "small", "ringdl")
    for other, label in (("aria2c", "aria2c"), ("curl", "curl -Z")):
        if rall and other in tools:
            xs = pair_ratios(runs, "small", "ringdl", other, "wall_s")
            ok = bool(xs) and med(xs) <= 1.0
            out.append(target_line(f"Small files ({meta.get('small_n')} over HTTPS) wall <= {label}", ok,
                                   xs, fmt_ratio(xs), len(rall) - len(rs), len(rall)))
    if "ringdl" in strace:
        e = strace["ringdl"]
        label = (f"strace: < {STRACE_TARGET} read/write-family syscalls for "
                 f"{size_label(int(meta.get('strace_bytes', '0')))} HTTPS")
        if "fail" in e or "rw_family" not in e:
            out.append(f"- {label}: **missed** — the ringdl run failed ({e.get('fail', 'no strace output')})")
        else:
            ok = e["rw_family"] < STRACE_TARGET
            out.append(f"- {label}: {'met' if ok else '**missed**'} — {e['rw_family']} "
                       f"(+ {e['rw_other']} other data syscalls; {e['io_uring_enter']} io_uring_enter)")
    return out


def portable_targets(runs, tools):
    """The portable reactor: below aria2c's CPU and peak RSS, page cache flat; io_uring's lead."""
    out = []
    if "portable" not in tools:
        return out
    for scen in LARGE:
        pall = all_runs(runs, scen, "portable")
        if not pall:
            continue
        ps = ok_runs(runs, scen, "portable")
        name = NAMES[scen]
        nfail, nall = len(pall) - len(ps), len(pall)
        if "aria2c" in tools:
            for key, label in (("cpu_s", "CPU"), ("maxrss_mib", "peak RSS")):
                xs = pair_ratios(runs, scen, "portable", "aria2c", key)
                ok = bool(xs) and med(xs) < 1.0
                out.append(target_line(f"{name} portable reactor {label} < aria2c's", ok, xs,
                                       fmt_ratio(xs), nfail, nall))
        pct = [r["resident_pct"] for r in ps if r["resident_pct"] is not None]
        ok = bool(pct) and max(pct) <= RESIDENCY_TARGET_PCT
        fig = f"max {max(pct):.2f}% of the output file in the page cache" if pct else ""
        out.append(target_line(f"{name} portable reactor page-cache residency <= "
                               f"{RESIDENCY_TARGET_PCT:g}%", ok, pct, fig, nfail, nall))
        if "ringdl" in tools:
            xs = pair_ratios(runs, scen, "ringdl", "portable", "cpu_s")
            if xs:
                out.append(f"- {name} io_uring reactor's CPU / the portable reactor's: "
                           f"{fmt_ratio(xs)} (stated, not a target)")
    return out


def strace_table(strace, meta):
    lines = []
    if not strace:
        return lines
    lines.append("| tool | read/write family | other data syscalls | io_uring_enter | all syscalls | detail |")
    lines.append("|---|---|---|---|---|---|")
    for tool in TOOLS:
        e = strace.get(tool)
        if not e:
            continue
        if "rw_family" not in e:
            lines.append(f"| {tool} | failed: {e.get('fail')} | | | | |")
            continue
        detail = ", ".join(f"{k} {v}" for k, v in e["by_call"].items())
        status = f" (run failed: {e['fail']})" if "fail" in e else ""
        lines.append(f"| {tool}{status} | {e['rw_family']} | {e['rw_other']} | {e['io_uring_enter']} "
                     f"| {e['total']} | {detail} |")
    return lines


def write_markdown(path, meta, runs, strace):
    tools = [t for t in TOOLS if t in meta.get("tools", "").split(",")]
    quick = meta.get("quick") == "1"
    size = int(meta["size_bytes"])
    L = []
    L.append("# ringdl benchmark results")
    L.append("")
    if quick:
        L.append("> **Quick run** (`--quick`): a short run on a small file. It checks the harness; its "
                 "figures are not evidence for or against any target.")
        L.append("")
    if meta.get("ringdl_status", "ok") != "ok" or any(
            not r["ok"] for r in runs if r["tool"] in ("ringdl", "portable")):
        L.append("> **ringdl failed some or all of its runs** (see the failures under each table): "
                 "do not commit this file as a result.")
        L.append("")
    L.append(f"* Date: {meta.get('date')}")
    L.append(f"* Command: `{meta.get('command')}`")
    L.append(f"* Machine: {meta.get('nproc')} CPUs ({meta.get('cpu_model')}), {meta.get('mem')}, "
             f"{meta.get('kernel')}; background load before the rounds: {meta.get('idle_busy_pct', '?')}% of one CPU")
    L.append(f"* Work dir filesystem: {meta.get('fs')}")
    L.append(f"* ringdl: git {meta.get('ringdl_rev')}"
             + (f" ({meta['ringdl_version']})" if meta.get("ringdl_version") else "")
             + (f" — **{meta['ringdl_status']}**" if meta.get("ringdl_status") != "ok" else ""))
    L.append(f"* {meta.get('aria2c')}; {meta.get('curl')}")
    L.append(f"* {meta.get('nginx')} ({meta.get('nginx_workers')} workers, sendfile on, keepalive, "
             f"HTTP/1.1, TLS 1.2/1.3 with an ECDSA P-256 certificate), {meta.get('openssl')}")
    L.append(f"* Network: {meta.get('link', 'loopback')}; large downloads with "
             f"`-x{meta.get('conns', '8')} -s{meta.get('conns', '8')}` (ringdl, aria2c)")
    nr = int(meta.get("rounds", "0"))
    nw = int(meta.get("warmup", "0") or 0)
    warm = f" after {nw} unmeasured warm-up round{'s' if nw != 1 else ''}" if nw else ""
    L.append(f"* {nr} interleaved round{'s' if nr != 1 else ''}{warm}; the tools' order rotates every round. "
             f"Large file {size_label(size)}; {meta.get('small_n')} small files "
             f"({int(meta.get('small_bytes', 0)) / 1024:.0f} KiB in all).")
    L.append("")
    L.append("Figures are median (min–max) over the successful runs. CPU = user+sys of the client "
             "process (GNU time). Machine CPU = busy time of all CPUs from /proc/stat over the run "
             "and a final `sync`, minus the CPU of nginx (master and workers), of DAMON's kdamond "
             "threads if any, and of the harness's own shell over the same interval; kernel threads "
             "(writeback, softirq) stay in. Other processes = CPU of every other user-space process "
             "in that window (another build or test on a shared machine): a large figure marks a "
             "noisy run, and the column before it takes it out. Resident = the output "
             "file's bytes in the page cache (`fincore`) after the run and `sync`. Ratios are taken "
             "within each round, then the median is reported. Every output was checked against the "
             "source's SHA-256.")
    L.append("")
    try:
        idle = int(meta.get("idle_busy_pct", "0"))
    except ValueError:
        idle = 0
    if idle >= 20:
        L.append(f"> **Noisy machine**: with nothing of the benchmark running, the CPUs were {idle}% "
                 "busy (of one CPU) before the rounds. Look at the 'other processes' column and "
                 "prefer the 'less other processes' figures, or run again when it is quiet.")
        L.append("")
    kd = sum(r["kdamond_cpu_s"] or 0 for r in runs)
    rewarm = sum(1 for r in runs if r.get("source_resident_pct_before", 100) < 100)
    if kd >= 0.01 or rewarm:
        L.append(f"Noise: kdamond used {kd:.2f} s of CPU inside the measured windows in all "
                 f"(excluded from machine CPU); the served file had been partly paged out and was "
                 f"re-read into the page cache before {rewarm} of {len(runs)} runs.")
        L.append("")
    L.append("## Targets")
    L.append("")
    L.extend(targets(runs, strace, tools, meta))
    L.append("")
    for scen, title in SCENARIOS.items():
        if not any(r["scenario"] == scen for r in runs):
            continue
        extra = f", {size_label(size)}" if scen not in ("small", "ftpsmall") else f", {meta.get('small_n')} files"
        L.append(f"## {title}{extra}")
        L.append("")
        L.extend(scenario_table(runs, scen, tools, meta))
        L.append("")
        rt = ratio_table(runs, scen, tools)
        if rt:
            L.extend(rt)
            L.append("")
        L.append("Commands:")
        L.append("")
        L.append("```")
        for tool in tools:
            c = meta.get(f"cmd_{scen}_{tool}")
            if c:
                L.append(c)
        L.append("```")
        L.append("")
    if strace:
        L.append(f"## System calls for one {size_label(int(meta.get('strace_bytes', 0)))} HTTPS download")
        L.append("")
        L.append("`strace -f -c`, same command line as the large HTTPS runs. Read/write family: "
                 + ", ".join(RW_FAMILY) + ". Other data syscalls: " + ", ".join(RW_OTHER) + ".")
        L.append("")
        L.extend(strace_table(strace, meta))
        L.append("")
    # Measurements made by other scripts (bench/sim.sh, bench/autosave-gap.sh, ...) live below
    # KEEP_MARKER in the same file and survive this rewrite.
    try:
        with open(path) as f:
            old = f.read()
        at = old.find(KEEP_MARKER)
        if at >= 0:
            L.append(old[at:].rstrip("\n"))
            L.append("")
    except OSError:
        pass
    with open(path, "w") as f:
        f.write("\n".join(L))


def write_raw(res, runs, strace):
    fields = ["round", "scenario", "tool", "position", "ok", "fail", "exit", "wall_s", "user_s",
              "sys_s", "cpu_s", "machine_cpu_s", "machine_quiet_cpu_s", "others_cpu_s", "nginx_cpu_s",
              "kdamond_cpu_s", "harness_cpu_s", "busy_all_s", "maxrss_mib",
              "file_bytes", "resident_bytes", "resident_pct", "files_ok", "files_total",
              "requests", "connections", "range_requests", "statuses", "tls",
              "source_resident_pct_before", "timefile"]
    with open(os.path.join(res, "runs.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in runs:
            w.writerow(r)
    with open(os.path.join(res, "runs.json"), "w") as f:
        json.dump({"runs": runs, "strace": strace}, f, indent=1)


def print_summary(runs, strace, tools, out_md):
    for scen, title in SCENARIOS.items():
        if not any(r["scenario"] == scen for r in runs):
            continue
        print(f"\n{title}")
        print(f"  {'tool':11} {'ok':>5} {'wall s':>8} {'cpu s':>8} {'machine s':>10} {'rss MiB':>8} {'resident':>9}")
        for tool in tools:
            rs = ok_runs(runs, scen, tool)
            n = len(all_runs(runs, scen, tool))
            if not n:
                continue
            def m(key):
                v = med([r[key] for r in rs if r[key] is not None])
                return "-" if v is None else f"{v:.2f}"
            pct = med([r["resident_pct"] for r in rs if r["resident_pct"] is not None])
            print(f"  {tool:11} {len(rs):>2}/{n:<2} {m('wall_s'):>8} {m('cpu_s'):>8} {m('machine_cpu_s'):>10} "
                  f"{m('maxrss_mib'):>8} {('-' if pct is None else f'{pct:.1f}%'):>9}")
    if strace:
        print("\nstrace -f -c (read/write family | io_uring_enter | all)")
        for tool in tools:
            e = strace.get(tool)
            if e and "rw_family" in e and "fail" not in e:
                print(f"  {tool:11} {e['rw_family']:>8} {e['io_uring_enter']:>8} {e['total']:>8}")
            elif e:
                print(f"  {tool:11} failed: {e.get('fail')}")
    print(f"\nreport: {out_md}")


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    res, out_md = sys.argv[1], sys.argv[2]
    meta = read_meta(res)
    runs = load_runs(res, meta)
    tools = [t for t in TOOLS if t in meta.get("tools", "").split(",")]
    strace = load_strace(res, tools) if "strace" in meta.get("scenarios", "") else {}
    write_raw(res, runs, strace)
    write_markdown(out_md, meta, runs, strace)
    print_summary(runs, strace, tools, out_md)
    bad = [r for r in runs if not r["ok"]]
    for r in bad:
        print(f"FAILURE: round {r['round']} {r['scenario']} {r['tool']}: {r['fail']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
