"""Runs one command and writes its wall time, CPU time (user + system) and
peak RSS as JSON to the file named by -o.
Used by deploy/bench.sh so the figures need no /usr/bin/time.

    python bench/measure.py -o OUT.json -- COMMAND ARGS...
"""

import json
import resource
import subprocess
import sys
import time


def main():
    args = sys.argv[1:]
    if len(args) < 4 or args[0] != "-o" or args[2] != "--":
        sys.exit("usage: measure.py -o OUT.json -- COMMAND ARGS...")
    out, cmd = args[1], args[3:]
    t0 = time.monotonic()
    rc = subprocess.call(cmd)
    wall = time.monotonic() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(out, "w") as f:
        json.dump({"rc": rc, "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime,
                   "user_s": ru.ru_utime, "sys_s": ru.ru_stime, "peak_rss_mb": ru.ru_maxrss / 1024}, f)
    sys.exit(rc)


if __name__ == "__main__":
    main()
