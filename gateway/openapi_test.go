package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
)

// openAPIPath turns a ServeMux pattern path into the OpenAPI path.
func openAPIPath(p string) string {
	p = strings.TrimSuffix(p, "{$}")
	if p == "/static/" {
		return "/static/{path}"
	}
	return p
}

// TestOpenAPICoversRoutes checks that every registered route is in the
// OpenAPI document and every operation of the document is a route.
func TestOpenAPICoversRoutes(t *testing.T) {
	f := newFixture(t, Config{})
	resp, err := http.Get(f.ts.URL + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var doc struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("not an OpenAPI 3 document: %v", err)
	}
	routes := map[string]bool{}
	for _, r := range f.srv.Routes() {
		if r.Method == "" {
			continue // the /api/ catch-all that answers 404
		}
		key := strings.ToLower(r.Method) + " " + openAPIPath(r.Path)
		routes[key] = true
		p, ok := doc.Paths[openAPIPath(r.Path)]
		if !ok {
			t.Errorf("route %s %s: path missing from openapi.json", r.Method, r.Path)
			continue
		}
		op, ok := p[strings.ToLower(r.Method)]
		if !ok {
			t.Errorf("route %s %s: method missing from openapi.json", r.Method, r.Path)
			continue
		}
		if _, ok := op["responses"]; !ok {
			t.Errorf("route %s %s: no responses documented", r.Method, r.Path)
		}
	}
	var extra []string
	for path, ops := range doc.Paths {
		for method := range ops {
			if method == "parameters" {
				continue
			}
			if !routes[method+" "+path] {
				extra = append(extra, method+" "+path)
			}
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Errorf("documented but not served: %v", extra)
	}
	// Every $ref resolves.
	var raw map[string]any
	_ = json.Unmarshal(data, &raw)
	schemas := raw["components"].(map[string]any)["schemas"].(map[string]any)
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				name := strings.TrimPrefix(ref, "#/components/schemas/")
				if _, ok := schemas[name]; !ok {
					t.Errorf("dangling $ref %s", ref)
				}
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(raw)
}
