# nats-py, the NATS client for Python (PyPI): a real client of another
# implementation, which TestNATSPythonClient drives against a real `serve`
# with the client credential of `kgagent nats-url`: request/reply on the
# single-reply subject kgagent.ask.<service>, the streamed frames of
# kgagent.request.<service> read from its inbox, and a Permissions Violation
# when it subscribes to `>`. Installed once into a version-stamped venv.
NATSPY_VERSION=2.16.0
NATSPY_VENV="$KGAGENT_TOOLS/venv-natspy-$NATSPY_VERSION"
if [ ! -x "$NATSPY_VENV/bin/python" ] || ! "$NATSPY_VENV/bin/python" -c 'import nats' >/dev/null 2>&1; then
  rm -rf "$NATSPY_VENV"
  python3 -m venv "$NATSPY_VENV"
  "$NATSPY_VENV/bin/pip" install --quiet --disable-pip-version-check "nats-py==$NATSPY_VERSION"
fi
export KGAGENT_TEST_NATSPY="$NATSPY_VENV/bin/python"
export KGAGENT_REQUIRE_NATSPY=1
