#!/usr/bin/env bash
# Usage: stop.sh [RUN_DIR]. Stops the Neo4j that start.sh started with the
# same RUN_DIR (default $NEO4J_RUN_DIR, else deploy/neo4j/target/run), by the
# pid in RUN_DIR/neo4j.pid:
# SIGTERM, so the database shuts down cleanly, then SIGKILL after
# NEO4J_STOP_TIMEOUT seconds (default 60). Does nothing when none runs.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
run=${1:-${NEO4J_RUN_DIR:-$here/target/run}}
timeout=${NEO4J_STOP_TIMEOUT:-60}
main=dev.kgagent.neo4j.Launcher

log() { echo "neo4j/stop.sh: $*" >&2; }

[ -f "$run/neo4j.pid" ] || { log "not running"; exit 0; }
pid=$(cat "$run/neo4j.pid")
# Only ever signal our own launcher, never a recycled pid.
if ! kill -0 "$pid" 2>/dev/null || ! grep -q "$main" "/proc/$pid/cmdline" 2>/dev/null; then
	log "not running (stale pid $pid)"
	rm -f "$run/neo4j.pid" "$run/bolt.url" "$run/env"
	exit 0
fi

kill -TERM "$pid"
deadline=$((SECONDS + timeout))
while kill -0 "$pid" 2>/dev/null; do
	if [ "$SECONDS" -ge "$deadline" ]; then
		log "pid $pid still running after ${timeout}s; killing it"
		kill -KILL "$pid" 2>/dev/null || true
		break
	fi
	sleep 0.2
done
rm -f "$run/neo4j.pid" "$run/bolt.url" "$run/env"
log "stopped (pid $pid)"
