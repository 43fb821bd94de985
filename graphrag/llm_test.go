package graphrag_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/graphrag/sqlite"
)

func TestParseRecords(t *testing.T) {
	def := graphrag.Record{Entity: "GIL", Definition: "The global interpreter lock."}
	rel := graphrag.Record{Subject: "json", Predicate: "defines", Object: "json.dumps"}
	tests := []struct {
		name    string
		in      string
		want    []graphrag.Record
		wantBad int
	}{
		{"json lines", `{"entity": "GIL", "definition": "The global interpreter lock."}
{"subject": "json", "predicate": "defines", "object": "json.dumps"}`, []graphrag.Record{def, rel}, 0},
		{"code fence and chatter", "Sure! Here are the facts:\n```json\n{\"entity\": \"GIL\", \"definition\": \"The global interpreter lock.\"}\n```\nHope this helps.", []graphrag.Record{def}, 0},
		{"bullets", `- {"subject": "json", "predicate": "defines", "object": "json.dumps"}`, []graphrag.Record{rel}, 0},
		{"truncated last line", `{"subject": "json", "predicate": "defines", "object": "json.dumps"}
{"entity": "GIL", "defin`, []graphrag.Record{rel}, 1},
		{"array", `[{"entity": "GIL", "definition": "The global interpreter lock."}, {"subject": "json", "predicate": "defines", "object": "json.dumps"}]`, []graphrag.Record{def, rel}, 0},
		{"wrapped object", "```\n{\"definitions\": [{\"entity\": \"GIL\", \"definition\": \"The global interpreter lock.\"}],\n \"relationships\": [{\"subject\": \"json\", \"predicate\": \"defines\", \"object\": \"json.dumps\"}]}\n```", []graphrag.Record{def, rel}, 0},
		{"two on a line", `{"entity": "GIL", "definition": "The global interpreter lock."} {"subject": "json", "predicate": "defines", "object": "json.dumps"}`, []graphrag.Record{def, rel}, 0},
		{"broken then good on a line", `{"entity": "GIL", {"subject": "json", "predicate": "defines", "object": "json.dumps"}`, []graphrag.Record{rel}, 1},
		{"incomplete record", `{"subject": "json", "predicate": "defines"}`, nil, 1},
		{"alternative keys", `{"term": "GIL", "description": "The global interpreter lock."}`, []graphrag.Record{def}, 0},
		{"prose only", "I could not find any facts.", nil, 0},
		{"empty", "", nil, 0},
		{"citation brackets", `See [1]. {"subject": "json", "predicate": "defines", "object": "json.dumps"}`, []graphrag.Record{rel}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, bad := graphrag.ParseRecords(tc.in)
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("record %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
			if bad != tc.wantBad {
				t.Errorf("bad = %d, want %d", bad, tc.wantBad)
			}
		})
	}
}

func FuzzParseRecords(f *testing.F) {
	for _, s := range []string{
		"{\"entity\": \"a\", \"definition\": \"b\"}\n{\"subject\": \"a\", \"predicate\": \"p\", \"object\": \"c\"}",
		"```json\n[{\"entity\": \"a\", \"definition\": \"b\"}]\n```",
		"{\"definitions\": [{\"entity\": 1, \"definition\": true}]}",
		"{\"subject\": \"a\", \"pred", "[[[{", "}{", "{\"entity\": \"\xff\", \"definition\": \"x\"}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		recs, bad := graphrag.ParseRecords(s)
		if bad < 0 {
			t.Fatal("negative bad")
		}
		for _, r := range recs {
			if !r.IsDefinition() && !r.IsRelationship() {
				t.Fatalf("incomplete record %+v", r)
			}
			for _, v := range []string{r.Entity, r.Definition, r.Subject, r.Predicate, r.Object} {
				if !utf8.ValidString(v) {
					t.Fatalf("invalid UTF-8 in %+v", r)
				}
			}
		}
		doc := kgagent.Document{Collection: "c", URL: base}
		for _, tr := range graphrag.RecordsToTriples(doc, kgagent.Chunk{ID: "c1", Anchor: "a"}, recs) {
			if err := graphrag.ValidateTriple("c", base, tr); err != nil {
				t.Fatalf("invalid triple %+v: %v", tr, err)
			}
		}
	})
}

// scripted is a Completer that replays replies and counts calls.
type scripted struct {
	calls   atomic.Int32
	replies []func(prompt string) (string, error)
}

func (s *scripted) Complete(_ context.Context, prompt string) (string, error) {
	n := int(s.calls.Add(1)) - 1
	if n >= len(s.replies) {
		n = len(s.replies) - 1
	}
	return s.replies[n](prompt)
}

func reply(text string) func(string) (string, error) {
	return func(string) (string, error) { return text, nil }
}

func fail(err error) func(string) (string, error) {
	return func(string) (string, error) { return "", err }
}

func TestLLMExtractor(t *testing.T) {
	doc := kgagent.Document{Collection: "py", URL: base, Title: "json"}
	chunk := kgagent.Chunk{ID: "c1", DocURL: base, URL: base + "#json.dumps", Anchor: "json.dumps", Text: "json.dumps serializes obj.", Hash: "h1", HeadingPath: []string{"json", "dumps"}}
	good := "```\n{\"entity\": \"json.dumps\", \"definition\": \"Serialize obj to a JSON formatted str.\"}\n{\"subject\": \"json\", \"predicate\": \"Defines\", \"object\": \"json.dumps\"}\n```"
	unavailable := kgagent.Errorf(kgagent.EUNAVAILABLE, "down")

	tests := []struct {
		name      string
		replies   []func(string) (string, error)
		wantCalls int32
		wantN     int
		wantCode  string
	}{
		{"first try", []func(string) (string, error){reply(good)}, 1, 2, ""},
		{"malformed then good", []func(string) (string, error){reply(`{"entity": "json.du`), reply(good)}, 2, 2, ""},
		{"transient then good", []func(string) (string, error){fail(unavailable), reply(good)}, 2, 2, ""},
		{"always malformed", []func(string) (string, error){reply(`{"entity": `)}, 3, 0, kgagent.EUNAVAILABLE},
		{"always down", []func(string) (string, error){fail(errors.New("connection refused"))}, 3, 0, kgagent.EUNAVAILABLE},
		{"not retryable", []func(string) (string, error){fail(kgagent.Errorf(kgagent.EINVALID, "prompt too long"))}, 1, 0, kgagent.EINVALID},
		{"no facts", []func(string) (string, error){reply("There are no facts here.")}, 1, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			llm := &scripted{replies: tc.replies}
			x := &graphrag.LLMExtractor{LLM: llm, Model: "m", Backoff: time.Millisecond}
			ts, err := x.Extract(t.Context(), doc, []kgagent.Chunk{chunk})
			if kgagent.ErrorCode(err) != tc.wantCode {
				t.Fatalf("err = %v, want code %q", err, tc.wantCode)
			}
			if got := llm.calls.Load(); got != tc.wantCalls {
				t.Errorf("calls = %d, want %d", got, tc.wantCalls)
			}
			if len(ts) != tc.wantN {
				t.Fatalf("got %d triples, want %d: %+v", len(ts), tc.wantN, ts)
			}
			for _, tr := range ts {
				if tr.ChunkID != "c1" || tr.SourceURL != base+"#json.dumps" || tr.DocURL != base {
					t.Errorf("provenance: %+v", tr)
				}
				if tr.Predicate == "defines" && (tr.Subject.ID != "json" || tr.Object.ID != "json.dumps") {
					t.Errorf("relationship: %+v", tr)
				}
			}
		})
	}
}

func TestLLMExtractorCache(t *testing.T) {
	doc := kgagent.Document{Collection: "py", URL: base, Title: "json"}
	var prompts []string
	llm := graphrag.CompleterFunc(func(_ context.Context, p string) (string, error) {
		prompts = append(prompts, p)
		return `{"entity": "x", "definition": "y"}`, nil
	})
	cache := &graphrag.MemCache{}
	x := &graphrag.LLMExtractor{LLM: llm, Cache: cache, Model: "m", Concurrency: 1}
	chunks := []kgagent.Chunk{{ID: "a", Text: "alpha text", Hash: "ha"}, {ID: "b", Text: "beta text", Hash: "hb"}}
	for range 2 {
		if _, err := x.Extract(t.Context(), doc, chunks); err != nil {
			t.Fatal(err)
		}
	}
	if len(prompts) != 2 {
		t.Fatalf("unchanged chunks cost %d calls, want 2", len(prompts))
	}
	if !strings.Contains(prompts[0], "alpha text") || !strings.Contains(prompts[0], "JSON lines") {
		t.Errorf("prompt lacks the text or the format: %q", prompts[0])
	}
	chunks[1].Text, chunks[1].Hash = "beta changed", "hb2"
	ts, err := x.Extract(t.Context(), doc, chunks)
	if err != nil {
		t.Fatal(err)
	}
	if len(prompts) != 3 {
		t.Errorf("one changed chunk cost %d calls, want 1", len(prompts)-2)
	}
	if len(ts) != 2 {
		t.Errorf("got %d triples from cache and LLM, want 2", len(ts))
	}
	// Another model does not reuse the cache.
	y := &graphrag.LLMExtractor{LLM: llm, Cache: cache, Model: "other", Concurrency: 1}
	if _, err := y.Extract(t.Context(), doc, chunks[:1]); err != nil {
		t.Fatal(err)
	}
	if len(prompts) != 4 {
		t.Errorf("cache shared across models")
	}
}

func TestCombine(t *testing.T) {
	doc, chunks := sampleDoc()
	llm := graphrag.CompleterFunc(func(context.Context, string) (string, error) {
		return `{"subject": "json", "predicate": "part of", "object": "standard library"}`, nil
	})
	ts, err := graphrag.Combine(graphrag.BuiltinExtractor{}, &graphrag.LLMExtractor{LLM: llm}).Extract(t.Context(), doc, chunks)
	if err != nil {
		t.Fatal(err)
	}
	var llmN, builtinN int
	for _, tr := range ts {
		if tr.Predicate == "part_of" {
			llmN++
		} else {
			builtinN++
		}
	}
	if llmN != len(chunks) || builtinN == 0 {
		t.Errorf("llm %d (want %d), builtin %d", llmN, len(chunks), builtinN)
	}
}

func TestLLMExtractorPersistentCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "graph.db")
	doc := kgagent.Document{Collection: "py", URL: base, Title: "json"}
	var chunks []kgagent.Chunk
	for i := range 6 {
		chunks = append(chunks, kgagent.Chunk{ID: fmt.Sprintf("c%d", i), Text: fmt.Sprintf("text %d", i), Hash: fmt.Sprintf("h%d", i)})
	}
	var calls atomic.Int32
	llm := graphrag.CompleterFunc(func(_ context.Context, p string) (string, error) {
		calls.Add(1)
		i := strings.Index(p, "<<<\ntext ") + 4
		return fmt.Sprintf(`{"entity": "thing %s", "definition": "d"}`, p[i+5:i+6]), nil
	})
	for round := range 2 {
		store, err := sqlite.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		x := &graphrag.LLMExtractor{LLM: llm, Cache: store, Model: "m", Concurrency: 3}
		ts, err := x.Extract(t.Context(), doc, chunks)
		store.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) != 6 {
			t.Fatalf("round %d: %d triples", round, len(ts))
		}
		for i, tr := range ts {
			if tr.ChunkID != chunks[i].ID || tr.Subject.Name != fmt.Sprintf("thing %d", i) {
				t.Errorf("round %d: triple %d = %+v, not in chunk order", round, i, tr)
			}
		}
	}
	if calls.Load() != 6 {
		t.Errorf("LLM calls over a restart: %d, want 6", calls.Load())
	}
}

func TestLLMExtractorGrounded(t *testing.T) {
	text := "retention.default The retention period of databases that have no policy of their own. Default: 30d. Lumen deletes whole shards."
	recs := []graphrag.Record{
		{Entity: "retention.default", Definition: "The retention period of databases that have no policy of their own."},
		{Entity: "Lumen", Definition: "The light of the universe."},
		{Entity: "LuminousDB", Definition: "The retention period of databases."},
		{Subject: "Lumen", Predicate: "deletes", Object: "whole  Shards"},
		{Subject: "Lumen", Predicate: "is_a", Object: "light source"},
	}
	got := graphrag.Grounded(text, recs)
	if len(got) != 2 || got[0].Entity != "retention.default" || got[1].Predicate != "deletes" {
		t.Errorf("grounded %+v", got)
	}
	doc := kgagent.Document{Collection: "py", URL: base, Title: "Retention"}
	llm := graphrag.CompleterFunc(func(context.Context, string) (string, error) {
		return `{"entity": "Lumen", "definition": "The light of the universe."}
{"subject": "Lumen", "predicate": "deletes", "object": "whole shards"}`, nil
	})
	for _, grounded := range []bool{false, true} {
		x := &graphrag.LLMExtractor{LLM: llm, Grounded: grounded}
		ts, err := x.Extract(t.Context(), doc, []kgagent.Chunk{{ID: "c", Text: text, Hash: "h"}})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{false: 2, true: 1}[grounded]; len(ts) != want {
			t.Errorf("grounded=%v: %d triples, want %d: %+v", grounded, len(ts), want, ts)
		}
	}
}
