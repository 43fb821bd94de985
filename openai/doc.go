// Package openai is the adapter of kgagent's OpenAI-compatible HTTP APIs
// (OpenAI itself, Ollama, vLLM, the llama.cpp server, LM Studio, TEI's
// OpenAI route, Azure-style proxies): Client, an llm.LLM over POST
// /chat/completions (and GET /models), and Embedder, a corpus.Embedder over
// POST /embeddings. Both go through one HTTP transport: the base URL and
// bearer key, the JSON request, the map from an HTTP status and the API's
// error body to a stable code (internal/httpstatus, plus exhausted quotas
// and 408/409), and one retry decision (429, 5xx, 408, 409, dropped
// connections; exponential backoff with jitter, or the server's
// Retry-After up to a maximum, longer ones failing at once); 401, 403 and
// exhausted quotas fail at once, since retrying cannot help. The two
// clients therefore give the same codes for the same answers
// (TestClientsAgreeOnFailures).
//
// The package is named after its dependency and sits at the top level, not
// under agent or corpus, because two consumers use it: the agent manager and
// graphrag's extractor through llm.LLM, the corpus through corpus.Embedder.
// Each keeps its small interface where it is used; cmd/kgagent wires the
// clients in. (Until issue 22 each consumer had its own client,
// agent/openai and corpus/openai, with their own request, error and retry
// code, which had drifted: 408 and 409 were retried by one and rejected at
// once by the other, and a long Retry-After was waited for by neither the
// same way.)
//
// The chat client streams with server-sent events (stream=true), asks for a
// usage chunk (stream_options.include_usage) and falls back without it for
// servers that reject the field, sends the request's stop sequences and
// also enforces them on the client (servers limit their number or ignore
// them), and retries only before the first byte of a stream; Config.Timeout
// bounds a whole call, its retries and its stream. The embedder batches
// texts and adapts how many requests it keeps in flight to the server (see
// Embedder); EmbedConfig.Timeout bounds each request, and a request that
// runs out of it is retried, split in two.
//
// The wire format is small and stable, so it is written here on net/http
// rather than taken from an SDK: no SDK in go.mod, and the SDKs hide the
// retry and stop behaviour this package must control. openaitest is a
// scripted in-process server of both APIs for tests.
package openai
