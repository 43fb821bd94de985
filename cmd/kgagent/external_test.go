package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kgagent/kgagent/openai/openaitest"
)

// TestOpenAIEmbedderWiring ingests and asks with --embedder openai against a
// scripted OpenAI-compatible server (a stand-in: no real embeddings API is
// reachable here): the vectors come over real HTTP, and the answer still
// cites the sample site.
func TestOpenAIEmbedderWiring(t *testing.T) {
	emb := openaitest.New(t)
	emb.SetEmbeddingDim(64)
	site := httptest.NewServer(http.FileServer(http.Dir(siteDir)))
	defer site.Close()
	dir := t.TempDir()
	flags := []string{"--data-dir", dir, "--embedder", "openai", "--embed-base-url", emb.URL, "--embed-dimension", "64", "--embed-model", "scripted-embed"}
	var out, errb syncBuffer
	if code := run(context.Background(), append(append([]string{"ingest"}, flags...), "--json", site.URL+"/*"), &out, &errb, testEnv()); code != 0 {
		t.Fatalf("ingest: %s", errb.String())
	}
	if n := len(emb.EmbeddingRequests()); n == 0 {
		t.Fatal("no embeddings requests reached the server")
	}
	var aout, aerr syncBuffer
	if code := run(context.Background(), append(append([]string{"ask"}, flags...), "--json", "What is the default HTTP port of the Lumen server?"), &aout, &aerr, testEnv()); code != 0 {
		t.Fatalf("ask: %s", aerr.String())
	}
	var ans struct {
		Answer  string `json:"answer"`
		Sources []struct {
			URL string `json:"url"`
		} `json:"sources"`
	}
	if err := json.Unmarshal([]byte(aout.String()), &ans); err != nil || len(ans.Sources) == 0 {
		t.Fatalf("ask printed %q: %v", aout.String(), err)
	}
}
