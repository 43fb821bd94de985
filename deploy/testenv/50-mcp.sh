# The Python `mcp` package (the reference SDK of the Model Context Protocol,
# from PyPI): a real MCP client of another implementation, which
# TestMCPPythonClient drives against `kgagent mcp` (stdio) and serve's /mcp
# (Streamable HTTP). Installed once into a version-stamped venv.
MCP_PY_VERSION=2.3.0
MCP_VENV="$KGAGENT_TOOLS/venv-mcp-$MCP_PY_VERSION"
if [ ! -x "$MCP_VENV/bin/python" ] || ! "$MCP_VENV/bin/python" -c 'import mcp' >/dev/null 2>&1; then
  rm -rf "$MCP_VENV"
  python3 -m venv "$MCP_VENV"
  "$MCP_VENV/bin/pip" install --quiet --disable-pip-version-check "mcp==$MCP_PY_VERSION"
fi
export KGAGENT_TEST_MCP_PYTHON="$MCP_VENV/bin/python"
export KGAGENT_REQUIRE_MCP_PYTHON=1
