package mcp

import (
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// Document URIs round-trip through parseURI and match the resource
// templates the SDK routes reads with, whatever the URL holds.
func TestURIsRoundTrip(t *testing.T) {
	docT := uritemplate.MustNew(documentTemplate)
	colT := uritemplate.MustNew(collectionTemplate)
	for _, c := range []struct{ coll, url string }{
		{"default", "http://127.0.0.1:8000/cli/lumen-server.html#options"},
		{"py docs", "https://docs.python.org/3/library/json.html?x=1&y=é#json.dumps"},
		{"a/b", "https://x/a%20b/c d"},
		{"x", "https://x/"},
	} {
		uri := DocumentURI(c.coll, c.url)
		if strings.ContainsAny(uri[len("kgagent://"):], "#?& ") || strings.Count(uri, "/") != 5 {
			t.Fatalf("%q not escaped: %s", c.url, uri)
		}
		coll, doc, anchor, isDoc, err := parseURI(uri)
		want, wantAnchor, _ := strings.Cut(c.url, "#")
		if err != nil || !isDoc || coll != c.coll || doc != want || anchor != wantAnchor {
			t.Fatalf("parse %s: %q %q %q %v %v", uri, coll, doc, anchor, isDoc, err)
		}
		if docT.Match(uri) == nil {
			t.Fatalf("document template does not match %s", uri)
		}
		curi := CollectionURI(c.coll)
		if colT.Match(curi) == nil || docT.Match(curi) != nil {
			t.Fatalf("templates on %s", curi)
		}
		if coll, _, _, isDoc, err := parseURI(curi); err != nil || isDoc || coll != c.coll {
			t.Fatalf("parse %s: %q %v %v", curi, coll, isDoc, err)
		}
	}
	for _, bad := range []string{"", "kgagent://collections/", "kgagent://other/x", "file:///etc/passwd",
		"kgagent://collections/a/b", "kgagent://collections/x/documents/", "kgagent://collections/x/documents/a/b", "kgagent://collections/%zz"} {
		if _, _, _, _, err := parseURI(bad); err == nil {
			t.Errorf("parseURI(%q) accepted", bad)
		}
	}
}

// FuzzParseURI: any string parses or fails cleanly, and what parses as a
// document re-encodes to a URI that parses the same.
func FuzzParseURI(f *testing.F) {
	f.Add(DocumentURI("default", "http://x/a.html#b"))
	f.Add(CollectionURI("c"))
	f.Add("kgagent://collections/%2F/documents/%23")
	f.Fuzz(func(t *testing.T, uri string) {
		coll, doc, anchor, isDoc, err := parseURI(uri)
		if err != nil || !isDoc {
			return
		}
		u := doc
		if anchor != "" || strings.HasSuffix(uri, "%23") {
			u += "#" + anchor
		}
		c2, d2, a2, isDoc2, err := parseURI(DocumentURI(coll, u))
		if err != nil || !isDoc2 || c2 != coll || d2 != doc || a2 != anchor {
			t.Fatalf("%q -> %q %q %q -> %q %q %q %v", uri, coll, doc, anchor, c2, d2, a2, err)
		}
	})
}

// Tool errors carry the stable code first in the text and in _meta.
func TestToolError(t *testing.T) {
	res := toolError(errNotFound("no collection \"x\""))
	if !res.IsError || res.Content[0].(*sdk.TextContent).Text != `NOT_FOUND: no collection "x"` {
		t.Fatalf("%+v", res)
	}
	if e, _ := res.Meta["kgagent/error"].(map[string]any); e["code"] != "NOT_FOUND" {
		t.Fatalf("meta %+v", res.Meta)
	}
}
