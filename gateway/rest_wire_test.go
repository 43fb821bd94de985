package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRESTListWireFormat pins the bodies of the REST routes that are not
// service calls, typed since: the same bytes as the maps that wrote them
// (keys sorted; an empty readiness check list still {}).
func TestRESTListWireFormat(t *testing.T) {
	f := newFixture(t, Config{})
	get := func(path string) string {
		resp, err := http.Get(f.ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.TrimSpace(string(b))
	}
	for _, c := range []struct{ path, want string }{
		{"/healthz", `{"status":"ok"}`},
		{"/readyz", `{"checks":{"store":"ok"},"status":"ok"}`},
		{"/api/v1/collections", `{"collections":[{"name":"python","documents":3,"chunks":30},{"name":"go","documents":1,"chunks":5}]}`},
		{"/api/v1/jobs", `{"jobs":[]}`},
		{"/api/v1/sessions", `{"sessions":[]}`},
	} {
		if got := get(c.path); got != c.want {
			t.Errorf("GET %s = %s, want %s", c.path, got, c.want)
		}
	}
	empty, err := New(Config{}, Backends{})
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	rec := httptest.NewRecorder()
	empty.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/readyz", nil))
	if got := strings.TrimSpace(rec.Body.String()); got != `{"checks":{},"status":"ok"}` {
		t.Errorf("readyz without checks = %s", got)
	}
}
