#!/usr/bin/env python3
"""Memory of a daemon taking a large Metalink over RPC.

Starts each program given as a daemon (--enable-rpc, --pause=true so nothing starts, requests up
to 100 MiB), sends `aria2.addMetalink` with the document (base64), and prints the GIDs it gave,
numWaiting, the process's VmHWM and VmRSS (KiB) before and after, and how long the call took.

Usage: bench/metalink-rpc.py DOC.meta4 PROGRAM...   (e.g. target/release/ringdl aria2c)
       bench/metalink-rpc.py --make DOC.meta4 FILES MIRRORS   (writes such a document: FILES
       files of 4096 bytes, each with MIRRORS URLs on a port where nothing listens)
"""
import base64
import json
import subprocess
import sys
import tempfile
import time
import urllib.request


def call(port, method, params=()):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)})
    url = f"http://127.0.0.1:{port}/jsonrpc"
    return json.loads(urllib.request.urlopen(url, body.encode(), timeout=300).read())


def memory(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmHWM", "VmRSS")):
                out[line.split(":")[0]] = int(line.split()[1])
    return out


def run(doc, prog, port=16813):
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.Popen(
            [prog, "--no-conf", "--enable-rpc", f"--rpc-listen-port={port}", "--pause=true",
             "--rpc-max-request-size=100M", "-d", d, "-q"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1)
        before = memory(p.pid)
        encoded = base64.b64encode(open(doc, "rb").read()).decode()
        t = time.time()
        gids = call(port, "aria2.addMetalink", [encoded]).get("result", [])
        took = time.time() - t
        waiting = call(port, "aria2.getGlobalStat")["result"]["numWaiting"]
        after = memory(p.pid)
        call(port, "aria2.forceShutdown")
        p.wait(timeout=60)
        print(f"{prog}: {len(gids)} GIDs, numWaiting {waiting}, before {before}, after {after}, "
              f"call {took:.2f} s")


def make(path, files, mirrors):
    with open(path, "w") as out:
        out.write('<?xml version="1.0"?><metalink xmlns="urn:ietf:params:xml:ns:metalink">\n')
        for i in range(files):
            urls = "".join(f'<url priority="{m + 1}">http://127.0.0.1:9/m{m}/f{i}</url>'
                           for m in range(mirrors))
            out.write(f'<file name="f{i}"><size>4096</size>{urls}</file>\n')
        out.write("</metalink>\n")


if __name__ == "__main__":
    if sys.argv[1] == "--make":
        make(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        for prog in sys.argv[2:]:
            run(sys.argv[1], prog)
