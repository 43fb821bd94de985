#!/usr/bin/env bash
# Beyond one machine, measured (issue 25, item 6): the OpenJDK 17 API docs
# (Debian's openjdk-17-doc) served on loopback by deploy/sitesrv, ingested
#
#   neo4j    by one `kgagent ingest --graph neo4j` into a real Neo4j 5.26
#            Community server, started as make test starts it
#            (deploy/neo4j/start.sh; heap NEO4J_HEAP, default 1g here)
#   cluster  by two `kgagent worker` processes on a three-node NATS JetStream
#            cluster of real nats-server processes (deploy/natscluster/start.sh,
#            nats-server built from the Go module proxy at go.mod's version),
#            the graph in the same Neo4j; the site's module trees are split
#            into two jobs of about equal page counts, queued by
#            deploy/jobsubmit the way serve queues POST /api/v1/corpora.
#            Each worker keeps its own embedded search index (no Qdrant
#            server installs here), so only the graph is shared.
#
# and reports, for each phase, the wall time and, for each process (kgagent
# ingest or each worker, the Neo4j JVM, each nats-server), the CPU seconds it
# spent in the phase and its peak RSS (VmHWM), in RESULTS_DIR/cluster_*.json
# and one table on stdout. KGAGENT_BENCH_CLUSTER_PAGES caps the pages of the
# single ingest (and each job gets half of it); 0 (default) takes the whole
# site. KGAGENT_BENCH_CLUSTER_PHASES picks phases ("neo4j cluster").
#
#   deploy/bench-cluster.sh RESULTS_DIR KGAGENT SITESRV PYTHON
#
# Needs java 17 and maven (Neo4j, as make test) and go (nats-server and
# deploy/jobsubmit). Stops every server it started; keeps no data.
set -euo pipefail
cd "$(dirname "$0")/.."

R=$1 BIN=$2 SITESRV=$3 PY=$4
API=${KGAGENT_BENCH_JAVADOC:-/usr/share/doc/openjdk-17-doc/api}
PAGES=${KGAGENT_BENCH_CLUSTER_PAGES:-0}
PHASES=${KGAGENT_BENCH_CLUSTER_PHASES:-neo4j cluster}
mkdir -p "$R"
R=$(cd "$R" && pwd)

log() { echo "bench-cluster: $*" >&2; }

if [ ! -f "$API/allclasses-index.html" ]; then
  log "installing openjdk-17-doc"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q openjdk-17-doc >/dev/null
fi

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true # gone before its data dir and the servers it writes to
  done
  bash deploy/natscluster/stop.sh "$WORK/nats" 2>/dev/null || true
  bash deploy/neo4j/stop.sh "$WORK/neo4j" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

go build -o "$WORK/jobsubmit" ./deploy/jobsubmit
"$SITESRV" "$API" > "$WORK/site.url" &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$WORK/site.url" ] && break; sleep 0.1; done
SITE=$(cat "$WORK/site.url")

log "starting Neo4j (deploy/neo4j/start.sh)"
neo4j_env=$(NEO4J_TLS=0 NEO4J_HEAP=${NEO4J_HEAP:-1g} bash deploy/neo4j/start.sh "$WORK/neo4j")
eval "$neo4j_env"
export KGAGENT_NEO4J_PASSWORD=$NEO4J_PASSWORD
G=(--graph neo4j --neo4j-url "$NEO4J_URL" --neo4j-user "$NEO4J_USER")

# cpu PID: CPU seconds (user + system) the process has used so far.
cpu() { awk -v t="$(getconf CLK_TCK)" '{print ($14 + $15) / t}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# hwm PID: peak RSS in MB so far.
hwm() { awk '/^VmHWM:/ {print $2 / 1024}' "/proc/$1/status" 2>/dev/null || echo 0; }
declare -A CPU0
# mark NAME=PID...: remember each process's CPU at the start of a phase.
mark() { local kv; for kv in "$@"; do CPU0[${kv%%=*}]=$(cpu "${kv#*=}"); done; }
# report PHASE WALL NAME=PID...: writes cluster_PHASE.json (wall, and each
# process's CPU in the phase and peak RSS).
report() {
  local phase=$1 wall=$2 kv sep=""
  shift 2
  {
    printf '{"phase": "%s", "wall_s": %s, "load": "%s", "processes": {' "$phase" "$wall" "$(cut -d' ' -f1-3 /proc/loadavg)"
    for kv in "$@"; do
      printf '%s"%s": {"cpu_s": %.1f, "peak_rss_mb": %.0f}' "$sep" "${kv%%=*}" \
        "$(echo "$(cpu "${kv#*=}") ${CPU0[${kv%%=*}]:-0}" | awk '{print $1 - $2}')" "$(hwm "${kv#*=}")"
      sep=", "
    done
    echo '}}'
  } > "$R/cluster_$phase.json"
  cat "$R/cluster_$phase.json"
}

max=$PAGES
[ "$max" = 0 ] && max=100000

for phase in $PHASES; do
  case $phase in
  neo4j)
    log "one kgagent ingest into Neo4j (up to $max pages), load $(cut -d' ' -f1-3 /proc/loadavg)"
    mark neo4j="$NEO4J_PID"
    t0=$(date +%s.%N)
    "$PY" bench/measure.py -o "$R/cluster_neo4j_ingest.json" -- "$BIN" --log-level warn --nats-listen 127.0.0.1:-1 \
      --data-dir "$WORK/data-neo4j" "${G[@]}" ingest --json --collection jdkneo --max-pages "$max" "${SITE}*" > "$R/cluster_neo4j_ingest.out"
    wall=$(echo "$(date +%s.%N) $t0" | awk '{printf "%.1f", $1 - $2}')
    report neo4j "$wall" neo4j="$NEO4J_PID"
    rm -rf "$WORK/data-neo4j"
    ;;
  cluster)
    log "starting a three-node NATS cluster (deploy/natscluster/start.sh)"
    nats_env=$(bash deploy/natscluster/start.sh "$WORK/nats")
    eval "$nats_env"
    secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
    for w in 1 2; do
      KGAGENT_SEMANTIC_SEARCH=off "$BIN" --log-level warn worker --data-dir "$WORK/data-w$w" --nats-url "$NATS_CLUSTER_URLS" \
        --job-secret "$secret" --allow-private-ingest "${G[@]}" > "$WORK/worker$w.log" 2>&1 &
      PIDS+=($!)
      eval "W$w=$!"
    done
    sleep 5
    # Two jobs of about equal page counts: the module trees, largest first,
    # each to the job with fewer pages so far.
    a="" b="" na=0 nb=0
    while read -r n m; do
      if [ "$na" -le "$nb" ]; then a="$a${a:+,}${SITE}$m/*" na=$((na + n)); else b="$b${b:+,}${SITE}$m/*" nb=$((nb + n)); fi
    done < <(for d in "$API"/*/; do m=$(basename "$d"); case $m in index-files|resources|script-dir) continue ;; esac
      echo "$(find "$d" -name '*.html' | wc -l) $m"; done | sort -rn)
    log "two jobs ($na and $nb HTML files) on two workers, load $(cut -d' ' -f1-3 /proc/loadavg)"
    procs=(worker1="$W1" worker2="$W2" neo4j="$NEO4J_PID")
    for i in 1 2 3; do procs+=("nats$i=$(cat "$WORK/nats/n$i/pid")"); done
    mark "${procs[@]}"
    t0=$(date +%s.%N)
    jobmax=0
    [ "$PAGES" != 0 ] && jobmax=$((PAGES / 2))
    "$WORK/jobsubmit" -nats "$NATS_CLUSTER_URLS" -secret "$secret" -collection jdkcluster -max-pages "$jobmax" "$a" "$b" > "$R/cluster_jobs.out"
    wall=$(echo "$(date +%s.%N) $t0" | awk '{printf "%.1f", $1 - $2}')
    report cluster "$wall" "${procs[@]}"
    kill "$W1" "$W2" 2>/dev/null || true
    wait "$W1" 2>/dev/null || true
    wait "$W2" 2>/dev/null || true
    bash deploy/natscluster/stop.sh "$WORK/nats"
    ;;
  *) log "unknown phase $phase (neo4j, cluster)"; exit 2 ;;
  esac
done
