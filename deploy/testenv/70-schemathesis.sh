# schemathesis (PyPI): property-based tests of the REST API from its OpenAPI
# document, which TestSchemathesis runs with --checks all against the real
# serve, without and with API keys. Installed once into a version-stamped venv.
SCHEMATHESIS_VERSION=4.32.5
SCHEMATHESIS_VENV="$KGAGENT_TOOLS/venv-schemathesis-$SCHEMATHESIS_VERSION"
if [ ! -x "$SCHEMATHESIS_VENV/bin/schemathesis" ]; then
  rm -rf "$SCHEMATHESIS_VENV"
  python3 -m venv "$SCHEMATHESIS_VENV"
  "$SCHEMATHESIS_VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi
export KGAGENT_TEST_SCHEMATHESIS="$SCHEMATHESIS_VENV/bin/schemathesis"
export KGAGENT_REQUIRE_SCHEMATHESIS=1
