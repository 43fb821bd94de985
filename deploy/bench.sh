#!/usr/bin/env bash
# make bench: kgagent side by side with the tools a user would pick instead,
# in one run on loopback, and one table of the results (printed, and written
# to bench/results.md with the chart bench/results.png).
#
#   ingestion  kgagent ingest of the Python 3.11 HTML docs (Debian's
#              python3.11-doc, served by deploy/sitesrv) vs a minimal Scrapy
#              spider crawling the same site (bench/scrapy_crawl.py);
#              KGAGENT_BENCH_RUNS (default 3) alternating runs each, medians;
#              then an unchanged re-crawl
#   retrieval  kgagent eval on bench/pydocs_questions.jsonl vs bm25s over the
#              same chunks (read out by deploy/chunkdump) and over whole
#              pages (bench/bm25s_eval.py)
#   answers    in process (eval --answers) and over REST, websocket and NATS
#              against the real `kgagent serve` (TestLoadRealStack), every
#              answer computed (answer cache off)
#   scale      the Python docs, the OpenJDK 17 API docs at 1,000, 3,000 and
#              all 9,892 pages, and the two plus the PostgreSQL 15 docs,
#              Scrapy beside each ingest: ingest cost, memory, data dir,
#              serve, query latency and known-item quality beside page BM25
#              (deploy/bench-scale.sh; KGAGENT_BENCH_SCALE=0 skips it,
#              KGAGENT_BENCH_SCALE_POINTS sets the points,
#              KGAGENT_BENCH_SCALE_SCRAPY_PAGES caps Scrapy on the large
#              ones); its chart is bench/results-scale.png
#
# Installs what it needs: python3.11-doc, openjdk-17-doc and
# postgresql-doc-15 (apt, when missing) and a venv with
# Scrapy, bm25s and matplotlib in $KGAGENT_TOOLS. Keeps the raw results in
# .test-output/bench; writes nothing else outside a temp dir.
set -euo pipefail
cd "$(dirname "$0")/.."

export KGAGENT_TOOLS="${KGAGENT_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/kgagent}"
DOCS=${KGAGENT_PYDOCS:-/usr/share/doc/python3.11/html}
QUESTIONS=$PWD/bench/pydocs_questions.jsonl
RUNS=${KGAGENT_BENCH_RUNS:-3}
PY_PKGS="scrapy==2.19.0 bm25s==0.3.16 PyStemmer==3.1.0 matplotlib==3.11.2 numpy==2.4.6"
VENV=$KGAGENT_TOOLS/venv-bench-$(echo "$PY_PKGS" | cksum | cut -d' ' -f1)

log() { echo "bench: $*" >&2; }

if [ ! -f "$DOCS/py-modindex.html" ]; then
  log "installing python3.11-doc"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3.11-doc >/dev/null
fi
if [ ! -x "$VENV/bin/python" ]; then
  log "creating $VENV ($PY_PKGS)"
  rm -rf "$VENV.tmp"
  if ! python3 -m venv "$VENV.tmp"; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv >/dev/null
    rm -rf "$VENV.tmp"
    python3 -m venv "$VENV.tmp"
  fi
  # shellcheck disable=SC2086
  "$VENV.tmp/bin/pip" install -q $PY_PKGS
  mv "$VENV.tmp" "$VENV"
fi
PY=$VENV/bin/python

WORK=$(mktemp -d)
R=$PWD/.test-output/bench # the raw results, kept for bench/report.py
rm -rf "$R"
mkdir -p "$R"
SITE_PID=
trap 'if [ -n "$SITE_PID" ]; then kill "$SITE_PID" 2>/dev/null || true; wait "$SITE_PID" 2>/dev/null || true; fi; rm -rf "$WORK"' EXIT

COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
log "building"
go build -o "$WORK/kgagent" ./cmd/kgagent
go build -o "$WORK/sitesrv" ./deploy/sitesrv
go build -o "$WORK/chunkdump" ./deploy/chunkdump
"$WORK/sitesrv" "$DOCS" > "$WORK/site.url" &
SITE_PID=$!
for _ in $(seq 100); do [ -s "$WORK/site.url" ] && break; sleep 0.1; done
SITE=$(cat "$WORK/site.url")

K=("$WORK/kgagent" --log-level warn --nats-listen 127.0.0.1:-1)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
for i in $(seq "$RUNS"); do
  log "ingestion run $i/$RUNS: kgagent"
  rm -rf "$WORK/data"
  "$PY" bench/measure.py -o "$R/kgagent_ingest_$i.json" -- \
    "${K[@]}" --data-dir "$WORK/data" ingest --json --collection pydocs "${SITE}*" > "$R/kgagent_ingest_$i.out"
  log "ingestion run $i/$RUNS: Scrapy"
  "$PY" bench/measure.py -o "$R/scrapy_$i.json" -- "$PY" bench/scrapy_crawl.py "$SITE" > "$R/scrapy_$i.out"
done
log "unchanged re-crawl"
"$PY" bench/measure.py -o "$R/kgagent_recrawl.json" -- \
  "${K[@]}" --data-dir "$WORK/data" ingest --json --collection pydocs "${SITE}*" > "$R/kgagent_recrawl.out"

log "retrieval and in-process answers: kgagent"
"${K[@]}" --data-dir "$WORK/data" eval --json --answers --collection pydocs --base-url "$SITE" "$QUESTIONS" > "$R/kgagent_eval.out"
log "retrieval: bm25s"
"$WORK/chunkdump" "$WORK/data" pydocs > "$WORK/chunks.jsonl"
"$PY" bench/bm25s_eval.py "$WORK/chunks.jsonl" "$QUESTIONS" "$SITE" > "$R/bm25s.out"

log "answers over REST, websocket and NATS (real kgagent serve, answer cache off)"
KGAGENT_ANSWER_CACHE_SIZE=0 KGAGENT_BENCH_DATA="$WORK/data" KGAGENT_BENCH_QUESTIONS="$QUESTIONS" \
  go test -count=1 -run 'LoadRealStack$' -v -timeout 30m ./cmd/kgagent > "$R/load.txt" 2>&1 || { cat "$R/load.txt" >&2; exit 1; }

if [ "${KGAGENT_BENCH_SCALE:-1}" != 0 ]; then
  log "scale: the OpenJDK 17 API docs at several sizes (deploy/bench-scale.sh)"
  bash deploy/bench-scale.sh "$R" "$WORK/kgagent" "$WORK/sitesrv" "$PY"
fi

{
  echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "nproc=$(nproc)"
  echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "mem_gib=$(awk '/MemTotal/ {printf "%.0f", $2/1048576}' /proc/meminfo)"
  echo "load_start=$LOAD_START"
  echo "nice=$(nice)"
  echo "autogroup_nice=$(awk '{print $3}' /proc/self/autogroup 2>/dev/null)"
  echo "load=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "commit=$COMMIT"
  echo "go=$(go env GOVERSION)"
  echo "scrapy=$("$PY" -c 'import scrapy; print(scrapy.__version__)')"
  echo "bm25s=$("$PY" -c 'import bm25s; print(bm25s.__version__)')"
} > "$R/machine.txt"

"$PY" bench/report.py "$R" bench/results.md bench/results.png
