# Third-party Python clients from PyPI, driven against a real `serve` by
# cmd/kgagent's client tests (clients_test.go): the `openai` SDK and
# `langchain-openai` on /v1 and `gql` on /graphql with the schema fetched by
# introspection (TestPythonAPIClients), and `fastmcp` on stdio and /mcp
# (TestFastMCPClient). One version-stamped venv, installed once.
PYCLIENTS_PINS="openai==3.57.0 langchain-openai==1.7.4 fastmcp==4.2.3 gql[requests]==4.4.0"
PYCLIENTS_VENV="$KGAGENT_TOOLS/venv-pyclients-$(printf '%s' "$PYCLIENTS_PINS" | sha256sum | cut -c1-12)"
if [ ! -x "$PYCLIENTS_VENV/bin/python" ] || ! "$PYCLIENTS_VENV/bin/python" -c 'import openai, langchain_openai, fastmcp, gql' >/dev/null 2>&1; then
  rm -rf "$PYCLIENTS_VENV"
  python3 -m venv "$PYCLIENTS_VENV"
  # shellcheck disable=SC2086
  "$PYCLIENTS_VENV/bin/pip" install --quiet --disable-pip-version-check $PYCLIENTS_PINS
fi
export KGAGENT_TEST_PYCLIENTS="$PYCLIENTS_VENV/bin/python"
export KGAGENT_REQUIRE_PYCLIENTS=1
