package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/kgagent/kgagent/openai"
	"github.com/kgagent/kgagent/openai/openaitest"
)

// TestServeChecksLLMModel: serve with --llm openai and a model the server
// does not have fails at start, naming the model and listing the server's
// (as Ollama lists them: name:tag), instead of serving questions that all
// fail with NOT_FOUND.
func TestServeChecksLLMModel(t *testing.T) {
	llm := openaitest.New(t)
	llm.SetModels("kgagent-smollm2:latest", "kgagent-gemma3:latest")
	var out, errb syncBuffer
	code := run(context.Background(), []string{"serve", "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--nats-listen", "127.0.0.1:-1",
		"--llm", "openai", "--llm-base-url", llm.URL + "/v1", "--llm-model", "smollm2"}, &out, &errb, testEnv())
	want := `config: key "llm_model": the LLM server at ` + llm.URL + `/v1 has no model "smollm2"; it has: kgagent-gemma3:latest, kgagent-smollm2:latest`
	if code == 0 || !strings.Contains(errb.String(), want) {
		t.Fatalf("exit %d, stderr %q; want %q", code, errb.String(), want)
	}
	if strings.Contains(out.String(), "chat page") {
		t.Errorf("serve started before failing: %s", out.String())
	}
}

func TestCheckLLMModel(t *testing.T) {
	llm := openaitest.New(t)
	llm.SetModels("kgagent-smollm2:latest")
	check := func(model string) (string, error) {
		c, err := openai.New(openai.Config{BaseURL: llm.URL + "/v1", Model: model})
		if err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		err = checkLLMModel(context.Background(), c, slog.New(slog.NewTextHandler(&logs, nil)))
		return logs.String(), err
	}
	for _, m := range []string{"kgagent-smollm2", "kgagent-smollm2:latest"} {
		if _, err := check(m); err != nil {
			t.Errorf("%s: %v", m, err)
		}
	}
	if _, err := check("kgagent-smollm"); err == nil {
		t.Error("a model name's prefix was taken for the model")
	}
	// A server that lists nothing is not checked, and says so.
	llm.SetModels()
	if logs, err := check("anything"); err != nil || !strings.Contains(logs, "does not list its models") {
		t.Errorf("empty list: %v %s", err, logs)
	}
	// One that cannot be reached fails at start.
	c, _ := openai.New(openai.Config{BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
	if err := checkLLMModel(context.Background(), c, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "llm_base_url") {
		t.Errorf("unreachable server: %v", err)
	}
}
