"""Starts `kgagent serve` on a data dir, times how long it takes to answer
/readyz with 200, then sends N requests over HTTP — /api/v1/search and
/api/v1/agent alternating, every question distinct (the questions of a
known-item set under four phrasings, so the answer cache never answers) —
and writes as JSON (serve's log beside it, OUT.json.log): ready seconds and
serve's CPU seconds by then (cpu_ready_s), RSS when ready, RSS after each fifth of
the requests and at the end, the peak RSS, search/agent p50/p99 in ms
(client side, one request at a time) and serve's CPU ms per request
(cpu_ms_per_request, background work included). Used by deploy/bench-scale.sh.

With --heap, serve runs with KGAGENT_BENCH_HEAPPROFILE=OUT.json.heap and is
sent SIGUSR1 when ready and after each fifth (once its RSS is read): it
collects garbage and writes a heap profile to OUT.json.heap.N (N = 1 when
ready, 2..6 after each fifth), and the JSON gets live_heap_mb (the heap
after each of those collections). The collections add to serve's CPU, so
compare cpu_ms_per_request only between runs made the same way.

    python bench/serve_measure.py -o OUT.json -n N -q QUESTIONS.jsonl -c COLLECTION -- KGAGENT ARGS...

ARGS are the global flags (--data-dir ...); the script adds `serve --addr`.
"""

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request


def status_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def cpu_s(pid):
    """User+system CPU seconds the process has used (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    if "--" not in sys.argv:
        sys.exit("usage: serve_measure.py -o OUT.json -n N -q QUESTIONS.jsonl -c COLLECTION -- KGAGENT ARGS...")
    i = sys.argv.index("--")
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", required=True)
    ap.add_argument("-n", type=int, default=1000)
    ap.add_argument("-q", required=True)
    ap.add_argument("-c", default="default")
    ap.add_argument("--heap", action="store_true", help="heap profiles when ready and after each fifth (see above)")
    a = ap.parse_args(sys.argv[1:i])
    cmd = sys.argv[i + 1:]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    t0 = time.monotonic()
    log = open(a.o + ".log", "w")  # serve's own log (readiness polls warn until it is ready)
    env = dict(os.environ)
    if a.heap:
        env["KGAGENT_BENCH_HEAPPROFILE"] = a.o + ".heap"
    p = subprocess.Popen(cmd + ["serve", "--addr", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=log, env=env)
    live = []

    def heap_profile():
        """SIGUSR1, then wait for serve's 'heap profile N' line."""
        if not a.heap:
            return
        p.send_signal(signal.SIGUSR1)
        want, t = len(live) + 1, time.monotonic()
        while time.monotonic() - t < 60:
            with open(a.o + ".log") as f:
                m = re.findall(r"heap profile (\d+): HeapAlloc=(\d+)", f.read())
            if len(m) >= want:
                live.append(int(m[want - 1][1]) / 1e6)
                return
            time.sleep(0.05)
    try:
        while True:
            try:
                if urllib.request.urlopen(base + "/readyz", timeout=2).status == 200:
                    break
            except Exception:
                pass
            if p.poll() is not None:
                sys.exit("serve exited before it was ready")
            if time.monotonic() - t0 > 600:
                sys.exit("serve not ready after 600 s")
            time.sleep(0.05)
        # CPU seconds beside the wall times: on a shared box they, not
        # the seconds, compare between runs
        cpu_ready = cpu_s(p.pid)
        out = {"ready_s": time.monotonic() - t0, "cpu_ready_s": cpu_ready, "rss_ready_mb": status_kb(p.pid, "VmRSS") / 1024, "requests": a.n, "rss_mb": []}
        heap_profile()
        qs = []
        with open(a.q) as f:
            for line in f:
                q = json.loads(line)["question"]
                qs.append(q.split(":", 1)[1].strip() if ":" in q else q)
        phrasings = ["Which Java class is this: ", "What class or interface: ", "Name the Java type: ", "Which type in the JDK: "]
        lat = {"search": [], "agent": []}
        for n in range(a.n):
            q = phrasings[(n // len(qs)) % len(phrasings)] + qs[n % len(qs)]
            kind = "search" if n % 2 == 0 else "agent"
            body = {"query": q, "collection": a.c, "k": 10} if kind == "search" else {"question": q, "collection": a.c}
            req = urllib.request.Request(f"{base}/api/v1/{kind}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
            s = time.monotonic()
            urllib.request.urlopen(req, timeout=120).read()
            lat[kind].append((time.monotonic() - s) * 1000)
            if (n + 1) % max(1, a.n // 5) == 0:
                out["rss_mb"].append(status_kb(p.pid, "VmRSS") / 1024)
                heap_profile()
        out["rss_end_mb"] = status_kb(p.pid, "VmRSS") / 1024
        out["cpu_ms_per_request"] = (cpu_s(p.pid) - cpu_ready) * 1000 / max(1, a.n)
        out["peak_rss_mb"] = status_kb(p.pid, "VmHWM") / 1024
        if a.heap:
            out["live_heap_mb"] = live
        for k, v in lat.items():
            v.sort()
            if v:
                out[k + "_p50_ms"] = v[len(v) // 2]
                out[k + "_p99_ms"] = v[min(len(v) - 1, int(len(v) * 0.99))]
        with open(a.o, "w") as f:
            json.dump(out, f)
    finally:
        p.terminate()
        p.wait()


if __name__ == "__main__":
    main()
