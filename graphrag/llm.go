package graphrag

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/text"
)

// Completer is the slice of the agent's LLM the LLM extractor needs: one
// prompt in, the model's text out. cmd/kgagent adapts the agent's LLM to it.
// Errors carrying EUNAVAILABLE, ETIMEOUT or ERATELIMIT (or no code) are
// retried; EINVALID and the like are not.
type Completer interface {
	Complete(ctx context.Context, prompt string) (string, error)
}

// CompleterFunc adapts a function to Completer.
type CompleterFunc func(ctx context.Context, prompt string) (string, error)

// Complete implements Completer.
func (f CompleterFunc) Complete(ctx context.Context, prompt string) (string, error) {
	return f(ctx, prompt)
}

// Record is one line of LLM extraction output: a definition (Entity,
// Definition) or a relationship (Subject, Predicate, Object).
type Record struct {
	Entity     string `json:"entity,omitempty"`
	Definition string `json:"definition,omitempty"`
	Subject    string `json:"subject,omitempty"`
	Predicate  string `json:"predicate,omitempty"`
	Object     string `json:"object,omitempty"`
}

// IsDefinition reports whether r is a complete definition record.
func (r Record) IsDefinition() bool { return r.Entity != "" && r.Definition != "" }

// IsRelationship reports whether r is a complete relationship record.
func (r Record) IsRelationship() bool { return r.Subject != "" && r.Predicate != "" && r.Object != "" }

// LLMExtractor asks an LLM for the definitions and relationships of each
// chunk, as JSON lines, and turns them into triples. Results are cached by
// model and chunk hash, so an unchanged chunk never costs a second call.
// Malformed output is retried up to Retries times, then skipped with an
// error; transient LLM errors are retried with a short backoff.
type LLMExtractor struct {
	LLM     Completer
	Cache   Cache         // default: an in-memory cache; use graphrag/sqlite's Store to persist
	Model   string        // part of the cache key; change it when the model changes
	Retries int           // extra attempts per chunk; default 2
	Backoff time.Duration // first retry delay, doubled each time; default 200ms
	MaxText int           // chunk text sent, in bytes; default 8000
	// Concurrency is how many chunks of a document are extracted at once;
	// default 4. Triples come back in chunk order whatever it is.
	Concurrency int
	// Grounded keeps only records the chunk's text supports (Grounded):
	// small models invent names and definitions (SmolLM2-135M answers a
	// retention page with "Lumen: the light of the universe"), and those
	// never enter the graph.
	Grounded bool

	once sync.Once
}

var _ Extractor = (*LLMExtractor)(nil)

// PromptVersion is part of the cache key; bump it when the prompt changes.
const PromptVersion = "v1"

// Prompt is the extraction prompt for one chunk.
func Prompt(doc kgagent.Document, c kgagent.Chunk, maxText int) string {
	body := c.Text
	if maxText > 0 && len(body) > maxText {
		body = text.Clip(body, maxText)
	}
	var b strings.Builder
	b.WriteString("Extract knowledge from the documentation text below.\n")
	b.WriteString("Answer with JSON lines only: one JSON object per line, no prose, no code fences.\n")
	b.WriteString("For each term, API or concept the text defines or explains, write:\n")
	b.WriteString(`{"entity": "<name as written>", "definition": "<one sentence from the text>"}` + "\n")
	b.WriteString("For each relationship the text states between two named things, write:\n")
	b.WriteString(`{"subject": "<name>", "predicate": "<short verb phrase, e.g. is_a, defines, returns, part_of>", "object": "<name>"}` + "\n")
	b.WriteString("Use only facts stated in the text. If there are none, answer with nothing.\n\n")
	fmt.Fprintf(&b, "Page: %s\n", doc.Title)
	if len(c.HeadingPath) > 0 {
		fmt.Fprintf(&b, "Section: %s\n", strings.Join(c.HeadingPath, " > "))
	}
	b.WriteString("Text:\n<<<\n")
	b.WriteString(body)
	b.WriteString("\n>>>\n")
	return b.String()
}

// Extract implements Extractor: one LLM call per chunk not in the cache.
func (x *LLMExtractor) Extract(ctx context.Context, doc kgagent.Document, chunks []kgagent.Chunk) ([]kgagent.Triple, error) {
	if err := ValidateCollection(doc.Collection); err != nil {
		return nil, err
	}
	if err := ValidateDocURL(doc.URL); err != nil {
		return nil, err
	}
	if x.LLM == nil {
		return nil, kgagent.Errorf(kgagent.EINVALID, "LLM extractor has no LLM")
	}
	x.once.Do(func() {
		if x.Cache == nil {
			x.Cache = &MemCache{}
		}
	})
	conc := x.Concurrency
	if conc <= 0 {
		conc = 4
	}
	results := make([][]Record, len(chunks))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(conc)
	for i, c := range chunks {
		g.Go(func() error {
			recs, err := x.chunk(gctx, doc, c)
			results[i] = recs
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []kgagent.Triple
	for i, c := range chunks {
		recs := results[i]
		if x.Grounded {
			recs = Grounded(c.Text, recs)
		}
		out = append(out, RecordsToTriples(doc, c, recs)...)
	}
	return out, nil
}

// Grounded returns the records chunk supports: every name (a definition's
// entity, a relationship's subject and object) occurs in chunk, case and
// white space folded, and at least half of a definition's distinct words of
// four letters or more do too (the prompt asks for a sentence from the text).
func Grounded(chunk string, recs []Record) []Record {
	fold := func(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }
	t := fold(chunk)
	has := func(name string) bool {
		n := fold(strings.Trim(name, "`'\"*"))
		return n != "" && strings.Contains(t, n)
	}
	var out []Record
	for _, r := range recs {
		switch {
		case r.IsDefinition():
			words, in := 0, 0
			seen := map[string]bool{}
			for _, w := range text.LetterRuns(strings.ToLower(r.Definition)) {
				if len(w) >= 4 && !seen[w] {
					seen[w] = true
					words++
					if strings.Contains(t, w) {
						in++
					}
				}
			}
			if has(r.Entity) && words > 0 && 2*in >= words {
				out = append(out, r)
			}
		case r.IsRelationship():
			if has(r.Subject) && has(r.Object) {
				out = append(out, r)
			}
		}
	}
	return out
}

// CacheKey is the cache key of a chunk's extraction.
func (x *LLMExtractor) CacheKey(c kgagent.Chunk) string {
	h := c.Hash
	if h == "" {
		sum := sha256.Sum256([]byte(c.Text))
		h = hex.EncodeToString(sum[:])
	}
	return "llm-extract/" + PromptVersion + "/" + x.Model + "/" + h
}

func (x *LLMExtractor) chunk(ctx context.Context, doc kgagent.Document, c kgagent.Chunk) ([]Record, error) {
	key := x.CacheKey(c)
	if v, ok, err := x.Cache.Get(ctx, key); err == nil && ok {
		var recs []Record
		if json.Unmarshal([]byte(v), &recs) == nil {
			return recs, nil
		}
	}
	retries, backoff := x.Retries, x.Backoff
	if retries <= 0 {
		retries = 2
	}
	if backoff <= 0 {
		backoff = 200 * time.Millisecond
	}
	maxText := x.MaxText
	if maxText <= 0 {
		maxText = 8000
	}
	prompt := Prompt(doc, c, maxText)
	var lastErr error
	for attempt := 0; attempt <= retries; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(backoff << (attempt - 1))
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
		}
		text, err := x.LLM.Complete(ctx, prompt)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			lastErr = err
			if !retryable(err) {
				break
			}
			continue
		}
		recs, bad := ParseRecords(text)
		if len(recs) == 0 && bad > 0 {
			lastErr = kgagent.Errorf(kgagent.EUNAVAILABLE, "LLM extraction output for chunk %s could not be parsed (%d bad lines)", c.ID, bad)
			continue
		}
		if b, err := json.Marshal(recs); err == nil {
			_ = x.Cache.Put(ctx, key, string(b))
		}
		return recs, nil
	}
	var ke *kgagent.Error
	if errors.As(lastErr, &ke) {
		return nil, lastErr
	}
	return nil, kgagent.WrapError(kgagent.EUNAVAILABLE, lastErr, "LLM extraction failed for chunk %s", c.ID)
}

func retryable(err error) bool {
	switch kgagent.ErrorCode(err) {
	case kgagent.EUNAVAILABLE, kgagent.ETIMEOUT, kgagent.ERATELIMIT, kgagent.EINTERNAL:
		return true
	}
	return false
}

// RecordsToTriples turns parsed records into triples with the chunk's
// provenance, skipping records whose names are empty or over MaxNameBytes.
func RecordsToTriples(doc kgagent.Document, c kgagent.Chunk, recs []Record) []kgagent.Triple {
	src := c.URL
	if src == "" {
		src = SectionURL(doc.URL, c.Anchor)
	}
	ok := func(name string) bool {
		return NormalizeName(name) != "" && len(name) <= MaxNameBytes && utf8.ValidString(name)
	}
	var out []kgagent.Triple
	for _, r := range recs {
		t := kgagent.Triple{Collection: doc.Collection, ChunkID: c.ID, DocURL: doc.URL, SourceURL: src}
		switch {
		case r.IsDefinition() && ok(r.Entity):
			t.Subject = NewEntity(r.Entity, TypeTerm)
			t.Predicate = PredIsDefinedAs
			t.Literal = text.Clip(strings.TrimSpace(r.Definition), MaxLiteralBytes)
		case r.IsRelationship() && ok(r.Subject) && ok(r.Object):
			p := NormalizePredicate(r.Predicate)
			if p == "" || len(p) > MaxPredicateBytes {
				continue
			}
			t.Subject = NewEntity(r.Subject, TypeTerm)
			t.Predicate = p
			t.Object = NewEntity(r.Object, TypeTerm)
			if t.Subject.ID == t.Object.ID {
				continue
			}
		default:
			continue
		}
		if ValidateTriple(doc.Collection, doc.URL, t) == nil {
			out = append(out, t)
		}
	}
	return out
}

// ParseRecords reads LLM extraction output leniently: code fences, bullets,
// chatter around the JSON, several objects on one line, a JSON array or an
// object {"definitions": [...], "relationships": [...]} are all accepted;
// truncated or malformed objects are skipped and counted in bad.
func ParseRecords(text string) (recs []Record, bad int) {
	// The whole reply as one JSON value (after removing fences).
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			continue
		}
		lines = append(lines, l)
	}
	body := strings.TrimSpace(strings.Join(lines, "\n"))
	var whole any
	if strings.HasPrefix(body, "[") || strings.HasPrefix(body, "{") {
		if err := json.Unmarshal([]byte(body), &whole); err == nil {
			n := len(recs)
			recs = appendValue(recs, whole)
			if len(recs) > n {
				return recs, 0
			}
		}
	}
	for _, l := range lines {
		rest := l
		for {
			i := strings.IndexAny(rest, "{[")
			if i < 0 {
				break
			}
			dec := json.NewDecoder(strings.NewReader(rest[i:]))
			var v any
			if err := dec.Decode(&v); err != nil {
				if rest[i] == '{' {
					bad++
				}
				rest = rest[i+1:]
				// Skip past this broken object to the next one on the line.
				if j := strings.IndexByte(rest, '{'); j >= 0 {
					rest = rest[j:]
					continue
				}
				break
			}
			n := len(recs)
			recs = appendValue(recs, v)
			if len(recs) == n && rest[i] == '{' {
				bad++
			}
			rest = rest[i+int(dec.InputOffset()):]
		}
	}
	return recs, bad
}

// appendValue adds the records in a decoded JSON value.
func appendValue(recs []Record, v any) []Record {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			recs = appendValue(recs, e)
		}
	case map[string]any:
		found := false
		for _, k := range []string{"definitions", "relationships", "relations", "triples", "facts"} {
			if arr, ok := v[k].([]any); ok {
				found = true
				recs = appendValue(recs, arr)
			}
		}
		if found {
			return recs
		}
		r := Record{
			Entity:     str(v, "entity", "term", "name"),
			Definition: str(v, "definition", "description", "meaning"),
			Subject:    str(v, "subject", "s", "source"),
			Predicate:  str(v, "predicate", "p", "relation", "relationship"),
			Object:     str(v, "object", "o", "target"),
		}
		if r.IsRelationship() {
			r.Entity, r.Definition = "", ""
			recs = append(recs, r)
		} else if r.IsDefinition() {
			r.Subject, r.Predicate, r.Object = "", "", ""
			recs = append(recs, r)
		}
	}
	return recs
}

// str returns the first of keys present in m as a trimmed string (numbers and
// booleans are formatted).
func str(m map[string]any, keys ...string) string {
	for _, k := range keys {
		switch v := m[k].(type) {
		case string:
			if s := strings.TrimSpace(v); s != "" && utf8.ValidString(s) {
				return s
			}
		case float64, bool:
			return fmt.Sprint(v)
		}
	}
	return ""
}

// Combine runs several extractors on a document and concatenates their
// triples, e.g. the built-in structure plus the LLM's definitions.
func Combine(exs ...Extractor) Extractor { return combined(exs) }

type combined []Extractor

// Extract implements Extractor: every extractor in order; the first error
// fails the whole document, so nothing partial is stored.
func (c combined) Extract(ctx context.Context, doc kgagent.Document, chunks []kgagent.Chunk) ([]kgagent.Triple, error) {
	var out []kgagent.Triple
	for _, x := range c {
		ts, err := x.Extract(ctx, doc, chunks)
		if err != nil {
			return nil, err
		}
		out = append(out, ts...)
	}
	return out, nil
}
