"""Drives a daemon (ringdl or aria2c) with aria2p's library, as a script or aria2p's TUI would:
add, poll, pause, resume, change options, move in the queue, remove, purge, listen to the
WebSocket notifications, shut down. Any mismatch exits non-zero with the reason; at the end one
JSON line says what happened, for the Rust test to check against the files on disk.

Usage: aria2p_scenario.py PORT SECRET BASE_URL
"""
import json
import sys
import threading
import time

import aria2p

port, secret, base = int(sys.argv[1]), sys.argv[2], sys.argv[3]
api = aria2p.API(aria2p.Client(host="http://127.0.0.1", port=port, secret=secret))
events = []
lock = threading.Lock()


def record(kind):
    def callback(_api, gid):
        with lock:
            events.append((kind, gid))

    return callback


def wait(predicate, what, limit=30.0):
    start = time.time()
    while time.time() - start < limit:
        if predicate():
            return
        time.sleep(0.05)
    sys.exit(f"timed out waiting for {what}")


def check(cond, what):
    if not cond:
        sys.exit(f"check failed: {what}")


def fresh(download):
    download.update()
    return download


api.listen_to_notifications(
    threaded=True,
    on_download_start=record("start"),
    on_download_pause=record("pause"),
    on_download_stop=record("stop"),
    on_download_complete=record("complete"),
    on_download_error=record("error"),
    timeout=1,
)
time.sleep(0.3)

version = api.client.get_version()
check("version" in version, f"getVersion: {version}")

big = api.add_uris([base + "/big.bin"])
small = api.add_uris([base + "/small.bin"], options={"out": "small-renamed.bin"})
wait(lambda: fresh(small).is_complete, "the small download to complete")
wait(lambda: fresh(big).is_active and big.completed_length > 1 << 20, "the big download to run")

# What `aria2p top` polls every second.
listed = {d.gid: d.status for d in api.get_downloads()}
check(listed.get(big.gid) == "active" and listed.get(small.gid) == "complete", f"get_downloads: {listed}")

check(api.pause([big]) == [True], "pause")
wait(lambda: fresh(big).is_paused, "the big download to pause")
paused_at = big.completed_length
check(0 < paused_at < big.total_length, f"paused at {paused_at} of {big.total_length}")

options = api.get_options([big])[0]
check(options.get("max-download-limit") == "0", f"max-download-limit: {options.get('max-download-limit')}")
check(api.set_options({"max-download-limit": "2M"}, [big]) == [True], "set_options")
check(api.get_options([big])[0].get("max-download-limit") == "2097152", "the limit as set")
check(api.set_options({"max-download-limit": "0"}, [big]) == [True], "set_options back")

# A queue of two paused downloads, moved about.
q1 = api.add_uris([base + "/small.bin"], options={"out": "q1.bin", "pause": "true"})
q2 = api.add_uris([base + "/small.bin"], options={"out": "q2.bin", "pause": "true"})
check(api.move_to_top(q2) == 0, "move_to_top")
waiting = [d.gid for d in api.get_downloads() if d.status in ("waiting", "paused")]
check(waiting[:3] == [q2.gid, big.gid, q1.gid], f"queue order {waiting}")
check(api.remove([q1]) == [True], "remove a waiting download")

check(api.resume([big]) == [True], "resume")
wait(lambda: fresh(big).is_complete, "the big download to complete", limit=60)
check(big.completed_length == big.total_length, "complete length")

check(api.resume([q2]) == [True], "resume q2")
wait(lambda: fresh(q2).is_complete, "q2 to complete")

gopts = api.get_global_options()
check(api.set_global_options({"max-concurrent-downloads": "3"}), "set_global_options")
check(api.get_global_options().get("max-concurrent-downloads") == "3", "max-concurrent-downloads")

stats = api.get_stats()
check(stats.num_active == 0 and stats.num_stopped >= 3, f"stats {stats._struct}")
check(api.purge(), "purge")
check(api.get_stats().num_stopped == 0, "purged")

time.sleep(1.5)
with lock:
    seen = list(events)
api.stop_listening()
print(json.dumps({
    "big": big.gid,
    "small": small.gid,
    "q2": q2.gid,
    "paused_at": paused_at,
    "events": seen,
    "version": version["version"],
}))
sys.stdout.flush()
api.client.shutdown()
