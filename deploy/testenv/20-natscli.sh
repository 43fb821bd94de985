# The nats CLI, to run the README's `nats req` line (TestNATSCLIAsInReadme);
# built from the Go module proxy into $KGAGENT_TOOLS/bin, outside go.mod.
NATS_CLI_VERSION=v0.5.1
if [ ! -x "$KGAGENT_TOOLS/bin/nats-$NATS_CLI_VERSION" ]; then
  GOBIN="$KGAGENT_TOOLS/bin" go install "github.com/nats-io/natscli/nats@$NATS_CLI_VERSION"
  mv "$KGAGENT_TOOLS/bin/nats" "$KGAGENT_TOOLS/bin/nats-$NATS_CLI_VERSION"
fi
export KGAGENT_TEST_NATS_CLI="$KGAGENT_TOOLS/bin/nats-$NATS_CLI_VERSION"
export KGAGENT_REQUIRE_NATSCLI=1
