package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent/cite"
	"github.com/kgagent/kgagent/agent/extractive"
	"github.com/kgagent/kgagent/internal/poll"
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

// TestModelWithoutAnswerFallsBackByMeaning serves the demo with semantic
// search on (the MiniLM weights) and an OpenAI-compatible stand-in that
// writes only protocol text: the answer to the upgrade question is what
// the docs say, from the migration guide (their word is "migrate"), as the
// built-in model answers it (TestSemanticPassOnServe) — not the abstention
// the answerer writes by words alone, which ground wrote for an LLM before
// (agent.LoopConfig.DocsAnswer had no Embed).
func TestModelWithoutAnswerFallsBackByMeaning(t *testing.T) {
	needMiniLM(t)
	reply := openaitest.Reply("A: answer [1]")
	srv := openaitest.New(t, reply, reply, reply)
	s := startServeFull(t, "--demo", "--demo-site-dir", siteDir, "--semantic-search", "auto", "--answer-cache-size", "0", "--llm", "openai", "--llm-base-url", srv.URL,
		"--llm-model", "scripted", "--llm-protocol", "text", "--max-iterations", "3")
	waitDemoIngestedWithin(t, s.stderr, 2*time.Minute)
	poll.Until(t, 5*time.Minute, func() error {
		done, total := metricValue(t, s.base, "kgagent_semantic_chunks_embedded"), metricValue(t, s.base, "kgagent_semantic_chunks")
		if total == 0 || done < total || metricValue(t, s.base, "kgagent_semantic_pass_running") != 0 {
			return fmt.Errorf("semantic vectors %v of %v", done, total)
		}
		return nil
	})
	r := ollamaREST(t, s.base, upgradeQuestion)
	if r.err != "" {
		t.Fatal(r.err)
	}
	const lead = "The model gave no answer (only protocol text). The docs say: Migrating from Lumen 1.x: Lumen 2.0 changed the on-disk format."
	if r.citations != kgagent.CitationsFallback || !strings.HasPrefix(r.answer, lead) || !strings.Contains(r.answer, "Run lumen migrate --from /var/lib/lumen-1 --to /var/lib/lumen once") {
		t.Errorf("answer %q (citations %s), want the docs' answer from the migration guide after %q", r.answer, r.citations, lead)
	}
	if len(r.sources) == 0 || !strings.HasSuffix(r.sources[0].URL, "/guides/migration.html#migration") {
		t.Errorf("sources %+v, want the migration guide first", r.sources)
	}
	for _, n := range cite.Numbers(r.answer) {
		if n < 1 || n > len(r.sources) {
			t.Errorf("answer cites [%d] with %d sources: %q", n, len(r.sources), r.answer)
		}
	}
}
