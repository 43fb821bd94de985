package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kgagent/kgagent"
)

// TestServeEmbedSSRFRefused is finding 1 of issue 11, against the real serve
// command: an embed naming an internal URL (loopback, metadata) is refused,
// the internal server is never reached and its content never appears in
// the answer or the sources; GraphQL registerAgent cannot reach it either.
// allowed_private_hosts lets an operator's private host through.
func TestServeEmbedSSRFRefused(t *testing.T) {
	var hits atomic.Int64
	secret := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "The root password is hunter2.")
	}))
	defer secret.Close()
	base, _ := startServe(t)
	for _, uri := range []string{secret.URL + "/secret.txt", "http://169.254.169.254/latest/meta-data/", "http://2130706433" + secret.URL[strings.LastIndexByte(secret.URL, ':'):] + "/secret.txt"} {
		body, _ := json.Marshal(map[string]any{"question": "What does #doc say about the root password?", "embeds": map[string]kgagent.Embed{"doc": {URI: uri, ContentType: "text/plain"}}})
		resp, err := http.Post(base+"/api/v1/agent", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(data), "hunter2") {
			t.Errorf("%s: internal content leaked: %s", uri, data)
		}
	}
	gql := `{"query":"mutation { registerAgent(name: \"internal\", url: \"` + secret.URL + `/agent\") { name } }"}`
	resp, err := http.Post(base+"/graphql", "application/json", strings.NewReader(gql))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(data), kgagent.EFORBIDDEN) {
		t.Errorf("registerAgent of a loopback URL: %s", data)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the internal server was reached %d times", n)
	}

	// An operator who allows the host gets the content.
	base2, _ := startServe(t, "--allowed-private-hosts", "127.0.0.1")
	body, _ := json.Marshal(map[string]any{"question": "What does #doc say about the root password?", "embeds": map[string]kgagent.Embed{"doc": {URI: secret.URL + "/secret.txt", ContentType: "text/plain"}}})
	resp, err = http.Post(base2+"/api/v1/agent", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	data, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(data), "hunter2") || hits.Load() == 0 {
		t.Errorf("allowed private host not read: %s", data)
	}
}
