package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// listPage is how many resources one resources/list page holds.
const listPage = 200

// maxListedDocuments bounds the documents a collection resource lists.
const maxListedDocuments = 1000

func (s *Server) addResources() {
	s.srv.AddResourceTemplate(&sdk.ResourceTemplate{
		URITemplate: collectionTemplate, Name: "collection", Title: "A collection",
		Description: "A collection (documentation set): its page and section counts and its documents' resource URIs.",
		MIMEType:    "text/markdown",
	}, s.readResource)
	s.srv.AddResourceTemplate(&sdk.ResourceTemplate{
		URITemplate: documentTemplate, Name: "document", Title: "A page or section",
		Description: "The stored text of an indexed page, or of one section when the URL carries its #anchor " +
			"(the URL percent-encoded, as in the resource links of ask and search).",
		MIMEType: "text/markdown",
	}, s.readResource)
	s.srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			lr, ok := req.(*sdk.ListResourcesRequest)
			if method != "resources/list" || !ok {
				return next(ctx, method, req)
			}
			cctx, err := s.caller(ctx, req.GetExtra())
			if err != nil {
				return nil, rpcError(err)
			}
			// The SDK's own resources/list (of no static resources) builds
			// the result, so its fields — cacheScope, ttlMs, resultType —
			// are what the SDK sends for the session's protocol version;
			// kgagent's cursor is its own, so the SDK sees none.
			cursor, sdkReq := "", *lr
			if lr.Params != nil {
				cursor = lr.Params.Cursor
				p := *lr.Params
				p.Cursor = ""
				sdkReq.Params = &p
			}
			res, err := next(ctx, method, &sdkReq)
			if err != nil {
				return nil, err
			}
			out, ok := res.(*sdk.ListResourcesResult)
			if !ok {
				return nil, rpcError(kgagent.Errorf(kgagent.EINTERNAL, "resources/list: the SDK returned %T", res))
			}
			page, err := s.listResources(cctx, cursor)
			if err != nil {
				return nil, err
			}
			out.Resources, out.NextCursor = page.Resources, page.NextCursor
			return out, nil
		}
	})
}

// listCursor is where a resources/list page starts: the collection, and the
// last document URL listed before (empty: the collection itself first).
type listCursor struct {
	Collection string `json:"c"`
	After      string `json:"a,omitempty"`
	Started    bool   `json:"s,omitempty"` // the collection's own resource was listed
}

// listResources lists every collection the caller may use, each followed by
// its documents, in pages of listPage.
func (s *Server) listResources(ctx context.Context, cursor string) (*sdk.ListResourcesResult, error) {
	var cur listCursor
	if cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil || json.Unmarshal(b, &cur) != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
		}
	}
	cs, err := s.b.Collections(ctx)
	if err != nil {
		return nil, rpcError(err)
	}
	res := &sdk.ListResourcesResult{Resources: []*sdk.Resource{}}
	for _, c := range cs {
		if c.Name < cur.Collection {
			continue
		}
		if c.Name != cur.Collection {
			cur = listCursor{Collection: c.Name}
		}
		if !cur.Started {
			res.Resources = append(res.Resources, &sdk.Resource{URI: CollectionURI(c.Name), Name: c.Name, Title: "collection " + c.Name,
				Description: fmt.Sprintf("%d pages, %d sections", c.Documents, c.Chunks), MIMEType: "text/markdown"})
			cur.Started = true
		}
		for len(res.Resources) < listPage {
			ds, err := s.b.Documents(ctx, c.Name, cur.After, listPage-len(res.Resources))
			if kgagent.ErrorCode(err) == kgagent.EUNAVAILABLE {
				break // an index that cannot list documents: collections only
			}
			if err != nil {
				return nil, rpcError(err)
			}
			for _, d := range ds {
				res.Resources = append(res.Resources, &sdk.Resource{URI: DocumentURI(c.Name, d.URL), Name: d.URL, Title: d.Title,
					Description: fmt.Sprintf("page of %s, %d sections", c.Name, d.Chunks), MIMEType: "text/markdown"})
				cur.After = d.URL
			}
			if len(ds) == 0 {
				break
			}
		}
		if len(res.Resources) >= listPage {
			b, _ := json.Marshal(cur)
			res.NextCursor = base64.RawURLEncoding.EncodeToString(b)
			return res, nil
		}
		cur = listCursor{}
	}
	return res, nil
}

// readResource returns a collection's summary or a page's (or section's)
// stored text as Markdown.
func (s *Server) readResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	ctx, err := s.caller(ctx, req.Extra)
	if err != nil {
		return nil, rpcError(err)
	}
	col, docURL, anchor, isDoc, err := parseURI(uri)
	if err != nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	var text string
	if isDoc {
		text, err = s.documentText(ctx, col, docURL, anchor)
	} else {
		text, err = s.collectionText(ctx, col)
	}
	if kgagent.ErrorCode(err) == kgagent.ENOTFOUND {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, rpcError(err)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: text}}}, nil
}

func (s *Server) collectionText(ctx context.Context, col string) (string, error) {
	cs, err := s.b.Collections(ctx)
	if err != nil {
		return "", err
	}
	var info *corpus.CollectionInfo
	for i := range cs {
		if cs[i].Name == col {
			info = &cs[i]
		}
	}
	if info == nil {
		return "", kgagent.Errorf(kgagent.ENOTFOUND, "no collection %q", col)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Collection %s\n\n%d pages, %d sections.\n", col, info.Documents, info.Chunks)
	ds, err := s.b.Documents(ctx, col, "", maxListedDocuments)
	if kgagent.ErrorCode(err) == kgagent.EUNAVAILABLE {
		return b.String(), nil
	}
	if err != nil {
		return "", err
	}
	b.WriteString("\n## Pages\n\n")
	for _, d := range ds {
		fmt.Fprintf(&b, "- [%s](%s) — %s\n", mdEscape(d.Title), DocumentURI(col, d.URL), d.URL)
	}
	if len(ds) == maxListedDocuments {
		fmt.Fprintf(&b, "\n(The first %d pages; resources/list pages through all of them.)\n", maxListedDocuments)
	}
	return b.String(), nil
}

// documentText renders a page's chunks, or those of one section (anchor),
// as Markdown with their heading paths.
func (s *Server) documentText(ctx context.Context, col, docURL, anchor string) (string, error) {
	chunks, err := s.b.DocumentChunks(ctx, col, docURL)
	if err != nil {
		return "", err
	}
	if anchor != "" {
		var sec []kgagent.Chunk
		for _, c := range chunks {
			if c.Anchor == anchor {
				sec = append(sec, c)
			}
		}
		if len(sec) == 0 {
			return "", kgagent.Errorf(kgagent.ENOTFOUND, "no section #%s in %s", anchor, docURL)
		}
		chunks = sec
	}
	var b strings.Builder
	u := docURL
	if anchor != "" {
		u += "#" + anchor
	}
	fmt.Fprintf(&b, "# %s\n\nSource: %s\n", mdEscape(chunks[0].Title), u)
	last := ""
	for _, c := range chunks {
		if h := sectionTitle("", c.HeadingPath); h != "" && h != last && h != c.Title {
			fmt.Fprintf(&b, "\n## %s\n", h)
			last = h
		}
		fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(c.Text))
	}
	return b.String(), nil
}

func mdEscape(s string) string {
	return strings.NewReplacer("[", `\[`, "]", `\]`, "\n", " ").Replace(s)
}

// rpcError is the JSON-RPC error for a failed resource call: invalid
// params for EINVALID, else a server error (-32000) whose data carries
// kgagent's code and message.
func rpcError(err error) error {
	code := kgagent.ErrorCode(err)
	data, _ := json.Marshal(map[string]any{"code": code, "message": kgagent.ErrorMessage(err)})
	rc := int64(-32000)
	if code == kgagent.EINVALID {
		rc = jsonrpc.CodeInvalidParams
	}
	return &jsonrpc.Error{Code: rc, Message: code + ": " + kgagent.ErrorMessage(err), Data: data}
}
