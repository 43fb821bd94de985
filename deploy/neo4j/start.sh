#!/usr/bin/env bash
# Starts a real Neo4j Community 5.26 (resolved from Maven Central, see pom.xml)
# on 127.0.0.1 with Bolt, in the background, and waits until it answers a
# Cypher query over Bolt. Prints shell exports on stdout, so
#
#   eval "$(deploy/neo4j/start.sh)"   # sets NEO4J_URL, NEO4J_USER, NEO4J_PASSWORD, NEO4J_TLS_CA, NEO4J_PID
#   go test ./graphrag/neo4j/...
#   deploy/neo4j/stop.sh
#
# Progress and errors go to stderr. The same exports are written to
# RUN_DIR/env. Running it again while the server runs prints the
# exports of the running server.
#
# Usage: start.sh [RUN_DIR]. RUN_DIR (or NEO4J_RUN_DIR; default
# deploy/neo4j/target/run) holds the data, logs, pid and URL files; pass the
# same one to stop.sh.
#
# Environment (all optional):
#   NEO4J_PORT           Bolt port; 0 (default) picks a free one
#   NEO4J_TEST_PASSWORD  password of user neo4j (>= 8 chars; default kgagent-test, so
#                        tests exercise authentication); set it empty to disable auth
#   NEO4J_TLS            1 (default when openssl is installed): Bolt also accepts TLS on
#                        the same port with a fresh self-signed certificate for
#                        127.0.0.1/localhost, exported as NEO4J_TLS_CA; 0 turns it off
#   NEO4J_HEAP           JVM heap (default 1g)
#   NEO4J_PAGECACHE      page cache (default 64m)
#   NEO4J_START_TIMEOUT  seconds to wait for READY (default 300)
#   NEO4J_KEEP_DATA=1    keep the data of a previous run (default: start empty)
#   NEO4J_SHUTDOWN_WAIT  how long a stop waits for Bolt connections and threads
#                        (Neo4j's default 5s each; e.g. 1s for tests that restart it)
#   NEO4J_JAVA_OPTS      extra JVM options (e.g. -XX:TieredStopAtLevel=1: starts
#                        faster, runs queries slower; the fault tests use it)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
run=${1:-${NEO4J_RUN_DIR:-$here/target/run}}
port=${NEO4J_PORT:-0}
heap=${NEO4J_HEAP:-1g}
pagecache=${NEO4J_PAGECACHE:-64m}
timeout=${NEO4J_START_TIMEOUT:-300}
password=${NEO4J_TEST_PASSWORD-kgagent-test}
main=dev.kgagent.neo4j.Launcher
tls=
if [ "${NEO4J_TLS:-1}" = 1 ] && command -v openssl >/dev/null; then
	tls=1
fi

log() { echo "neo4j/start.sh: $*" >&2; }

exports() {
	echo "export NEO4J_URL=$1"
	echo "export NEO4J_PID=$2"
	if [ -n "$tls" ]; then
		echo "export NEO4J_TLS_CA=$run/tls/public.crt"
	fi
	if [ -n "$password" ]; then
		echo "export NEO4J_USER=neo4j"
		echo "export NEO4J_PASSWORD=$password"
	fi
}

command -v java >/dev/null || { log "java not found (Neo4j 5.26 needs Java 17)"; exit 1; }
mkdir -p "$run"
run=$(cd "$run" && pwd)

# Already running? Then report it and stop here.
if [ -f "$run/neo4j.pid" ]; then
	pid=$(cat "$run/neo4j.pid")
	if kill -0 "$pid" 2>/dev/null && grep -q "$main" "/proc/$pid/cmdline" 2>/dev/null && [ -s "$run/bolt.url" ]; then
		log "already running (pid $pid)"
		exports "$(cat "$run/bolt.url")" "$pid" | tee "$run/env"
		exit 0
	fi
	rm -f "$run/neo4j.pid"
fi

# Build when the launcher or the pom changed: offline first (fast, no
# network), then online to fetch what the local Maven repository lacks.
stamp=$here/target/classes/dev/kgagent/neo4j/Launcher.class
if [ ! -f "$stamp" ] || [ ! -d "$here/target/lib" ] || [ "$here/pom.xml" -nt "$stamp" ] ||
	[ -n "$(find "$here/src" -newer "$stamp" -type f 2>/dev/null)" ]; then
	command -v mvn >/dev/null || { log "mvn not found (needed once, to resolve Neo4j from Maven Central)"; exit 1; }
	log "building the launcher (first run downloads Neo4j from Maven Central)"
	# Maven's local repository goes under the user cache, not ~/.m2.
	m2="${MAVEN_REPO_LOCAL:-${KGAGENT_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/kgagent}/m2}"
	if ! mvn -B -q -o "-Dmaven.repo.local=$m2" -f "$here/pom.xml" process-classes >"$run/build.log" 2>&1; then
		mvn -B -q "-Dmaven.repo.local=$m2" -f "$here/pom.xml" process-classes >"$run/build.log" 2>&1 || {
			log "maven build failed:"; cat "$run/build.log" >&2; exit 1; }
	fi
fi

if [ "${NEO4J_KEEP_DATA:-}" != 1 ]; then
	rm -rf "$run/data"
fi
rm -f "$run/bolt.url" "$run/env"

if [ -n "$tls" ]; then
	rm -rf "$run/tls" && mkdir -p "$run/tls"
	openssl req -x509 -newkey rsa:2048 -nodes -days 7 -subj "/CN=localhost" \
		-addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
		-keyout "$run/tls/private.key" -out "$run/tls/public.crt" >"$run/tls/openssl.log" 2>&1 || {
		log "openssl failed:"; cat "$run/tls/openssl.log" >&2; exit 1; }
fi
args=(--data "$run/data" --host 127.0.0.1 --port "$port" --pagecache "$pagecache" --url-file "$run/bolt.url")
if [ -n "$password" ]; then
	args+=(--password "$password")
fi
if [ -n "$tls" ]; then
	args+=(--tls-dir "$run/tls")
fi
if [ -n "${NEO4J_SHUTDOWN_WAIT:-}" ]; then
	args+=(--bolt-shutdown-wait "$NEO4J_SHUTDOWN_WAIT")
fi
# The JVM runs detached from this shell (setsid), so it outlives the caller's
# job control; stop.sh ends it with SIGTERM via the pid file.
# shellcheck disable=SC2086 # NEO4J_JAVA_OPTS is a list of options
setsid java "-Xms$heap" "-Xmx$heap" -XX:+UseParallelGC -XX:+ExitOnOutOfMemoryError ${NEO4J_JAVA_OPTS:-} \
	-cp "$here/target/classes:$here/target/lib/*" "$main" "${args[@]}" \
	>"$run/neo4j.log" 2>&1 </dev/null &
pid=$!
echo "$pid" >"$run/neo4j.pid"
log "started pid $pid, waiting up to ${timeout}s for Bolt to answer a query"

deadline=$((SECONDS + timeout))
while :; do
	if [ -s "$run/bolt.url" ] && grep -q '^READY ' "$run/neo4j.log"; then
		break
	fi
	if ! kill -0 "$pid" 2>/dev/null; then
		log "neo4j exited before it was ready; its log:"
		cat "$run/neo4j.log" >&2
		tail -n 50 "$run/data/logs/debug.log" >&2 2>/dev/null || true
		rm -f "$run/neo4j.pid"
		exit 1
	fi
	if [ "$SECONDS" -ge "$deadline" ]; then
		log "neo4j not ready after ${timeout}s; its log:"
		cat "$run/neo4j.log" >&2
		tail -n 50 "$run/data/logs/debug.log" >&2 2>/dev/null || true
		kill -TERM "$pid" 2>/dev/null || true
		rm -f "$run/neo4j.pid"
		exit 1
	fi
	sleep 0.5
done

url=$(cat "$run/bolt.url")
log "ready at $url after ${SECONDS}s"
exports "$url" "$pid" | tee "$run/env"
