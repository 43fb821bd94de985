#!/usr/bin/env bash
# The benchmarks of the README (make bench). Needs Debian's python3.11-doc
# (installed here when missing). Serves the Python 3.11 HTML docs on
# loopback, ingests them end to end twice (the second run unchanged), scores
# retrieval and answers on bench/pydocs_questions.jsonl, and runs
# the Go latency benchmarks. Prints every figure; changes nothing outside a
# temp dir.
set -euo pipefail
cd "$(dirname "$0")/.."

DOCS=${KGAGENT_PYDOCS:-/usr/share/doc/python3.11/html}
QUESTIONS=${KGAGENT_BENCH_QUESTIONS:-bench/pydocs_questions.jsonl}
if [ ! -f "$DOCS/py-modindex.html" ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3.11-doc >/dev/null
fi
WORK=$(mktemp -d)
trap 'kill $SITE_PID 2>/dev/null || true; rm -rf "$WORK"' EXIT

go build -o "$WORK/kgagent" ./cmd/kgagent
go build -o "$WORK/sitesrv" ./deploy/sitesrv
"$WORK/sitesrv" "$DOCS" > "$WORK/site.url" &
SITE_PID=$!
for _ in $(seq 50); do [ -s "$WORK/site.url" ] && break; sleep 0.1; done
SITE=$(cat "$WORK/site.url")

K="$WORK/kgagent --data-dir $WORK/data --nats-listen 127.0.0.1:-1 --log-level warn"
echo "== first ingest (cold)"
/usr/bin/time -f "peak_rss_kb=%M wall_s=%e cpu_s=%U+%S" $K ingest --json --collection pydocs "${SITE}*" 2> "$WORK/t1" | tee "$WORK/ingest1.json"
grep peak_rss "$WORK/t1"
echo "== second ingest (unchanged)"
/usr/bin/time -f "peak_rss_kb=%M wall_s=%e cpu_s=%U+%S" $K ingest --json --collection pydocs "${SITE}*" 2> "$WORK/t2" | tee "$WORK/ingest2.json"
grep peak_rss "$WORK/t2"
python3 - "$WORK/ingest1.json" "$WORK/ingest2.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
print(f"pages/s first={a['pages']/a['seconds']:.1f}  re-crawl speed-up={a['seconds']/max(b['seconds'],1e-9):.1f}x")
PY
echo "== retrieval and answers"
$K eval --collection pydocs --base-url "$SITE" --answers "$QUESTIONS"
echo "== retrieval quality per mode, with the page-level BM25 baseline, measured in one run"
KGAGENT_PYDOCS="$DOCS" go test -count=1 -run PyDocs -v ./corpus/corpusbench 2>&1 | grep -E 'recall@5|latency' || true
echo "== load over REST, websocket and NATS (real binary, this collection), every answer computed (answer cache off)"
KGAGENT_ANSWER_CACHE_SIZE=0 KGAGENT_BENCH_DATA="$WORK/data" KGAGENT_BENCH_QUESTIONS="$(readlink -f "$QUESTIONS")" go test -count=1 -run LoadRealStack -v ./cmd/kgagent 2>&1 | grep -E 'load_test|ok|FAIL'
echo "== the same with the default configuration (answer cache on: the 331 questions repeat)"
KGAGENT_BENCH_DATA="$WORK/data" KGAGENT_BENCH_QUESTIONS="$(readlink -f "$QUESTIONS")" go test -count=1 -run LoadRealStack -v ./cmd/kgagent 2>&1 | grep -E 'load_test|ok|FAIL'
echo "== CPU per computed answer, in process"
KGAGENT_BENCH_DATA="$WORK/data" KGAGENT_BENCH_QUESTIONS="$(readlink -f "$QUESTIONS")" go test -count=1 -run AnswerCost -v ./cmd/kgagent 2>&1 | grep -E 'answercost_test|ok|FAIL'
echo "== latency benchmarks (in process)"
KGAGENT_PYDOCS="$DOCS" go test -run XXX -bench . -benchtime 2s ./corpus/... ./graphrag/... ./agent/... 2>&1 | grep -E '^(Benchmark|ok|PASS|FAIL)' || true
