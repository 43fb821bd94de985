package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/graphrag"
)

// Tool inputs and outputs. Their JSON schemas are inferred from these types
// (jsonschema tags are the descriptions a model reads).

type askIn struct {
	Question   string `json:"question" jsonschema:"the question, in natural language, e.g. 'How do I restore a backup?'"`
	Collection string `json:"collection,omitempty" jsonschema:"collection (documentation set) to answer from; default: the server's default collection (see the collections tool)"`
	Agent      string `json:"agent,omitempty" jsonschema:"agent to ask; default: the agent whose examples are nearest to the question"`
}

type sourceOut struct {
	N           int      `json:"n" jsonschema:"the citation number [n] used in the answer"`
	URL         string   `json:"url" jsonschema:"URL of the cited page section"`
	Title       string   `json:"title" jsonschema:"page title"`
	HeadingPath []string `json:"heading_path,omitempty" jsonschema:"headings leading to the section"`
	Score       float64  `json:"score" jsonschema:"retrieval score, higher is better"`
	Resource    string   `json:"resource" jsonschema:"kgagent:// resource URI; read it for the stored text of the section"`
}

type askOut struct {
	Answer  string      `json:"answer" jsonschema:"the answer, citing sources as [n]"`
	Agent   string      `json:"agent,omitempty" jsonschema:"the agent that answered"`
	Sources []sourceOut `json:"sources" jsonschema:"the cited sources"`
}

type searchIn struct {
	Query      string `json:"query" jsonschema:"what to look for: words or a question"`
	Collection string `json:"collection,omitempty" jsonschema:"collection to search; default: the server's default collection"`
	K          int    `json:"k,omitempty" jsonschema:"how many sections to return, 1 to 100; default 10"`
	Mode       string `json:"mode,omitempty" jsonschema:"ranking: hybrid (default: keywords and meaning), keyword (BM25 only) or dense (embedding similarity only)"`
}

type hitOut struct {
	URL         string   `json:"url" jsonschema:"URL of the section (page URL with #anchor)"`
	Title       string   `json:"title" jsonschema:"page title"`
	HeadingPath []string `json:"heading_path,omitempty" jsonschema:"headings leading to the section"`
	Text        string   `json:"text" jsonschema:"the section's text"`
	Score       float64  `json:"score" jsonschema:"score, higher is better"`
	Resource    string   `json:"resource" jsonschema:"kgagent:// resource URI of the section"`
}

type searchOut struct {
	Hits []hitOut `json:"hits" jsonschema:"matching sections, best first"`
}

type graphIn struct {
	Entity     string `json:"entity,omitempty" jsonschema:"a thing's name: returns facts where it is the subject or the object (e.g. 'lumen backup')"`
	S          string `json:"s,omitempty" jsonschema:"subject name to match (pattern search, with p and o)"`
	P          string `json:"p,omitempty" jsonschema:"predicate to match, e.g. 'is_a' (the extractor's predicates: is_a, is_defined_as, defines, alias_of, has_section, mentions, links_to)"`
	O          string `json:"o,omitempty" jsonschema:"object name or literal to match"`
	Collection string `json:"collection,omitempty" jsonschema:"collection; default: the server's default collection"`
	Limit      int    `json:"limit,omitempty" jsonschema:"most facts returned, 1 to 1000; default 100"`
}

type tripleOut struct {
	S         string `json:"s" jsonschema:"subject"`
	P         string `json:"p" jsonschema:"predicate"`
	O         string `json:"o" jsonschema:"object (an entity name or a literal)"`
	Literal   bool   `json:"literal,omitempty" jsonschema:"true when o is a literal value rather than an entity"`
	SourceURL string `json:"source_url" jsonschema:"the page section the fact was extracted from"`
	Resource  string `json:"resource" jsonschema:"kgagent:// resource URI of that section"`
}

type graphOut struct {
	Triples []tripleOut `json:"triples" jsonschema:"matching facts with their source sections"`
}

type ingestIn struct {
	URLs       []string `json:"urls" jsonschema:"URLs to crawl; a trailing * crawls everything under that prefix, e.g. 'https://docs.example.com/*'"`
	Exclude    []string `json:"exclude,omitempty" jsonschema:"wildcard patterns of URLs to skip, e.g. '*/changelog/*'"`
	Collection string   `json:"collection,omitempty" jsonschema:"collection to ingest into; default: the server's default collection"`
	MaxPages   int      `json:"max_pages,omitempty" jsonschema:"most pages crawled, at least 1; default: the server's limit"`
	Wait       bool     `json:"wait,omitempty" jsonschema:"wait until the job is done, sending progress notifications; default false: return the job id at once"`
}

type jobIn struct {
	JobID string `json:"job_id" jsonschema:"the job id returned by ingest"`
}

type jobOut struct {
	JobID      string              `json:"job_id" jsonschema:"the job id"`
	State      string              `json:"state" jsonschema:"queued, running, succeeded, failed or canceled"`
	Collection string              `json:"collection" jsonschema:"the collection ingested into"`
	Counters   crawler.Counters    `json:"counters" jsonschema:"pages queued, done, indexed, unchanged, failed, skipped, removed from the collection, kept unconfirmed; chunks and triples written"`
	Errors     []crawler.PageError `json:"errors,omitempty" jsonschema:"pages that failed, with a stable code (first ones)"`
	Message    string              `json:"message,omitempty" jsonschema:"why the job failed, if it did"`
	KeptReason string              `json:"kept_reason,omitempty" jsonschema:"why the job kept counters.kept pages it did not confirm instead of removing them"`
}

type collectionsIn struct{}

type collectionOut struct {
	Name      string `json:"name" jsonschema:"collection name, to pass as collection"`
	Documents int    `json:"documents" jsonschema:"pages indexed"`
	Chunks    int    `json:"chunks" jsonschema:"sections indexed"`
	Resource  string `json:"resource" jsonschema:"kgagent:// resource URI listing its documents"`
}

type collectionsOut struct {
	Collections []collectionOut `json:"collections" jsonschema:"the collections this caller may use"`
	Default     string          `json:"default,omitempty" jsonschema:"the collection used when a call names none"`
}

// toolFunc is a tool's handler: the decoded, schema-checked input in, the
// structured output and any extra content blocks out.
type toolFunc[In, Out any] func(ctx context.Context, req *sdk.CallToolRequest, in In) (Out, []sdk.Content, error)

// addTool registers a tool whose schemas are inferred from In and Out
// (tweak adjusts the input schema). Arguments that are not JSON, fail the
// schema, or carry unknown fields are an INVALID_ARGUMENT tool error; a
// panic is an INTERNAL tool error; the session always lives on.
func addTool[In, Out any](s *Server, t *sdk.Tool, tweak func(*jsonschema.Schema), h toolFunc[In, Out]) {
	in, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp tool %s: input schema: %v", t.Name, err))
	}
	singleTypes(in)
	if tweak != nil {
		tweak(in)
	}
	resolved, err := in.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("mcp tool %s: input schema: %v", t.Name, err))
	}
	out, err := jsonschema.For[Out](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp tool %s: output schema: %v", t.Name, err))
	}
	singleTypes(out)
	t.InputSchema, t.OutputSchema = in, out
	s.srv.AddTool(t, func(ctx context.Context, req *sdk.CallToolRequest) (res *sdk.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				s.opts.Logger.ErrorContext(ctx, "panic in MCP tool", "tool", t.Name, "panic", p)
				res, err = toolError(kgagent.WrapError(kgagent.EINTERNAL, fmt.Errorf("panic: %v", p), "internal error")), nil
			}
		}()
		ctx, err = s.caller(ctx, req.Extra)
		if err != nil {
			return toolError(err), nil
		}
		var args In
		if err := decodeArgs(req.Params.Arguments, resolved, &args); err != nil {
			return toolError(err), nil
		}
		o, content, err := h(ctx, req, args)
		if err != nil {
			return toolError(err), nil
		}
		if content == nil {
			content = []sdk.Content{&sdk.TextContent{Text: textOf(o)}}
		}
		return &sdk.CallToolResult{Content: content, StructuredContent: o}, nil
	})
}

// singleTypes gives every property of s one type: a Go slice's inferred
// schema is ["null","array"], but kgagent never sends null for a list (it
// sends [] or leaves the property out) and refuses null for one, and
// clients that map schemas onto a one-type dialect (Gemini's function
// declarations, the MCP Inspector's --strict check) want a single type.
func singleTypes(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && slices.Contains(s.Types, "null") {
		t := s.Types[0]
		if t == "null" {
			t = s.Types[1]
		}
		s.Type, s.Types = t, nil
	}
	for _, p := range s.Properties {
		singleTypes(p)
	}
	singleTypes(s.Items)
}

func (s *Server) addTools() {
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}
	addTool(s, &sdk.Tool{
		Name:  "ask",
		Title: "Ask the documentation",
		Description: "Answer a question from the indexed documentation with the kgagent agent, which searches the " +
			"sections and the fact graph and writes a short answer citing its sources as [n]. Returns the answer and the " +
			"sources as kgagent:// resource links (read one for the section's full text). Sends progress notifications " +
			"with the agent's thoughts and observations while it works when the call carries a progress token.",
		Annotations: readOnly,
	}, func(sc *jsonschema.Schema) {
		sc.Properties["question"].MinLength = ptr(1)
		sc.Properties["question"].MaxLength = ptr(kgagent.MaxQuestionBytes)
	}, s.ask)
	addTool(s, &sdk.Tool{
		Name:  "search",
		Title: "Search the documentation",
		Description: "Search the indexed documentation for the sections that best match a query (hybrid keyword and " +
			"semantic ranking by default). Returns each section's URL, title, heading path, text and score, best first, " +
			"with kgagent:// resource links.",
		Annotations: readOnly,
	}, func(sc *jsonschema.Schema) {
		sc.Properties["query"].MinLength = ptr(1)
		sc.Properties["query"].MaxLength = ptr(kgagent.MaxQuestionBytes)
		sc.Properties["k"].Minimum = ptr(1.0)
		sc.Properties["k"].Maximum = ptr(float64(corpus.MaxK))
		sc.Properties["k"].Default = json.RawMessage(strconv.Itoa(defaultK))
		sc.Properties["mode"].Enum = []any{"hybrid", "keyword", "dense"}
	}, s.search)
	addTool(s, &sdk.Tool{
		Name:  "graph",
		Title: "Look up facts in the knowledge graph",
		Description: "Look up (subject, predicate, object) facts extracted from the documentation, each with the page " +
			"section it came from. Give entity for every fact about a thing, or any of s, p, o as a pattern " +
			"(names are matched case- and punctuation-insensitively).",
		Annotations: readOnly,
	}, func(sc *jsonschema.Schema) {
		sc.Properties["limit"].Minimum = ptr(1.0)
		sc.Properties["limit"].Maximum = ptr(float64(maxGraphLimit))
		sc.Properties["limit"].Default = json.RawMessage(strconv.Itoa(defaultGraphLimit))
	}, s.graph)
	addTool(s, &sdk.Tool{
		Name:  "ingest",
		Title: "Crawl a site into a collection",
		Description: "Crawl and index documentation pages into a collection (needs the ingest scope). Returns the job " +
			"id at once; with wait=true it returns when the job is done, sending progress notifications (pages done of " +
			"pages queued) meanwhile. A second run re-indexes only pages that changed. It can remove pages from the " +
			"collection: a page that answers 404 or 410 is removed, and so is a page under the given urls that a complete " +
			"crawl (no page failed, not cut short by max_pages) of the same urls, exclude and depth as an earlier complete " +
			"crawl no longer finds (excluded, noindex, redirected, unreachable). Any other run removes nothing else, and " +
			"pages outside the given urls are never removed; the result counts the pages kept (counters.kept) and says why (kept_reason).",
		Annotations: &sdk.ToolAnnotations{OpenWorldHint: ptr(true), IdempotentHint: true, DestructiveHint: ptr(true)},
	}, func(sc *jsonschema.Schema) {
		sc.Properties["urls"].MinItems = ptr(1)
		sc.Properties["max_pages"].Minimum = ptr(1.0)
	}, s.ingest)
	addTool(s, &sdk.Tool{
		Name:        "ingest_status",
		Title:       "Status of an ingestion job",
		Description: "Return the state and counters of an ingestion job started by ingest (needs the ingest scope).",
		Annotations: readOnly,
	}, nil, s.ingestStatus)
	addTool(s, &sdk.Tool{
		Name:        "collections",
		Title:       "List the collections",
		Description: "List the indexed collections (documentation sets) this caller may use, with their page and section counts and the default collection.",
		Annotations: readOnly,
	}, nil, s.collections)
}

// Defaults and bounds of the search and graph tools (their schemas say
// them; an absent argument takes the default, one out of bounds is refused).
const (
	defaultK          = corpus.DefaultK
	defaultGraphLimit = graphrag.DefaultFindLimit
	maxGraphLimit     = graphrag.MaxFindLimit
)

func ptr[T any](v T) *T { return &v }

// progress sends numbered progress notifications for one call when the
// client asked for them (a progress token); safe for concurrent use.
type progress struct {
	mu    sync.Mutex
	req   *sdk.CallToolRequest
	token any
	n     float64
	log   *slog.Logger
}

func (s *Server) newProgress(req *sdk.CallToolRequest) *progress {
	return &progress{req: req, token: req.Params.GetProgressToken(), log: s.opts.Logger}
}

// send reports progress p (it must grow; p <= 0 means "one more step") of
// total (0: unknown) with a message.
func (pr *progress) send(ctx context.Context, p, total float64, msg string) {
	if pr == nil || pr.token == nil || pr.req.Session == nil {
		return
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if p <= 0 {
		p = pr.n + 1
	}
	if p <= pr.n {
		return
	}
	pr.n = p
	if err := pr.req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: pr.token, Progress: p, Total: total, Message: msg}); err != nil {
		pr.log.WarnContext(ctx, "MCP progress notification not sent", "err", err)
	}
}

// eventProgress is the progress message of an agent event: thoughts
// (routing and actions included) and observations; "" for the rest.
func eventProgress(ev kgagent.Event) string {
	switch ev.Kind {
	case kgagent.EventThought:
		return "thought: " + oneLine(ev.Text, 500)
	case kgagent.EventRoute:
		return "thought: routed to agent " + ev.Agent
	case kgagent.EventAction:
		if ev.Func != "" && !strings.HasPrefix(ev.Text, "Ask ") {
			return fmt.Sprintf("thought: Ask Func[%s]: %s", ev.Func, oneLine(ev.Text, 400))
		}
		return "thought: " + oneLine(ev.Text, 500)
	case kgagent.EventObservation:
		return "observation: " + oneLine(ev.Text, 500)
	}
	return ""
}

func (s *Server) ask(ctx context.Context, req *sdk.CallToolRequest, in askIn) (askOut, []sdk.Content, error) {
	col, err := s.b.Collection(ctx, in.Collection)
	if err != nil {
		return askOut{}, nil, err
	}
	pr := s.newProgress(req)
	ans, err := s.b.Ask(ctx, in.Question, col, in.Agent, func(ev kgagent.Event) {
		if ev.Delta {
			return
		}
		if msg := eventProgress(ev); msg != "" {
			pr.send(ctx, 0, 0, msg)
		}
	})
	if err != nil {
		return askOut{}, nil, err
	}
	if col == "" {
		col = s.opts.DefaultCollection
	}
	out := askOut{Answer: ans.Answer, Agent: ans.Agent, Sources: []sourceOut{}}
	var text strings.Builder
	text.WriteString(ans.Answer)
	content := []sdk.Content{nil}
	for i, src := range ans.Sources {
		so := sourceOut{N: i + 1, URL: src.URL, Title: src.Title, HeadingPath: src.HeadingPath, Score: src.Score, Resource: DocumentURI(col, src.URL)}
		out.Sources = append(out.Sources, so)
		if i == 0 {
			text.WriteString("\n\nSources:")
		}
		fmt.Fprintf(&text, "\n[%d] %s (%s)", so.N, sectionTitle(src.Title, src.HeadingPath), src.URL)
		content = append(content, &sdk.ResourceLink{URI: so.Resource, Name: src.URL, Title: sectionTitle(src.Title, src.HeadingPath),
			Description: fmt.Sprintf("source [%d] of the answer", so.N), MIMEType: "text/markdown"})
	}
	content[0] = &sdk.TextContent{Text: text.String()}
	return out, content, nil
}

func sectionTitle(title string, headings []string) string {
	parts := []string{}
	if title != "" {
		parts = append(parts, title)
	}
	for _, h := range headings {
		if h != "" && h != title {
			parts = append(parts, h)
		}
	}
	return strings.Join(parts, " › ")
}

func (s *Server) search(ctx context.Context, req *sdk.CallToolRequest, in searchIn) (searchOut, []sdk.Content, error) {
	col, err := s.collection(ctx, in.Collection)
	if err != nil {
		return searchOut{}, nil, err
	}
	k := in.K
	if k == 0 { // absent
		k = defaultK
	}
	hits, err := s.b.Search(ctx, in.Query, col, k, corpus.Mode(in.Mode))
	if err != nil {
		return searchOut{}, nil, err
	}
	out := searchOut{Hits: []hitOut{}}
	var text strings.Builder
	fmt.Fprintf(&text, "%d sections for %q in %s:", len(hits), in.Query, col)
	links := []sdk.Content{}
	for i, h := range hits {
		c := h.Collection
		if c == "" {
			c = col
		}
		ho := hitOut{URL: h.URL, Title: h.Title, HeadingPath: h.HeadingPath, Text: h.Text, Score: h.Score, Resource: DocumentURI(c, h.URL)}
		out.Hits = append(out.Hits, ho)
		fmt.Fprintf(&text, "\n\n[%d] %s (%s) score %.3f\n%s", i+1, sectionTitle(h.Title, h.HeadingPath), h.URL, h.Score, oneLine(h.Text, 600))
		links = append(links, &sdk.ResourceLink{URI: ho.Resource, Name: h.URL, Title: sectionTitle(h.Title, h.HeadingPath), MIMEType: "text/markdown"})
	}
	return out, append([]sdk.Content{&sdk.TextContent{Text: text.String()}}, links...), nil
}

func (s *Server) graph(ctx context.Context, req *sdk.CallToolRequest, in graphIn) (graphOut, []sdk.Content, error) {
	if strings.TrimSpace(in.Entity+in.S+in.P+in.O) == "" {
		return graphOut{}, nil, kgagent.Errorf(kgagent.EINVALID, "give entity, or at least one of s, p and o")
	}
	col, err := s.collection(ctx, in.Collection)
	if err != nil {
		return graphOut{}, nil, err
	}
	limit := in.Limit
	if limit == 0 { // absent
		limit = defaultGraphLimit
	}
	var ts []kgagent.Triple
	if in.Entity != "" {
		// Facts about the entity: as subject, then as object.
		seen := map[kgagent.Triple]bool{}
		for _, pat := range []graphrag.Pattern{{S: in.Entity, P: in.P}, {O: in.Entity, P: in.P}} {
			pat.Collection, pat.Limit = col, limit
			got, err := s.b.Triples(ctx, pat)
			if err != nil {
				return graphOut{}, nil, err
			}
			for _, t := range got {
				if !seen[t] && len(ts) < limit {
					seen[t] = true
					ts = append(ts, t)
				}
			}
		}
	} else {
		ts, err = s.b.Triples(ctx, graphrag.Pattern{Collection: col, S: in.S, P: in.P, O: in.O, Limit: limit})
		if err != nil {
			return graphOut{}, nil, err
		}
	}
	out := graphOut{Triples: []tripleOut{}}
	var text strings.Builder
	fmt.Fprintf(&text, "%d facts:", len(ts))
	for _, t := range ts {
		o, lit := t.Object.Name, false
		if t.Literal != "" {
			o, lit = t.Literal, true
		}
		c := t.Collection
		if c == "" {
			c = col
		}
		to := tripleOut{S: t.Subject.Name, P: t.Predicate, O: o, Literal: lit, SourceURL: t.SourceURL, Resource: DocumentURI(c, t.SourceURL)}
		out.Triples = append(out.Triples, to)
		fmt.Fprintf(&text, "\n(%s) —%s→ (%s)   source: %s", to.S, to.P, to.O, to.SourceURL)
	}
	return out, []sdk.Content{&sdk.TextContent{Text: text.String()}}, nil
}

func jobOf(st crawler.JobStatus) jobOut {
	return jobOut{JobID: st.ID, State: string(st.State), Collection: st.Spec.Collection, Counters: st.Counters, Errors: st.Errors, Message: st.Message, KeptReason: st.KeptReason}
}

func finished(st crawler.JobState) bool {
	return st == crawler.JobSucceeded || st == crawler.JobFailed || st == crawler.JobCanceled
}

func (s *Server) ingest(ctx context.Context, req *sdk.CallToolRequest, in ingestIn) (jobOut, []sdk.Content, error) {
	col, err := s.collection(ctx, in.Collection)
	if err != nil {
		return jobOut{}, nil, err
	}
	st, err := s.b.Ingest(ctx, crawler.Spec{Collection: col, URLs: in.URLs, Exclude: in.Exclude, MaxPages: in.MaxPages})
	if err != nil {
		return jobOut{}, nil, err
	}
	if !in.Wait {
		o := jobOf(st)
		return o, []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("ingestion job %s %s; call ingest_status with job_id %q for its progress\n%s", st.ID, st.State, st.ID, textOf(o))}}, nil
	}
	pr := s.newProgress(req)
	tick := time.NewTicker(s.opts.IngestPoll)
	defer tick.Stop()
	for !finished(st.State) {
		select {
		case <-ctx.Done():
			return jobOut{}, nil, kgagent.WrapError(kgagent.ECANCELED, ctx.Err(), "stopped waiting for job %s (it goes on; see ingest_status)", st.ID)
		case <-tick.C:
		}
		if st, err = s.b.Job(ctx, st.ID); err != nil {
			return jobOut{}, nil, err
		}
		c := st.Counters
		pr.send(ctx, float64(c.Done), float64(max(c.Queued, c.Done)), fmt.Sprintf("%s: %d of %d pages done (indexed %d, unchanged %d, failed %d)", st.State, c.Done, c.Queued, c.Indexed, c.Unchanged, c.Failed))
	}
	o := jobOf(st)
	return o, []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("ingestion job %s %s\n%s", st.ID, st.State, textOf(o))}}, nil
}

func (s *Server) ingestStatus(ctx context.Context, req *sdk.CallToolRequest, in jobIn) (jobOut, []sdk.Content, error) {
	st, err := s.b.Job(ctx, in.JobID)
	if err != nil {
		return jobOut{}, nil, err
	}
	return jobOf(st), nil, nil
}

func (s *Server) collections(ctx context.Context, req *sdk.CallToolRequest, in collectionsIn) (collectionsOut, []sdk.Content, error) {
	cs, err := s.b.Collections(ctx)
	if err != nil {
		return collectionsOut{}, nil, err
	}
	def, err := s.collection(ctx, "")
	if err != nil {
		return collectionsOut{}, nil, err
	}
	out := collectionsOut{Collections: []collectionOut{}, Default: def}
	for _, c := range cs {
		out.Collections = append(out.Collections, collectionOut{Name: c.Name, Documents: c.Documents, Chunks: c.Chunks, Resource: CollectionURI(c.Name)})
	}
	return out, nil, nil
}
