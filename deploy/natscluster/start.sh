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

# Free loopback ports: random ones nobody listens on (checked with ss), below
# the kernel's ephemeral range, so that no outgoing connection (which takes
# its local port from that range and is not listed by ss -l) holds one when
# a node binds it.
eph_low=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
if [ "$eph_low" -gt 12000 ]; then
	port_lo=10000 port_span=$((eph_low - 10000))
else
	port_lo=20000 port_span=40000
fi
taken=" "
free_port() {
	local p
	while :; do
		p=$((port_lo + (RANDOM * 32768 + RANDOM) % port_span))
		case "$taken" in *" $p "*) continue ;; esac
		if ! grep -qx "$p" <<<"$used"; then
			taken="$taken$p "
			echo "$p"
			return
		fi
	done
}
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
for attempt in 1 2 3; do
	used=$(ss -Htln 2>/dev/null | awk '{print $4}' | sed 's/.*://' || true)
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
		cat >"$d/nats.conf" <<-CONF
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


	for ((i = 1; i <= nodes; i++)); do
		while ! healthy "${http[i]}" 2>/dev/null; do
			for ((j = 1; j <= nodes; j++)); do
				kill -0 "$(cat "$run/n$j/pid")" 2>/dev/null && continue
				"$here/stop.sh" "$run" 2>/dev/null || true
				if grep -q "address already in use" "$run/n$j/nats.log" && [ "$attempt" -lt 3 ]; then
					log "node n$j could not bind a port (taken since it was chosen); starting again on new ports"
					continue 4
				fi
				log "node n$j exited; its log:"; cat "$run/n$j/nats.log" >&2
				exit 1
			done
			if [ "$SECONDS" -ge "$deadline" ]; then
				log "node n$i not healthy after ${timeout}s; its log:"; tail -n 40 "$run/n$i/nats.log" >&2
				"$here/stop.sh" "$run" || true
				exit 1
			fi
			sleep 0.2
		done
	done
	break
done
log "cluster of $nodes ready at $urls after ${SECONDS}s"
{
	echo "export NATS_CLUSTER_URLS=$urls"
	echo "export NATS_SERVER=$bin"
} | tee "$run/env"
