package gateway

import (
	_ "embed"
	"encoding/json"
	"net/http"
)

//go:embed openapi.json
var openAPIDoc []byte

// openAPIFor returns the document a server serves: as it is when auth is
// on; without security requirements when it is off (an open server asks
// for no credentials and ignores any given, so the document says so).
func openAPIFor(cfg Config) []byte {
	if cfg.AuthEnabled() {
		return openAPIDoc
	}
	var doc map[string]any
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		return openAPIDoc
	}
	delete(doc, "security")
	if paths, ok := doc["paths"].(map[string]any); ok {
		for _, item := range paths {
			ops, _ := item.(map[string]any)
			for _, op := range ops {
				if o, ok := op.(map[string]any); ok {
					delete(o, "security")
				}
			}
		}
	}
	if info, ok := doc["info"].(map[string]any); ok {
		info["description"] = "This server runs without credentials (open mode, loopback only): no security requirements apply. " + str(info["description"])
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return openAPIDoc
	}
	return b
}

func str(v any) string { s, _ := v.(string); return s }

func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(s.openapi)
}
