package main

import (
	"strings"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent/cite"
	"github.com/kgagent/kgagent/agent/extractive"
	"github.com/kgagent/kgagent/openai/openaitest"
)

// gemmaHelm is Gemma-3-270M's answer to the Helm question in a CI run of
// TestOllamaDemoQuestions (text protocol, --llm-max-tokens 96): a line of
// the demo's query results page looped until the token limit cut it. It
// was kept as the model's answer, with its citations.
const gemmaHelm = "\n- lumen: The result of Client.query().\n- lumen: The result of Client.query(). [1]\n- lumen: The result of Client.query().\n- lumen: The result of Client.query(). [1]\n- lumen: The result of Client.query().\n- lumen: The result of Client.query(). [1]\n- lumen: The result of Client."

// TestLoopingModelAbstains serves the demo with an OpenAI-compatible
// stand-in that answers the Helm question (the docs do not cover it) as
// Gemma-3 did in CI, stopped by the token limit, with and without "A:":
// the answer is the abstention, never the looped line with the model's
// citations, and every [n] names a source of the answer (the assertions of
// TestOllamaDemoQuestions for the question).
func TestLoopingModelAbstains(t *testing.T) {
	for _, out := range []string{gemmaHelm, "A: " + gemmaHelm, "[1]" + gemmaHelm} {
		step := openaitest.Reply(out)
		step.FinishReason = "length"
		srv := openaitest.New(t, step, step, step)
		base, logs := startServe(t, "--demo", "--demo-site-dir", siteDir, "--llm", "openai", "--llm-base-url", srv.URL,
			"--llm-model", "scripted", "--llm-protocol", "text", "--max-iterations", "3", "--llm-max-tokens", "96", "--llm-observation-tokens", "250", "--answer-cache-size", "0")
		waitDemoIngested(t, logs)
		r := ollamaREST(t, base, notCovered)
		if r.err != "" {
			t.Fatalf("%q: %s", out, r.err)
		}
		if !strings.Contains(r.answer, extractive.Abstention) && !strings.Contains(r.answer, extractive.NotFound) || strings.Contains(r.answer, "Client.query()") ||
			r.citations == kgagent.CitationsModel || r.citations == kgagent.CitationsAttributed {
			t.Errorf("model output %q: answer %q (citations %s), want the abstention alone", out, r.answer, r.citations)
		}
		for _, n := range cite.Numbers(r.answer) {
			if n < 1 || n > len(r.sources) {
				t.Errorf("answer cites [%d] with %d sources: %q", n, len(r.sources), r.answer)
			}
		}
	}
}

// TestModelCitationOutOfRange: a model's answer to the port question on the
// demo citing [40], a number no source it was shown has, has that number
// dropped and its sentence attributed to the source that holds it; the
// answer never cites a number its sources lack.
func TestModelCitationOutOfRange(t *testing.T) {
	srv := openaitest.New(t, openaitest.Reply("A: The HTTP API listens on port 8086 by default [40]."))
	base, logs := startServe(t, "--demo", "--demo-site-dir", siteDir, "--llm", "openai", "--llm-base-url", srv.URL,
		"--llm-model", "scripted", "--llm-protocol", "text", "--max-iterations", "3", "--answer-cache-size", "0")
	waitDemoIngested(t, logs)
	r := ollamaREST(t, base, "What is the default HTTP port of the Lumen server?")
	if r.err != "" {
		t.Fatal(r.err)
	}
	prompt := srv.ChatRequests()[0].Prompt()
	if strings.Contains(prompt, "[40]") || !strings.Contains(prompt, "[5]") {
		t.Fatalf("the model was shown a source [40], or fewer than five: %s", prompt)
	}
	if r.citations != kgagent.CitationsAttributed || !strings.Contains(r.answer, "The HTTP API listens on port 8086 by default [1].") {
		t.Errorf("answer %q (citations %s), want the sentence attributed", r.answer, r.citations)
	}
	for _, n := range cite.Numbers(r.answer) {
		if n < 1 || n > len(r.sources) {
			t.Errorf("answer cites [%d] with %d sources: %q", n, len(r.sources), r.answer)
		}
	}
	if r.valid = validCitations(t, r); r.valid == 0 {
		t.Errorf("no valid citation in %q", r.answer)
	}
}
