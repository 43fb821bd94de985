#!/usr/bin/env bash
# The README's test command (make test): installs what the tests need, starts
# the real servers they talk to on loopback, runs vet, staticcheck and every Go
# test (with -race), and stops the servers again.
#
# Each file in deploy/testenv/ installs or starts one dependency and exports
# what the tests need (and sets the KGAGENT_REQUIRE_* switch that turns its
# suite's skip into a failure). They are sourced in name order; a file
# registers its cleanup with on_exit. Tools go to $KGAGENT_TOOLS (default
# ~/.cache/kgagent), never to GOPATH/bin or /tmp; logs go to .test-output/.
#
# Every phase prints a line with the time since the start, and one with its
# own time when it ends; a long phase (the first Ollama build: 15-20
# minutes) prints a line a minute. Nothing is written to $HOME outside the
# user cache (~/.cache: $KGAGENT_TOOLS, Maven's local repository, pip's and
# npm's caches, Ollama's home are all under it) and Go's module cache
# ($(go env GOMODCACHE)) and telemetry directory: the script lists $HOME
# before and after and fails naming anything new elsewhere
# (KGAGENT_HOME_CHECK=0 turns the check off, e.g. on a machine where other
# programs write to $HOME meanwhile).
set -euo pipefail
cd "$(dirname "$0")/.."

export KGAGENT_TOOLS="${KGAGENT_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/kgagent}"
export KGAGENT_TEST_OUT="$PWD/.test-output"
mkdir -p "$KGAGENT_TOOLS/bin" "$KGAGENT_TEST_OUT"

# Tools that would write to $HOME are pointed at the cache instead.
export PIP_CACHE_DIR="$KGAGENT_TOOLS/pip-cache" npm_config_cache="$KGAGENT_TOOLS/npm-cache"
export MAVEN_REPO_LOCAL="$KGAGENT_TOOLS/m2" # deploy/neo4j/start.sh: mvn -Dmaven.repo.local

# log ends the phase running (with its time) and starts the next one.
_t0=$SECONDS _phase="" _phase_t0=$SECONDS
_phase_file="$KGAGENT_TEST_OUT/.phase"
elapsed() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
log() {
  if [ -n "$_phase" ]; then printf '== %s: done in %s\n' "$_phase" "$(elapsed $((SECONDS - _phase_t0)))" >&2; fi
  _phase="$*" _phase_t0=$SECONDS
  printf '%s %s\n' "$(date +%s)" "$_phase" >"$_phase_file"
  printf '\n== [%s] %s\n' "$(elapsed $((SECONDS - _t0)))" "$*" >&2
}

_cleanups=()
on_exit() { _cleanups+=("$*"); }
_run_cleanups() {
  local i
  for ((i = ${#_cleanups[@]} - 1; i >= 0; i--)); do eval "${_cleanups[i]}" >/dev/null 2>&1 || true; done
}
trap _run_cleanups EXIT

# A line a minute while a phase runs long (the Ollama build prints nothing
# for 15-20 minutes).
(
  while sleep 60; do
    [ -f "$_phase_file" ] || exit 0
    read -r since phase <"$_phase_file" || continue
    now=$(date +%s)
    [ $((now - since)) -ge 60 ] && printf '   … still %s (%dm so far)\n' "$phase" $(((now - since) / 60)) >&2
  done
) &
_heartbeat=$!
on_exit "kill $_heartbeat; rm -f '$_phase_file'"

# $HOME before: every path to depth 4, leaving out where writing is allowed.
home_listing() {
  local allowed=("${XDG_CACHE_HOME:-$HOME/.cache}" "$KGAGENT_TOOLS" "$PWD" "$(go env GOMODCACHE)" "$(go env GOCACHE)" "$(go env GOTELEMETRYDIR 2>/dev/null)")
  local prune=() a
  for a in "${allowed[@]}"; do
    [ -n "$a" ] && prune+=(-path "$a" -o)
  done
  find "$HOME" -maxdepth 4 \( "${prune[@]}" -false \) -prune -o -print 2>/dev/null | sort
}
if [ "${KGAGENT_HOME_CHECK:-1}" != 0 ]; then
  home_listing >"$KGAGENT_TEST_OUT/home-before.txt"
fi

log "go mod download"
go mod download

for f in deploy/testenv/*.sh; do
  log "test dependency: $(basename "$f" .sh)"
  # shellcheck source=/dev/null
  source "$f"
done

log "go vet"
go vet ./...
log "staticcheck"
go tool staticcheck ./...

log "go test -race"
# The raw event stream is kept in test.json; deploy/testsum prints a line per
# package, failed tests' output, and at the end passed/failed/skipped per
# package with every skipped test named (also in test.log).
go build -o "$KGAGENT_TOOLS/bin/testsum" ./deploy/testsum
# -timeout 40m: cmd/kgagent takes ~12 min on a quiet 2-core box and twice that
# on a loaded one; the package limit must not be what fails a slow machine.
set +e
go test -race -count=1 -timeout 40m -json ./... 2>&1 | tee "$KGAGENT_TEST_OUT/test.json" |
  "$KGAGENT_TOOLS/bin/testsum" | tee "$KGAGENT_TEST_OUT/test.log"
status=${PIPESTATUS[2]}
set -e

log "checking that nothing was written to \$HOME outside the cache"
if [ "${KGAGENT_HOME_CHECK:-1}" != 0 ]; then
  home_listing >"$KGAGENT_TEST_OUT/home-after.txt"
  new=$(comm -13 "$KGAGENT_TEST_OUT/home-before.txt" "$KGAGENT_TEST_OUT/home-after.txt")
  if [ -n "$new" ]; then
    printf 'make test wrote to $HOME outside ~/.cache, the repository and Go'"'"'s caches:\n%s\n' "$new" >&2
    status=1
  else
    echo "nothing new in \$HOME outside the cache" >&2
  fi
fi
log "end (total $(elapsed $((SECONDS - _t0))))"
exit "$status"
