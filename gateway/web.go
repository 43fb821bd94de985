package gateway

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed web
var webFS embed.FS

// webRoutes serves the docs chat page at /, its assets under /static/, and
// the embeddable widget at /widget.js. They are public: the page asks for an
// API key (?api_key= or localStorage) when the API needs one.
func (s *Server) webRoutes() {
	sub, _ := fs.Sub(webFS, "web")
	static := http.StripPrefix("/static/", http.FileServerFS(sub))
	s.handle("GET", "/{$}", scopePublic, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeFileFS(w, r, sub, "index.html")
	})
	s.handle("GET", "/static/", scopePublic, static.ServeHTTP)
	s.handle("GET", "/widget.js", scopePublic, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Cache-Control", "public, max-age=300")
		http.ServeFileFS(w, r, sub, "widget.js")
	})
}
