package agent

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kgagent/kgagent/agent/extractive"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/corpus/embeds"
	"github.com/kgagent/kgagent/graphrag"
	"github.com/kgagent/kgagent/knowledge"
)

// Searcher searches a document corpus; the corpus service implements it.
type Searcher interface {
	Search(ctx context.Context, r corpus.SearchRequest) ([]corpus.Hit, error)
}

// GraphRetriever finds graph facts for a question; the graphrag retriever
// implements it.
type GraphRetriever interface {
	Retrieve(ctx context.Context, question, collection string) ([]graphrag.Fact, error)
}

// Embedder embeds texts for the router; corpus.Embedder implements it.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// EmbedSearchFunc searches the text of one embed for query, returning at
// most k passages. Nil: corpus.SearchText with the lexical embedder; wire
// corpus.SearchText with the service's embedder to use that one.
type EmbedSearchFunc func(ctx context.Context, title, text, query string, k int) ([]corpus.Hit, error)

// EmbedFetchFunc reads the content of an embed. Nil: corpus/embeds.Reader's
// zero value, which decodes data URIs and fetches http(s) URLs through
// netguard (never a loopback, private or link-local address).
type EmbedFetchFunc func(ctx context.Context, e kgagent.Embed) ([]byte, error)

// maxListedAgents bounds the agents named in a prompt.
const maxListedAgents = 20

// maxEmbedBytes bounds an embed fetched by fixie_query_embed.
const maxEmbedBytes = 8 << 20

// Builtins is the component that provides the fixie_ built-in funcs to every
// agent: fixie_query_corpus, fixie_query_graph, fixie_query_embed,
// fixie_base_prompt, fixie_local_datetime and fixie_utc_datetime.
type Builtins struct {
	cfg *Config
	m   *Manager

	once     sync.Once
	fallback *knowledge.Retriever
}

// ComponentName implements Component.
func (b *Builtins) ComponentName() string { return "builtins" }

// Directives implements DirectiveProvider.
func (b *Builtins) Directives(ctx context.Context, run RunInfo) (Directives, error) {
	var d Directives
	if b.cfg.Builtins.Searcher != nil || b.cfg.Builtins.Knowledge != nil {
		d.Resources = append(d.Resources, "An indexed documentation corpus, searched with Func[fixie_query_corpus].")
		d.BestPractices = append(d.BestPractices, "Answer only from what the funcs say, and cite the numbered sources you use.")
	}
	if b.cfg.Builtins.Graph != nil {
		d.Resources = append(d.Resources, "A knowledge graph of facts from the documents, searched with Func[fixie_query_graph].")
	}
	if b.m != nil {
		// Other agents, local or remote, are resources too: Ask Agent[name].
		n := 0
		for _, a := range b.m.Agents() {
			if a.Name == run.Agent || n >= maxListedAgents {
				continue
			}
			desc := a.Description
			if desc == "" && len(a.Queries) > 0 {
				desc = "e.g. " + a.Queries[0]
			}
			d.Resources = append(d.Resources, strings.TrimSpace("Agent["+a.Name+"]: "+desc))
			n++
		}
	}
	return d, nil
}

// Commands implements CommandProvider.
func (b *Builtins) Commands() []Func {
	return []Func{
		{Name: "fixie_query_corpus", Description: "Searches the agent's document corpus for the query and returns numbered sources.", Handler: b.search(inCorpus), Cacheable: true},
		{Name: "fixie_query_graph", Description: "Returns knowledge-graph facts about the query, numbered with their sources.", Handler: b.search(inGraph), Cacheable: true},
		{Name: "fixie_query_embed", Description: "Runs the query against the text of the embed it names as #key (against the corpus when the request has no embed).", Handler: b.search(inEmbed)},
		{Name: "fixie_base_prompt", Description: "Returns the agent's base prompt.", Handler: b.basePrompt, Cacheable: true},
		{Name: "fixie_local_datetime", Description: "Returns the current date and time in the user's time zone.", Handler: b.localDatetime},
		{Name: "fixie_utc_datetime", Description: "Returns the current date and time in UTC.", Handler: b.utcDatetime},
	}
}

func textResult(s string) FuncResult { return FuncResult{Message: kgagent.Message{Text: s}} }

// Retriever answers a question with evidence from a collection: the
// knowledge service (package knowledge) implements it.
type Retriever interface {
	Retrieve(ctx context.Context, question, collection string, k int) (kgagent.Evidence, error)
}

// retriever returns the configured knowledge retriever, or one over the
// configured searcher and graph; nil when there is no corpus.
func (b *Builtins) retriever() Retriever {
	if b.cfg.Builtins.Knowledge != nil {
		return b.cfg.Builtins.Knowledge
	}
	if b.cfg.Builtins.Searcher == nil {
		return nil
	}
	b.once.Do(func() {
		var facts knowledge.Facts
		if b.cfg.Builtins.Graph != nil {
			facts = b.cfg.Builtins.Graph
		}
		b.fallback = knowledge.NewRetriever(b.cfg.Builtins.Searcher, facts, knowledge.RetrieveConfig{K: b.cfg.Builtins.SearchK})
	})
	return b.fallback
}

// searchIn is where a built-in search func looks for its evidence.
type searchIn int

const (
	inCorpus searchIn = iota // the knowledge retriever: passages, graph facts and the graph's answer
	inGraph                  // the graph's facts (graphEvidence)
	inEmbed                  // the text of an embed of the request (embedEvidence)
)

// search returns the handler of the built-in search funcs
// (fixie_query_corpus, fixie_query_graph, fixie_query_embed): it finds the
// evidence for the call's query where in says, numbers its sources once
// with the run's citation numbering (call.Citer) and renders the
// observation from it: the graph's answer, each passage under its source
// line, then the facts, each with its number.
func (b *Builtins) search(in searchIn) FuncHandler {
	return func(ctx context.Context, call FuncCall) (FuncResult, error) {
		var ev kgagent.Evidence
		switch {
		case in == inCorpus, in == inEmbed && len(call.Query.Embeds) == 0:
			// "#1" in a question with nothing attached names no embed:
			// the question is one for the corpus.
			q := strings.TrimSpace(call.Query.Text)
			if q == "" {
				return FuncResult{}, kgagent.Errorf(kgagent.EINVALID, "fixie_query_corpus needs a query")
			}
			r := b.retriever()
			if r == nil {
				return FuncResult{}, kgagent.Errorf(kgagent.EUNAVAILABLE, "no document corpus is configured")
			}
			var err error
			if ev, err = r.Retrieve(ctx, q, call.Collection, b.cfg.Builtins.SearchK); err != nil {
				return FuncResult{}, err
			}
			if len(ev.Passages) == 0 && len(ev.Facts) == 0 && ev.List == nil {
				return FuncResult{Message: kgagent.Message{Text: "No documents matched the query."}, Evidence: &ev}, nil
			}
		default:
			find := b.graphEvidence
			if in == inEmbed {
				find = b.embedEvidence
			}
			found, none, err := find(ctx, call)
			if err != nil || found == nil {
				return textResult(none), err
			}
			ev = *found
		}
		knowledge.Number(&ev, call.Citer())
		res := FuncResult{Evidence: &ev}
		var sb strings.Builder
		if l := ev.List; l != nil {
			// The graph's answer first, each item with its own section: an
			// LLM reading the observation keeps the per-item citations.
			if l.SourceURL != "" {
				res.Sources = append(res.Sources, l.Source())
			}
			fmt.Fprintf(&sb, "Graph answer (%s %s of %s) [%d]:\n", l.Shape, l.Relation, l.Subject, l.N)
			for _, it := range l.Items {
				res.Sources = append(res.Sources, it.Source())
				line := it.Name
				if it.Text != "" {
					line += ": " + it.Text
				}
				fmt.Fprintf(&sb, "- %s [%d]\n", line, it.N)
			}
			if l.More > 0 {
				fmt.Fprintf(&sb, "- and %d more\n", l.More)
			}
			sb.WriteString("\n")
		}
		size := 0
		for _, p := range ev.Passages {
			size += len(p.Title) + len(p.URL) + len(p.Text) + 64
		}
		for _, f := range ev.Facts {
			size += len(f.Text) + 16
		}
		sb.Grow(size) // the passages' text in one allocation, not doubling
		for _, p := range ev.Passages {
			res.Sources = append(res.Sources, p.Source())
			if p.SourceOnly {
				// Kept to name one of the search's first pages among the
				// sources: an LLM reads the same passages as the built-in
				// answerer composes from (more text made small models
				// copy commands from pages that do not answer).
				continue
			}
			writeSourceLine(&sb, p.N, p.Title, p.HeadingPath, p.URL)
			sb.WriteByte('\n')
			sb.WriteString(strings.TrimSpace(p.Text))
			sb.WriteString("\n\n")
		}
		if len(ev.Facts) > 0 {
			sb.WriteString("Facts:\n")
			for _, f := range ev.Facts {
				res.Sources = append(res.Sources, f.Source())
				fmt.Fprintf(&sb, "- %s [%d]\n", f.Text, f.N)
			}
		}
		res.Message.Text = strings.TrimSpace(sb.String())
		return res, nil
	}
}

// SourceLine is the header line of a numbered source in observations:
// "[n] Title › Heading (url)". It is for LLMs only: the extractive model
// reads the run's evidence (llm.Observation.Evidence), never this line.
func SourceLine(n int, title string, headings []string, url string) string {
	var sb strings.Builder
	writeSourceLine(&sb, n, title, headings, url)
	return sb.String()
}

// writeSourceLine writes SourceLine(n, title, headings, url) to sb.
func writeSourceLine(sb *strings.Builder, n int, title string, headings []string, url string) {
	sb.WriteByte('[')
	sb.WriteString(strconv.Itoa(n))
	sb.WriteString("] ")
	sb.WriteString(title)
	if len(headings) > 0 && headings[len(headings)-1] != title {
		sb.WriteString(" › ")
		sb.WriteString(headings[len(headings)-1])
	}
	sb.WriteString(" (")
	sb.WriteString(url)
	sb.WriteByte(')')
}

// graphEvidence finds the graph's facts about the call's query; none is
// the reply when there are none (found nil).
func (b *Builtins) graphEvidence(ctx context.Context, call FuncCall) (found *kgagent.Evidence, none string, err error) {
	q := strings.TrimSpace(call.Query.Text)
	if q == "" {
		return nil, "", kgagent.Errorf(kgagent.EINVALID, "fixie_query_graph needs a query")
	}
	if b.cfg.Builtins.Graph == nil {
		return nil, "", kgagent.Errorf(kgagent.EUNAVAILABLE, "no knowledge graph is configured")
	}
	facts, err := b.cfg.Builtins.Graph.Retrieve(ctx, q, call.Collection)
	if err != nil {
		return nil, "", err
	}
	if len(facts) == 0 {
		return nil, "No facts matched the query.", nil
	}
	ev := kgagent.Evidence{Query: q, Passages: []kgagent.EvidencePassage{}}
	for _, f := range facts {
		ev.Facts = append(ev.Facts, kgagent.EvidenceFact{Triple: f.Triple, Text: f.Text, SourceURL: f.SourceURL, Score: f.Score})
	}
	return &ev, "", nil
}

// embedEvidence finds the passages of an embed's text that match the
// call's query: the embed it names as #key, or its only one; none is the
// reply when nothing matched (found nil). The call has an embed (search
// asks the corpus otherwise).
func (b *Builtins) embedEvidence(ctx context.Context, call FuncCall) (found *kgagent.Evidence, none string, err error) {
	q := call.Query.Text
	key := ""
	for _, m := range extractive.EmbedRef.FindAllStringSubmatch(q, -1) {
		if _, ok := call.Query.Embeds[m[1]]; ok {
			key = m[1]
			break
		}
	}
	if key == "" && len(call.Query.Embeds) == 1 {
		for k := range call.Query.Embeds {
			key = k
		}
	}
	if key == "" {
		keys := make([]string, 0, len(call.Query.Embeds))
		for k := range call.Query.Embeds {
			keys = append(keys, "#"+k)
		}
		sort.Strings(keys)
		return nil, "", &kgagent.Error{Code: kgagent.EINVALID, Message: "fixie_query_embed: name an embed as #key",
			Details: map[string]any{"embeds": keys}}
	}
	emb := call.Query.Embeds[key]
	if ct := strings.ToLower(emb.ContentType); ct != "" && !strings.HasPrefix(ct, "text/") && !strings.Contains(ct, "json") && !strings.Contains(ct, "xml") {
		return nil, "", kgagent.Errorf(kgagent.EUNSUPPORTED, "embed #%s has content type %s; fixie_query_embed reads text", key, emb.ContentType)
	}
	content, err := b.fetchEmbed(ctx, emb)
	if err != nil {
		return nil, "", err
	}
	query := strings.TrimSpace(strings.ReplaceAll(q, "#"+key, ""))
	if query == "" {
		query = q
	}
	title := "#" + key
	search := b.cfg.Builtins.EmbedSearch
	if search == nil {
		search = func(ctx context.Context, title, text, query string, k int) ([]corpus.Hit, error) {
			return corpus.SearchText(ctx, nil, title, text, query, k)
		}
	}
	hits, err := search(ctx, title, string(content), query, b.cfg.Builtins.SearchK)
	if err != nil {
		return nil, "", err
	}
	if len(hits) == 0 {
		return nil, fmt.Sprintf("Nothing in embed #%s matched the query.", key), nil
	}
	ev := kgagent.Evidence{Query: query}
	for _, h := range hits {
		u := title
		if strings.HasPrefix(emb.URI, "http://") || strings.HasPrefix(emb.URI, "https://") {
			u = emb.URI
		}
		doc := u
		if h.Anchor != "" {
			u += "#" + h.Anchor
		}
		ev.Passages = append(ev.Passages, kgagent.EvidencePassage{URL: u, DocURL: doc, Title: title, Text: h.Text, Score: h.Score})
	}
	return &ev, "", nil
}

func (b *Builtins) fetchEmbed(ctx context.Context, e kgagent.Embed) ([]byte, error) {
	if b.cfg.Builtins.EmbedFetch != nil {
		return b.cfg.Builtins.EmbedFetch(ctx, e)
	}
	// embeds.Reader's default client is netguard's: an embed URL comes from
	// the caller and must not reach loopback, private or metadata addresses.
	return (&embeds.Reader{MaxBytes: maxEmbedBytes}).Read(ctx, e)
}

func (b *Builtins) basePrompt(ctx context.Context, call FuncCall) (FuncResult, error) {
	if b.m == nil {
		return FuncResult{}, kgagent.Errorf(kgagent.EUNAVAILABLE, "no agent context")
	}
	e, err := b.m.entry(call.Agent)
	if err != nil {
		return FuncResult{}, err
	}
	return textResult(e.a.Config().BasePrompt), nil
}

const datetimeLayout = "Monday, 2 January 2006, 15:04:05 MST (-07:00)"

func (b *Builtins) localDatetime(ctx context.Context, call FuncCall) (FuncResult, error) {
	loc := b.cfg.Location
	if call.TimeZone != "" {
		if l, err := time.LoadLocation(call.TimeZone); err == nil {
			loc = l
		}
	}
	return textResult(b.cfg.Now().In(loc).Format(datetimeLayout) + " " + loc.String()), nil
}

func (b *Builtins) utcDatetime(ctx context.Context, call FuncCall) (FuncResult, error) {
	return textResult(b.cfg.Now().UTC().Format(datetimeLayout)), nil
}

// DefaultAgent returns the built-in docs agent, named "default": it answers
// from the document corpus with fixie_query_corpus and cites its sources.
func DefaultAgent() (*CodeShotAgent, error) {
	return NewCodeShotAgent(AgentConfig{
		Name:        DefaultAgentName,
		Description: "Answers questions about the indexed documentation, citing its sources.",
		BasePrompt: "I am a documentation assistant. I answer questions from the indexed documentation: " +
			"I search it with Func[fixie_query_corpus] and answer only from what it says, citing the numbered sources I use. " +
			"When the documents do not answer the question, I say so.",
		FewShots: SplitFewShots(`
Q: How do I install the command-line tool?
Ask Func[fixie_query_corpus]: How do I install the command-line tool?
Func[fixie_query_corpus] says: [1] Installation › With pip (https://docs.example.com/install#with-pip) Install the tool with pip install example-cli.
A: Install it with pip install example-cli [1].

Q: Which module reads configuration files?
Ask Func[fixie_query_corpus]: Which module reads configuration files?
Func[fixie_query_corpus] says: [1] configparser — Configuration file parser (https://docs.example.com/library/configparser) This module provides the ConfigParser class which implements a basic configuration language.
A: configparser: this module provides the ConfigParser class, which reads configuration files [1].
`),
	})
}
