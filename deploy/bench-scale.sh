#!/usr/bin/env bash
# The scale section of make bench (deploy/bench.sh calls it; it also runs
# alone): the OpenJDK 17 API docs (Debian's openjdk-17-doc, 9,892 pages)
# served on loopback by deploy/sitesrv and ingested at several sizes — the
# first N pages the crawler reaches, N from KGAGENT_BENCH_SCALE_PAGES
# (default "1000 3000 20000": the last is the whole site) — each into a
# fresh data dir:
#
#   ingest     wall, CPU, peak RSS (bench/measure.py), pages, chunks,
#              triples, data-dir bytes
#   serve      the first kgagent serve after the ingest (bench/serve_measure.py):
#              seconds until /readyz answers 200, RSS when ready and after
#              KGAGENT_BENCH_SERVE_REQUESTS (default 1000) HTTP searches and
#              agent answers alternating, each question distinct
#   queries    kgagent eval --answers on bench/javadoc_questions.jsonl:
#              search and agent p50/p99 in process, the eval process's
#              peak RSS (the collection loaded), and recall@5 / MRR of
#              search and of the agent's sources (meaningful at the
#              whole site only: smaller crawls miss gold pages)
#   baseline   bm25s over whole pages and over kgagent's chunks of the
#              largest size (bench/bm25s_eval.py), the "page BM25" line
#
#   deploy/bench-scale.sh RESULTS_DIR KGAGENT SITESRV PYTHON   (paths of the binaries and the venv python)
#
# Writes scale_* files into RESULTS_DIR for bench/report.py; keeps nothing
# else (data dirs live in a temp dir).
set -euo pipefail
cd "$(dirname "$0")/.."

R=$1 BIN=$2 SITESRV=$3 PY=$4
API=${KGAGENT_BENCH_JAVADOC:-/usr/share/doc/openjdk-17-doc/api}
SIZES=${KGAGENT_BENCH_SCALE_PAGES:-1000 3000 20000}
QUESTIONS=$PWD/bench/javadoc_questions.jsonl

log() { echo "bench-scale: $*" >&2; }

if [ ! -f "$API/allclasses-index.html" ]; then
  log "installing openjdk-17-doc"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q openjdk-17-doc >/dev/null
fi

WORK=$(mktemp -d)
SITE_PID=
trap '[ -n "$SITE_PID" ] && kill "$SITE_PID" 2>/dev/null; rm -rf "$WORK"' EXIT
"$SITESRV" "$API" > "$WORK/site.url" &
SITE_PID=$!
for _ in $(seq 100); do [ -s "$WORK/site.url" ] && break; sleep 0.1; done
SITE=$(cat "$WORK/site.url")

K=("$BIN" --log-level warn --nats-listen 127.0.0.1:-1)
last=
for n in $SIZES; do
  log "ingest of up to $n pages"
  D=$WORK/data-$n
  "$PY" bench/measure.py -o "$R/scale_ingest_$n.json" -- \
    "${K[@]}" --data-dir "$D" ingest --json --max-pages "$n" "${SITE}*" > "$R/scale_ingest_$n.out"
  du -sb "$D" | cut -f1 > "$R/scale_bytes_$n.txt"
  log "first serve at up to $n pages"
  "$PY" bench/serve_measure.py -o "$R/scale_serve_$n.json" -n "${KGAGENT_BENCH_SERVE_REQUESTS:-1000}" -q "$QUESTIONS" -- \
    "${K[@]}" --data-dir "$D"
  log "queries at up to $n pages"
  "$PY" bench/measure.py -o "$R/scale_eval_$n.json" -- \
    "${K[@]}" --data-dir "$D" eval --json --answers --base-url "$SITE" "$QUESTIONS" > "$R/scale_eval_$n.out"
  [ -n "$last" ] && rm -rf "$last"
  last=$D
done
log "page BM25 (bm25s) at the largest size"
"$PY" bench/bm25s_eval.py "$last/index.db" default "$QUESTIONS" "$SITE" > "$R/scale_bm25s.out"
