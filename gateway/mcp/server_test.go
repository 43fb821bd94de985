package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/corpus"
	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/graphrag"
)

// fakeBackend serves collections of numbered pages; triples name "Lumen"
// as subject in one and object in another; Search panics on "boom".
type fakeBackend struct {
	docs map[string][]corpus.DocumentInfo // by collection, sorted by URL

	mu             sync.Mutex
	lastK, lastLim int // the k of the last search, the limit of the last triples call
}

func newFakeBackend(pages map[string]int) *fakeBackend {
	b := &fakeBackend{docs: map[string][]corpus.DocumentInfo{}}
	for c, n := range pages {
		b.docs[c] = []corpus.DocumentInfo{}
		for i := 0; i < n; i++ {
			b.docs[c] = append(b.docs[c], corpus.DocumentInfo{URL: fmt.Sprintf("https://%s.example/p%04d.html", c, i), Title: fmt.Sprintf("Page %d", i), Chunks: 2})
		}
	}
	return b
}

func (b *fakeBackend) Ask(ctx context.Context, q, col, ag string, emit agent.Emit) (kgagent.Answer, error) {
	return kgagent.Answer{Answer: "42 [1]", Sources: []kgagent.Source{{URL: "https://a.example/p0000.html#s", Title: "Page 0"}}}, nil
}

func (b *fakeBackend) Search(ctx context.Context, q, col string, k int, m corpus.Mode) ([]corpus.Hit, error) {
	b.mu.Lock()
	b.lastK = k
	b.mu.Unlock()
	if q == "boom" {
		panic("backend bug")
	}
	return nil, nil
}

func (b *fakeBackend) Triples(ctx context.Context, p graphrag.Pattern) ([]kgagent.Triple, error) {
	b.mu.Lock()
	b.lastLim = p.Limit
	b.mu.Unlock()
	both := kgagent.Triple{Collection: p.Collection, Subject: kgagent.Entity{Name: "Lumen"}, Predicate: "is", Object: kgagent.Entity{Name: "Lumen"}, SourceURL: "https://a.example/p0000.html#s"}
	switch {
	case p.S == "Lumen":
		return []kgagent.Triple{both, {Collection: p.Collection, Subject: kgagent.Entity{Name: "Lumen"}, Predicate: "has", Literal: "port 8086", SourceURL: "https://a.example/p0001.html#a"}}, nil
	case p.O == "Lumen":
		return []kgagent.Triple{both, {Collection: p.Collection, Subject: kgagent.Entity{Name: "lumen server"}, Predicate: "runs", Object: kgagent.Entity{Name: "Lumen"}, SourceURL: "https://a.example/p0002.html#b"}}, nil
	}
	return nil, nil
}

func (b *fakeBackend) Ingest(ctx context.Context, spec crawler.Spec) (crawler.JobStatus, error) {
	return crawler.JobStatus{}, kgagent.Errorf(kgagent.EFORBIDDEN, "no")
}

func (b *fakeBackend) Job(ctx context.Context, id string) (crawler.JobStatus, error) {
	return crawler.JobStatus{}, kgagent.Errorf(kgagent.ENOTFOUND, "no job %q", id)
}

func (b *fakeBackend) Collections(ctx context.Context) ([]corpus.CollectionInfo, error) {
	var out []corpus.CollectionInfo
	for c, ds := range b.docs {
		out = append(out, corpus.CollectionInfo{Name: c, Documents: len(ds), Chunks: 2 * len(ds)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (b *fakeBackend) Collection(ctx context.Context, name string) (string, error) { return name, nil }

func (b *fakeBackend) Documents(ctx context.Context, col, after string, limit int) ([]corpus.DocumentInfo, error) {
	var out []corpus.DocumentInfo
	for _, d := range b.docs[col] {
		if d.URL > after && len(out) < limit {
			out = append(out, d)
		}
	}
	return out, nil
}

func (b *fakeBackend) DocumentChunks(ctx context.Context, col, docURL string) ([]kgagent.Chunk, error) {
	return nil, kgagent.Errorf(kgagent.ENOTFOUND, "no document")
}

func connect(t *testing.T, s *Server) *sdk.ClientSession {
	t.Helper()
	st, ct := sdk.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := s.SDK().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// resources/list pages through every collection and then its pages, in
// pages of listPage with an opaque cursor; nothing is listed twice or
// skipped, and a bad cursor is invalid params.
func TestListResourcesPaging(t *testing.T) {
	for _, sizes := range []map[string]int{{"a": 450, "b": 3, "c": 0}, {"a": 199, "b": 0, "c": 5}, {"a": 198, "b": 1, "c": 200}, {}} {
		t.Run(fmt.Sprint(sizes), func(t *testing.T) { listAll(t, sizes) })
	}
	cs := connect(t, New(newFakeBackend(nil), Options{}))
	_, err := cs.ListResources(context.Background(), &sdk.ListResourcesParams{Cursor: "!!"})
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("bad cursor: %v", err)
	}
}

func listAll(t *testing.T, sizes map[string]int) {
	b := newFakeBackend(sizes)
	cs := connect(t, New(b, Options{}))
	ctx := context.Background()
	var uris []string
	cursor := ""
	pages := 0
	for {
		res, err := cs.ListResources(ctx, &sdk.ListResourcesParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(res.Resources) > listPage {
			t.Fatalf("page of %d", len(res.Resources))
		}
		for _, r := range res.Resources {
			uris = append(uris, r.URI)
		}
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	var want []string
	for _, c := range []string{"a", "b", "c"} {
		if _, ok := b.docs[c]; !ok {
			continue
		}
		want = append(want, CollectionURI(c))
		for _, d := range b.docs[c] {
			want = append(want, DocumentURI(c, d.URL))
		}
	}
	if strings.Join(uris, "\n") != strings.Join(want, "\n") {
		t.Fatalf("listed %d resources in %d pages, want %d in order", len(uris), pages, len(want))
	}
	if least := max(1, (len(want)+listPage-1)/listPage); pages > least+1 {
		t.Fatalf("%d pages for %d resources", pages, len(want))
	}
}

// A panicking backend is an INTERNAL tool error and the session goes on;
// graph by entity merges subject and object facts without duplicates.
func TestToolsOnFakeBackend(t *testing.T) {
	cs := connect(t, New(newFakeBackend(map[string]int{"a": 1}), Options{DefaultCollection: "a"}))
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": "boom"}})
	if err != nil || !res.IsError || !strings.HasPrefix(res.Content[0].(*sdk.TextContent).Text, "INTERNAL: ") {
		t.Fatalf("panic: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "graph", Arguments: map[string]any{"entity": "Lumen"}})
	if err != nil || res.IsError {
		t.Fatalf("graph: %v %+v", err, res)
	}
	out := res.StructuredContent.(map[string]any)["triples"].([]any)
	if len(out) != 3 {
		t.Fatalf("graph by entity: %d facts, want 3 (one shared): %v", len(out), out)
	}
	lit := out[1].(map[string]any)
	if lit["o"] != "port 8086" || lit["literal"] != true || !strings.HasPrefix(lit["resource"].(string), "kgagent://collections/a/documents/") {
		t.Fatalf("literal fact: %v", lit)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "ask", Arguments: map[string]any{"question": "q"}})
	if err != nil || res.IsError {
		t.Fatalf("ask: %v %+v", err, res)
	}
	if l, ok := res.Content[1].(*sdk.ResourceLink); !ok || l.URI != DocumentURI("a", "https://a.example/p0000.html#s") {
		t.Fatalf("ask's resource link: %+v", res.Content)
	}
}

// A server that authenticates from HTTP headers refuses calls that came
// without them (fail closed), as tool errors and resource errors.
func TestAuthenticateFailsClosed(t *testing.T) {
	called := false
	s := New(newFakeBackend(map[string]int{"a": 1}), Options{Authenticate: func(ctx context.Context, h http.Header) (context.Context, error) {
		called = true
		return ctx, nil
	}})
	cs := connect(t, s)
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "collections", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.HasPrefix(res.Content[0].(*sdk.TextContent).Text, "UNAUTHENTICATED: ") || called {
		t.Fatalf("call without headers: %v %+v (authenticate called %v)", err, res, called)
	}
	if _, err := cs.ListResources(ctx, nil); err == nil {
		t.Fatal("resources/list without headers succeeded")
	}
	_, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: CollectionURI("a")})
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != -32000 || !strings.Contains(string(rpc.Data), `"code":"UNAUTHENTICATED"`) {
		t.Fatalf("resources/read without headers: %v", err)
	}
}

// FuzzToolCall: whatever JSON arguments any tool gets, the call answers (a
// result or a tool error, never a dropped session), and the session still
// answers the next call.
func FuzzToolCall(f *testing.F) {
	for _, seed := range []struct{ tool, args string }{
		{"search", `{"query":"port","k":3}`}, {"search", `{"query":"boom"}`}, {"search", `{"k":-1}`},
		{"graph", `{"entity":"Lumen","limit":1000}`}, {"graph", `{"s":1}`}, {"ask", `{"question":""}`},
		{"ingest", `{"urls":["x"],"wait":true}`}, {"ingest_status", `{"job_id":"x"}`}, {"collections", `[]`},
		{"nope", `{}`}, {"ask", `{"question":"q","agent":null}`}, {"search", `null`},
	} {
		f.Add(seed.tool, seed.args)
	}
	s := New(newFakeBackend(map[string]int{"a": 2}), Options{DefaultCollection: "a"})
	f.Fuzz(func(t *testing.T, tool, args string) {
		if !json.Valid([]byte(args)) {
			return
		}
		cs := connect(t, s)
		ctx := context.Background()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
		var rpc *jsonrpc.Error
		if err != nil && !errors.As(err, &rpc) {
			t.Fatalf("%s %s: transport failure %v", tool, args, err)
		}
		if res != nil && res.IsError {
			if text := res.Content[0].(*sdk.TextContent).Text; !strings.Contains(text, ": ") || strings.ToUpper(text[:strings.Index(text, ":")]) != text[:strings.Index(text, ":")] {
				t.Fatalf("%s %s: tool error without a code: %q", tool, args, text)
			}
		}
		if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "collections", Arguments: map[string]any{}}); err != nil {
			t.Fatalf("session dead after %s %s: %v", tool, args, err)
		}
	})
}
