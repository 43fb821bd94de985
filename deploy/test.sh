#!/usr/bin/env bash
# The README's test command (make test): installs what the tests need
# (Debian's chromium for the browser test, Neo4j Community from Maven
# Central, the nats CLI from the Go module proxy), starts a real Neo4j on loopback, runs vet, staticcheck and every
# Go test (with -race), and stops Neo4j again. Suites that need a real
# dependency are required here, so they fail instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\n== %s\n' "$*" >&2; }

log "installing test dependencies"
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q chromium >/dev/null
  else
    sudo apt-get update -q >/dev/null && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null
  fi
fi
command -v java >/dev/null || { echo "java 17 is required for Neo4j" >&2; exit 1; }
command -v mvn >/dev/null || { echo "maven is required to resolve Neo4j" >&2; exit 1; }
go mod download
# The nats CLI, to run the README's `nats req` line (TestNATSCLIAsInReadme);
# installed from the Go module proxy, outside this module's go.mod.
NATS_CLI_VERSION=v0.5.1
GOBIN="$(go env GOPATH)/bin" go install "github.com/nats-io/natscli/nats@$NATS_CLI_VERSION"
export KGAGENT_TEST_NATS_CLI="$(go env GOPATH)/bin/nats"

NEO4J_DIR=$(mktemp -d)
cleanup() { bash deploy/neo4j/stop.sh "$NEO4J_DIR" >/dev/null 2>&1 || true; rm -rf "$NEO4J_DIR"; }
trap cleanup EXIT

log "starting Neo4j"
# Assigned first, so that a failed start stops the run here (set -e).
neo4j_env=$(bash deploy/neo4j/start.sh "$NEO4J_DIR")
eval "$neo4j_env"
export NEO4J_URL NEO4J_USER NEO4J_PASSWORD
export KGAGENT_REQUIRE_NEO4J=1 KGAGENT_REQUIRE_BROWSER=1 KGAGENT_REQUIRE_NATSCLI=1

log "go vet"
go vet ./...
log "staticcheck"
go tool staticcheck ./...

log "go test -race"
go test -race -count=1 -timeout 25m ./... 2>&1 | tee /tmp/kgagent-test.log
