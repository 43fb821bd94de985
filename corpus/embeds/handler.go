package embeds

import (
	"net/http"
	"strings"

	"github.com/kgagent/kgagent"
)

// ErrorWriter writes err as the HTTP answer to r. The server that mounts
// Handler passes its own, so that embed errors have the shape, status and
// logging of every other error it writes (the gateway passes its writeError).
type ErrorWriter func(w http.ResponseWriter, r *http.Request, err error)

// Handler serves signed embed URLs: GET or HEAD <mount>/<id>?exp=..&sig=..
// with the blob's content type, ranges and an ETag. Mount it with
// http.StripPrefix so the request path is "/<id>". Errors go to writeError:
// EFORBIDDEN for a bad or expired signature, ENOTFOUND for an unknown blob,
// EMETHOD (with an Allow header) for a method other than GET and HEAD.
func (s *Store) Handler(writeError ErrorWriter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, r, kgagent.Errorf(kgagent.EMETHOD, "method not allowed"))
			return
		}
		id, err := s.Verify(strings.TrimPrefix(r.URL.Path, "/"), r.URL.Query())
		if err != nil {
			writeError(w, r, err)
			return
		}
		b, f, err := s.Open(id)
		if err != nil {
			writeError(w, r, err)
			return
		}
		defer f.Close()
		h := w.Header()
		h.Set("Content-Type", b.ContentType)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "sandbox")
		h.Set("Cache-Control", "private, max-age=300, immutable")
		h.Set("ETag", `"`+id+`"`)
		http.ServeContent(w, r, "", b.CreatedAt, f)
	})
}
