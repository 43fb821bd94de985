#!/usr/bin/env bash
# Starts a three-node NATS JetStream cluster of real nats-server processes on
# 127.0.0.1 (random free ports), in the background, and waits until every node
# reports JetStream healthy. Prints shell exports on stdout, so
#
#   eval "$(deploy/natscluster/start.sh RUN_DIR)"   # sets NATS_CLUSTER_URLS, NATS_SERVER
#   deploy/natscluster/stop.sh RUN_DIR
#
# nats-server is built from the Go module proxy at the version go.mod
# requires (go install github.com/nats-io/nats-server/v2@VERSION) into
# $KGAGENT_TOOLS/bin/nats-server-VERSION, once; later runs reuse it.
#
# Usage: start.sh RUN_DIR. RUN_DIR holds the configs, JetStream data, logs
# and pid files of the three nodes; pass the same one to stop.sh.
# Environment (optional): NATS_CLUSTER_NODES (default 3),
# NATS_START_TIMEOUT seconds (default 60).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
run=${1:?usage: start.sh RUN_DIR}
nodes=${NATS_CLUSTER_NODES:-3}
timeout=${NATS_START_TIMEOUT:-60}
tools=${KGAGENT_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/kgagent}

log() { echo "natscluster/start.sh: $*" >&2; }

version=$(awk '$1 == "github.com/nats-io/nats-server/v2" {print $2}' "$root/go.mod")
[ -n "$version" ] || { log "go.mod names no nats-server version"; exit 1; }
bin="$tools/bin/nats-server-$version"
if [ ! -x "$bin" ]; then
	log "building nats-server $version from the Go module proxy"
	tmp=$(mktemp -d "$tools/build-nats-server.XXXXXX")
	(cd "$tmp" && GOBIN="$tmp" GOFLAGS=-mod=mod go install "github.com/nats-io/nats-server/v2@$version") >&2
	mkdir -p "$tools/bin"
	mv "$tmp/nats-server" "$bin"
	rm -rf "$tmp"
fi

mkdir -p "$run"
run=$(cd "$run" && pwd)
"$here/stop.sh" "$run" 2>/dev/null || true

# Free loopback ports: random ones nobody listens on (checked with ss).
used=$(ss -Htln 2>/dev/null | awk '{print $4}' | sed 's/.*://' || true)
taken=" "
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 40000))
		case "$taken" in *" $p "*) continue ;; esac
		if ! grep -qx "$p" <<<"$used"; then
			taken="$taken$p "
			echo "$p"
			return
		fi
	done
}
declare -a client route http
for ((i = 1; i <= nodes; i++)); do
	client[i]=$(free_port)
	route[i]=$(free_port)
	http[i]=$(free_port)
done
routes=""
for ((i = 1; i <= nodes; i++)); do
	routes="$routes\"nats-route://127.0.0.1:${route[i]}\", "
done

urls=""
for ((i = 1; i <= nodes; i++)); do
	d="$run/n$i"
	rm -rf "$d" && mkdir -p "$d"
	cat >"$d/nats.conf" <<CONF
server_name: n$i
listen: 127.0.0.1:${client[i]}
http: 127.0.0.1:${http[i]}
max_payload: 8MB
jetstream { store_dir: "$d/js" }
cluster {
  name: kgagent-test
  listen: 127.0.0.1:${route[i]}
  routes: [ ${routes%, } ]
}
CONF
	setsid "$bin" -c "$d/nats.conf" >"$d/nats.log" 2>&1 </dev/null &
	echo $! >"$d/pid"
	urls="${urls:+$urls,}nats://127.0.0.1:${client[i]}"
done

# healthy PORT: the node's monitor answers GET /healthz with 200 (JetStream
# current with its cluster). Plain bash, so curl is not required.
healthy() {
	local line
	exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
	printf 'GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
	IFS= read -r -t 2 line <&3 || true
	exec 3<&- 3>&-
	[[ $line == "HTTP/1."?" 200"* ]]
}

deadline=$((SECONDS + timeout))
for ((i = 1; i <= nodes; i++)); do
	while ! healthy "${http[i]}" 2>/dev/null; do
		if ! kill -0 "$(cat "$run/n$i/pid")" 2>/dev/null; then
			log "node n$i exited; its log:"; cat "$run/n$i/nats.log" >&2
			"$here/stop.sh" "$run" || true
			exit 1
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			log "node n$i not healthy after ${timeout}s; its log:"; tail -n 40 "$run/n$i/nats.log" >&2
			"$here/stop.sh" "$run" || true
			exit 1
		fi
		sleep 0.2
	done
done
log "cluster of $nodes ready at $urls after ${SECONDS}s"
{
	echo "export NATS_CLUSTER_URLS=$urls"
	echo "export NATS_SERVER=$bin"
} | tee "$run/env"
