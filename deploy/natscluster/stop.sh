#!/usr/bin/env bash
# Usage: stop.sh RUN_DIR. Stops the nats-server nodes that start.sh started
# with the same RUN_DIR, by their pid files (SIGTERM, then SIGKILL after 10 s).
# Does nothing when none runs.
set -euo pipefail
run=${1:?usage: stop.sh RUN_DIR}
for pidfile in "$run"/n*/pid; do
	[ -f "$pidfile" ] || continue
	pid=$(cat "$pidfile")
	# Only ever signal our own nats-server, never a recycled pid.
	if kill -0 "$pid" 2>/dev/null && grep -q nats-server "/proc/$pid/cmdline" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$pidfile"
done
