package embeds

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/kgagent/kgagent"
)

// Handler serves signed embed URLs: GET or HEAD <mount>/<id>?exp=..&sig=..
// with the blob's content type, ranges and an ETag. Mount it with
// http.StripPrefix so the request path is "/<id>". Bad or expired signatures
// get 403, unknown blobs 404.
func (s *Store) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeErr(w, kgagent.Errorf(kgagent.EINVALID, "method not allowed"), http.StatusMethodNotAllowed)
			return
		}
		id, err := s.Verify(strings.TrimPrefix(r.URL.Path, "/"), r.URL.Query())
		if err != nil {
			writeErr(w, err, 0)
			return
		}
		b, f, err := s.Open(id)
		if err != nil {
			writeErr(w, err, 0)
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

func writeErr(w http.ResponseWriter, err error, status int) {
	if status == 0 {
		status = kgagent.HTTPStatus(kgagent.ErrorCode(err))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": kgagent.ErrorCode(err), "message": kgagent.ErrorMessage(err)}})
}
