#!/usr/bin/env bash
# The scale section of make bench (deploy/bench.sh calls it; it also runs
# alone): kgagent ingests corpora of growing size served on loopback by
# deploy/sitesrv, each into a fresh data dir, with Scrapy
# (bench/scrapy_crawl.py) crawling the same pages in the same run:
#
#   py     the Python 3.11 docs (Debian's python3.11-doc, ~526 pages)
#   jdk    the OpenJDK 17 API docs (openjdk-17-doc, 9,892 pages)
#   all    the two plus the PostgreSQL 15 docs (postgresql-doc-15, ~1,170
#          pages) served together from one root (a temp dir of symlinks
#          py/, jdk/, pg/ and an index.html linking them; sitesrv serves
#          one directory and follows the links), ~11,600 pages
#   big    the three plus the Rust 1.63 docs (rust-doc: the std, core and
#          alloc API docs, the books; ~32,000 HTML files, ~10,000 of them
#          redirect stubs) from the same kind of root, ~34,000 pages; not in
#          the default points (its ingest alone takes minutes)
#   huge   big plus four Doxygen and Javadoc API references: LibreOffice's
#          SDK (libreoffice-dev-doc: the IDL, C++ and Java APIs, ~19,100
#          HTML files), VTK 9 (vtk9-doc, ~13,700), Trilinos (trilinos-doc,
#          ~28,400 in 38 packages) and OpenCV 4 (opencv-doc, ~7,200), ~102,000
#          HTML files from one root. Doxygen's pages are reached through
#          frames and scripts a crawler does not run, so the root also has a
#          sitemap.xml listing their pages (as a site would publish one);
#          not in the default points (about half an hour on two cores)
#
# KGAGENT_BENCH_SCALE_POINTS lists the points, CORPUS or CORPUS:N (the first
# N pages the crawler reaches, --max-pages N; Scrapy stops after about as
# many, CLOSESPIDER_PAGECOUNT); default "py jdk:1000 jdk:3000 jdk all". A
# smoke run: KGAGENT_BENCH_SCALE_POINTS="py:300 jdk:300 all:300".
# KGAGENT_BENCH_SCALE_SCRAPY=0 skips Scrapy. KGAGENT_BENCH_SCALE_SCRAPY_PAGES=N
# caps Scrapy at N pages on the points larger than N (Scrapy needs about 2 h
# for the whole OpenJDK site on two cores): there it crawls the first N pages
# of the same site, scale_scrapycap_POINT.txt records N, and bench/report.py
# takes kgagent's pages/s over Scrapy's pages/s on those N pages, on the
# assumption that Scrapy's cost per page does not grow with the site (it
# keeps no index). Each point measures:
#
#   ingest     wall, CPU, peak RSS (bench/measure.py), pages, chunks,
#              triples, data-dir bytes; Scrapy's wall, CPU, peak RSS, pages
#   serve      the first kgagent serve after the ingest (bench/serve_measure.py):
#              seconds until /readyz answers 200, RSS when ready and after
#              KGAGENT_BENCH_SERVE_REQUESTS (default 1000) HTTP searches and
#              agent answers alternating, each question distinct, and their
#              p50/p99 over HTTP
#   queries    kgagent eval --answers (bench/pydocs_questions.jsonl for py,
#              bench/javadoc_questions.jsonl for jdk and all): search and
#              agent p50/p99 in process, the eval process's peak RSS, and
#              recall@5 / MRR (meaningful at whole corpora only: smaller
#              crawls miss gold pages)
#   baseline   bm25s over whole pages and over kgagent's chunks at the whole
#              OpenJDK point (bench/bm25s_eval.py over the chunks
#              deploy/chunkdump reads out), the "page BM25" line
#
#   deploy/bench-scale.sh RESULTS_DIR KGAGENT SITESRV PYTHON   (paths of the binaries and the venv python)
#
# Installs the doc packages the chosen points need and lack with apt (as
# root; elsewhere it stops and names the package to install). Writes scale_* files into
# RESULTS_DIR for bench/report.py (one set per point, named by the point:
# scale_ingest_jdk-1000.json, ...); keeps nothing else (data dirs live in a
# temp dir). deploy/bench-cluster.sh measures the OpenJDK ingest into Neo4j
# and through a NATS cluster with two workers (KGAGENT_BENCH_CLUSTER=1 runs
# it at the end).
set -euo pipefail
cd "$(dirname "$0")/.."

R=$1 BIN=$2 SITESRV=$3 PY=$4
API=${KGAGENT_BENCH_JAVADOC:-/usr/share/doc/openjdk-17-doc/api}
DOCS=${KGAGENT_PYDOCS:-/usr/share/doc/python3.11/html}
PGDOCS=${KGAGENT_BENCH_PGDOCS:-/usr/share/doc/postgresql-doc-15/html}
RUSTDOCS=${KGAGENT_BENCH_RUSTDOCS:-/usr/share/doc/rust-doc/html}
LODOCS=${KGAGENT_BENCH_LODOCS:-/usr/share/doc/libreoffice-dev-doc/api}
VTKDOCS=${KGAGENT_BENCH_VTKDOCS:-/usr/share/doc/vtk9/html}
TRILINOSDOCS=${KGAGENT_BENCH_TRILINOSDOCS:-/usr/share/doc/trilinos}
CVDOCS=${KGAGENT_BENCH_CVDOCS:-/usr/share/doc/opencv-doc/opencv4/html}
POINTS=${KGAGENT_BENCH_SCALE_POINTS:-py jdk:1000 jdk:3000 jdk all}
SCRAPY_CAP=${KGAGENT_BENCH_SCALE_SCRAPY_PAGES:-}
case $SCRAPY_CAP in
  '' | *[!0-9]* | 0) [ -z "$SCRAPY_CAP" ] || { echo "bench-scale: KGAGENT_BENCH_SCALE_SCRAPY_PAGES=$SCRAPY_CAP is not a positive number of pages" >&2; exit 1; } ;;
esac

log() { echo "bench-scale: $(date -u +%T) $*" >&2; }

# uses CORPUS...: whether a point of KGAGENT_BENCH_SCALE_POINTS is on one of them.
uses() {
  local p c
  for p in $POINTS; do for c in "$@"; do [ "${p%%:*}" = "$c" ] && return 0; done; done
  return 1
}
# need FILE PACKAGE VAR: apt-get install PACKAGE unless FILE exists (VAR
# points the script at another copy of those docs).
need() {
  [ -f "$1" ] && return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    log "$1 is missing and apt-get cannot install it here (not root, or no apt-get): install the Debian package $2, or set $3 to a copy of those docs"
    exit 1
  fi
  log "installing $2"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >/dev/null; then
    log "apt-get install $2 failed: install it, or set $3 to a copy of those docs"
    exit 1
  fi
}
# Only the docs the chosen points crawl.
if uses py all big huge; then need "$DOCS/py-modindex.html" python3.11-doc KGAGENT_PYDOCS; fi
if uses jdk all big huge; then need "$API/allclasses-index.html" openjdk-17-doc KGAGENT_BENCH_JAVADOC; fi
if uses all big huge; then need "$PGDOCS/index.html" postgresql-doc-15 KGAGENT_BENCH_PGDOCS; fi
if uses big huge; then need "$RUSTDOCS/std/index.html" rust-doc KGAGENT_BENCH_RUSTDOCS; fi
if uses huge; then
  need "$LODOCS/idl/ref/index.html" libreoffice-dev-doc KGAGENT_BENCH_LODOCS
  need "$VTKDOCS/index.html" vtk9-doc KGAGENT_BENCH_VTKDOCS
  need "$TRILINOSDOCS/epetra/index.html" trilinos-doc KGAGENT_BENCH_TRILINOSDOCS
  need "$CVDOCS/index.html" opencv-doc KGAGENT_BENCH_CVDOCS
fi

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true # gone before its temp dir is
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

declare -A SITE
# serve NAME DIR: starts sitesrv on DIR; SITE[NAME] is its base URL.
serve() {
  local out=$WORK/site-$1.url
  "$SITESRV" "$2" > "$out" &
  PIDS+=($!)
  for _ in $(seq 100); do [ -s "$out" ] && break; sleep 0.1; done
  SITE[$1]=$(cat "$out")
}
# root NAME [rust|huge]: one root holding the doc trees py/, jdk/, pg/ (rust/
# with rust; rust/, lo/, vtk/, tri/ and cv/ with huge, and a sitemap.xml
# index of one sitemap of relative URLs per Doxygen tree) and an index.html
# linking them, served as SITE[NAME].
root() {
  local d=$WORK/$1
  mkdir -p "$d"
  ln -s "$DOCS" "$d/py"
  ln -s "$API" "$d/jdk"
  ln -s "$PGDOCS" "$d/pg"
  {
    echo '<!DOCTYPE html><html><head><title>Documentation</title></head><body><h1>Documentation</h1><ul>'
    echo '<li><a href="py/index.html">Python 3.11</a></li>'
    echo '<li><a href="jdk/index.html">OpenJDK 17 API</a></li>'
    echo '<li><a href="pg/index.html">PostgreSQL 15</a></li>'
    if [ -n "${2:-}" ]; then
      ln -s "$RUSTDOCS" "$d/rust"
      echo '<li><a href="rust/index.html">Rust 1.63</a></li>'
    fi
    if [ "${2:-}" = huge ]; then
      ln -s "$LODOCS" "$d/lo"
      ln -s "$VTKDOCS" "$d/vtk"
      ln -s "$TRILINOSDOCS" "$d/tri"
      ln -s "$CVDOCS" "$d/cv"
      echo '<li><a href="lo/idl/ref/index.html">LibreOffice SDK: IDL API</a></li>'
      echo '<li><a href="lo/cpp/ref/index.html">LibreOffice SDK: C++ API</a></li>'
      echo '<li><a href="lo/java/ref/index.html">LibreOffice SDK: Java API</a></li>'
      echo '<li><a href="vtk/index.html">VTK 9</a></li>'
      echo '<li><a href="cv/index.html">OpenCV 4</a></li>'
      local p
      for p in "$TRILINOSDOCS"/*/index.html; do
        p=${p%/index.html} p=${p##*/}
        echo "<li><a href=\"tri/$p/index.html\">Trilinos $p</a></li>"
      done
      sitemaps "$d" lo vtk tri cv
    fi
    echo '</ul></body></html>'
  } > "$d/index.html"
  serve "$1" "$d"
}
# sitemaps DIR TREE...: DIR/sitemap.xml, an index of DIR/sitemap-TREE.xml,
# each listing TREE's HTML files as URLs relative to DIR (the crawler
# resolves a relative <loc> against its sitemap's URL).
sitemaps() {
  local d=$1 t
  shift
  {
    echo '<?xml version="1.0" encoding="UTF-8"?>'
    echo '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
    for t in "$@"; do
      {
        echo '<?xml version="1.0" encoding="UTF-8"?>'
        echo '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        (cd "$d" && find -L "$t" -name '*.html' | LC_ALL=C sort | sed 's#&#\&amp;#g; s#.*#<url><loc>&</loc></url>#')
        echo '</urlset>'
      } > "$d/sitemap-$t.xml"
      echo "<sitemap><loc>sitemap-$t.xml</loc></sitemap>"
    done
    echo '</sitemapindex>'
  } > "$d/sitemap.xml"
}
if uses all; then root all; fi
if uses big; then root big rust; fi
if uses huge; then root huge huge; fi
if uses py; then serve py "$DOCS"; fi
if uses jdk; then serve jdk "$API"; fi

# The machine and the build, for bench/report.py --scale (bench.sh's
# machine.txt covers its whole run; this one the scale section alone). The
# commit is the binary's when it was built with VCS stamping, else this
# checkout's.
COMMIT=$(go version -m "$BIN" 2>/dev/null | awk '$2 == "vcs.revision" {r = substr($3, 1, 7)} $2 == "vcs.modified" && $3 == "true" {m = "+modified"} END {print r m}')
{
  echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "nproc=$(nproc)"
  echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "mem_gib=$(awk '/MemTotal/ {printf "%.0f", $2/1048576}' /proc/meminfo)"
  echo "load_start=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "nice=$(nice)"
  echo "commit=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  echo "points=$POINTS"
  echo "serve_requests=${KGAGENT_BENCH_SERVE_REQUESTS:-1000}"
  echo "scrapy_pages=$SCRAPY_CAP"
} > "$R/scale_machine.txt"

K=("$BIN" --log-level warn --nats-listen 127.0.0.1:-1)
for point in $POINTS; do
  corpus=${point%%:*} n=
  [ "$corpus" != "$point" ] && n=${point#*:}
  site=${SITE[$corpus]:?unknown corpus $corpus in KGAGENT_BENCH_SCALE_POINTS (py, jdk, all, big, huge)}
  case $corpus in
    py) questions=$PWD/bench/pydocs_questions.jsonl base=$site ;;
    jdk) questions=$PWD/bench/javadoc_questions.jsonl base=$site ;;
    all | big | huge) questions=$PWD/bench/javadoc_questions.jsonl base=${site}jdk/ ;;
  esac
  label=$corpus${n:+-$n}
  max=${n:-200000}
  D=$WORK/data-$label
  echo "$corpus" > "$R/scale_corpus_$label.txt"
  log "$label: kgagent ingest (up to $max pages), load $(cut -d' ' -f1-3 /proc/loadavg)"
  "$PY" bench/measure.py -o "$R/scale_ingest_$label.json" -- \
    "${K[@]}" --data-dir "$D" ingest --json --max-pages "$max" "${site}*" > "$R/scale_ingest_$label.out"
  du -sb "$D" | cut -f1 > "$R/scale_bytes_$label.txt"
  if [ "${KGAGENT_BENCH_SCALE_SCRAPY:-1}" != 0 ]; then
    smax=$n
    rm -f "$R/scale_scrapycap_$label.txt"
    if [ -n "$SCRAPY_CAP" ] && { [ -z "$n" ] || [ "$n" -gt "$SCRAPY_CAP" ]; }; then
      smax=$SCRAPY_CAP
      echo "$SCRAPY_CAP" > "$R/scale_scrapycap_$label.txt"
    fi
    log "$label: Scrapy (up to ${smax:-all} pages), load $(cut -d' ' -f1-3 /proc/loadavg)"
    "$PY" bench/measure.py -o "$R/scale_scrapy_$label.json" -- \
      "$PY" bench/scrapy_crawl.py "$site" ${smax:+--max-pages "$smax"} > "$R/scale_scrapy_$label.out"
  fi
  log "$label: first serve, load $(cut -d' ' -f1-3 /proc/loadavg)"
  "$PY" bench/serve_measure.py -o "$R/scale_serve_$label.json" -n "${KGAGENT_BENCH_SERVE_REQUESTS:-1000}" -q "$questions" -- \
    "${K[@]}" --data-dir "$D"
  log "$label: queries in process, load $(cut -d' ' -f1-3 /proc/loadavg)"
  "$PY" bench/measure.py -o "$R/scale_eval_$label.json" -- \
    "${K[@]}" --data-dir "$D" eval --json --answers --base-url "$base" "$questions" > "$R/scale_eval_$label.out"
  if [ "$label" = jdk ]; then
    log "page BM25 (bm25s) on the whole OpenJDK docs"
    go build -o "$WORK/chunkdump" ./deploy/chunkdump
    "$WORK/chunkdump" "$D" default > "$WORK/chunks.jsonl"
    "$PY" bench/bm25s_eval.py "$WORK/chunks.jsonl" "$questions" "$site" > "$R/scale_bm25s.out"
    rm -f "$WORK/chunks.jsonl"
  fi
  cut -d' ' -f1-3 /proc/loadavg > "$R/scale_load_$label.txt"
  rm -rf "$D"
done

echo "load=$(cut -d' ' -f1-3 /proc/loadavg)" >> "$R/scale_machine.txt"
echo "end=$(date -u '+%H:%M UTC')" >> "$R/scale_machine.txt"

if [ "${KGAGENT_BENCH_CLUSTER:-0}" = 1 ]; then
  log "beyond one machine: deploy/bench-cluster.sh"
  bash deploy/bench-cluster.sh "$R" "$BIN" "$SITESRV" "$PY"
fi
