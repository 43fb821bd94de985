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
set -euo pipefail
cd "$(dirname "$0")/.."

export KGAGENT_TOOLS="${KGAGENT_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/kgagent}"
export KGAGENT_TEST_OUT="$PWD/.test-output"
mkdir -p "$KGAGENT_TOOLS/bin" "$KGAGENT_TEST_OUT"

log() { printf '\n== %s\n' "$*" >&2; }

_cleanups=()
on_exit() { _cleanups+=("$*"); }
_run_cleanups() {
  local i
  for ((i = ${#_cleanups[@]} - 1; i >= 0; i--)); do eval "${_cleanups[i]}" >/dev/null 2>&1 || true; done
}
trap _run_cleanups EXIT

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
go test -race -count=1 -timeout 25m -json ./... 2>&1 | tee "$KGAGENT_TEST_OUT/test.json" |
  "$KGAGENT_TOOLS/bin/testsum" | tee "$KGAGENT_TEST_OUT/test.log"
