package openai_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/httpstatus"
	"github.com/kgagent/kgagent/llm"
	"github.com/kgagent/kgagent/openai"
)

// failingServer answers every request with status, body and header until
// fails requests have failed, then with a success of the API asked (a chat
// completion or one embedding); it records when each request came.
type failingServer struct {
	status int
	body   string
	header map[string]string
	fails  int

	mu    sync.Mutex
	times []time.Time
}

func (s *failingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.times = append(s.times, time.Now())
	n := len(s.times)
	s.mu.Unlock()
	if n <= s.fails {
		for k, v := range s.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(s.status)
		io.WriteString(w, s.body)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if strings.HasSuffix(r.URL.Path, "/embeddings") {
		io.WriteString(w, `{"data":[{"index":0,"embedding":[1,0]}]}`)
		return
	}
	io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
}

// outcome is what one client made of a failingServer.
type outcome struct {
	code     string        // the error's code, "" for success
	requests int           // requests the server got
	gap      time.Duration // between the first two requests
	retryS   any           // the error's retry_after_s detail
}

func (s *failingServer) outcome(err error) outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := outcome{code: kgagent.ErrorCode(err), requests: len(s.times)}
	if len(s.times) > 1 {
		o.gap = s.times[1].Sub(s.times[0])
	}
	var ke *kgagent.Error
	if errors.As(err, &ke) {
		o.retryS = ke.Details["retry_after_s"]
	}
	return o
}

// retryCfg is the retry configuration both clients get.
const (
	conformanceRetries = 1
	conformanceBackoff = time.Millisecond
)

func chatOutcome(t *testing.T, s *failingServer) outcome {
	srv := httptest.NewServer(s)
	defer srv.Close()
	c, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "m", MaxRetries: conformanceRetries,
		MinBackoff: conformanceBackoff, MaxBackoff: conformanceBackoff, MaxRetryAfter: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Complete(context.Background(), llm.CompletionRequest{Messages: []llm.ChatMessage{{Role: "user", Content: "hi"}}})
	for err == nil {
		_, err = st.Recv()
	}
	if err == io.EOF {
		err = nil
	}
	return s.outcome(err)
}

func embedOutcome(t *testing.T, s *failingServer) outcome {
	srv := httptest.NewServer(s)
	defer srv.Close()
	e, err := openai.NewEmbedder(openai.EmbedConfig{BaseURL: srv.URL + "/v1", Model: "m", Dimensions: 2, MaxRetries: conformanceRetries,
		MinBackoff: conformanceBackoff, MaxBackoff: conformanceBackoff, MaxRetryAfter: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Embed(context.Background(), []string{"hi"})
	return s.outcome(err)
}

// TestClientsAgreeOnFailures: the chat client and the embedder give the
// same code for the same error answer, retry the same ones, and honour
// Retry-After (and Retry-After-Ms) the same way; every code of a status
// with one of its own is internal/httpstatus's. (Before the two clients
// shared a transport, agent/openai retried 408 and 409 where
// corpus/openai failed at once with INVALID_ARGUMENT, and corpus/openai
// cut a long Retry-After to its backoff cap and retried early where
// agent/openai failed at once with RATE_LIMITED.)
func TestClientsAgreeOnFailures(t *testing.T) {
	quota := `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`
	tests := []struct {
		name   string
		status int
		body   string
		header map[string]string
		code   string // the code when it fails every time
		retry  bool
		minGap time.Duration // the least wait before the retry
	}{
		{"400", 400, `{"error":{"message":"bad"}}`, nil, kgagent.EINVALID, false, 0},
		{"401", 401, `{"error":{"message":"bad key"}}`, nil, kgagent.EUNAUTH, false, 0},
		{"403", 403, "", nil, kgagent.EFORBIDDEN, false, 0},
		{"404", 404, "", nil, kgagent.ENOTFOUND, false, 0},
		{"408", 408, "", nil, kgagent.EUNAVAILABLE, true, 0},
		{"409", 409, "", nil, kgagent.EUNAVAILABLE, true, 0},
		{"413", 413, "", nil, kgagent.ETOOLARGE, false, 0},
		{"418", 418, "", nil, kgagent.EINVALID, false, 0},
		{"422", 422, "", nil, kgagent.EINVALID, false, 0},
		{"429", 429, "", nil, kgagent.ERATELIMIT, true, 0},
		{"500", 500, "oops", nil, kgagent.EUNAVAILABLE, true, 0},
		{"502", 502, "", nil, kgagent.EUNAVAILABLE, true, 0},
		{"503", 503, "", nil, kgagent.EUNAVAILABLE, true, 0},
		{"504", 504, "", nil, kgagent.ETIMEOUT, true, 0},
		{"quota as a 429", 429, quota, nil, kgagent.ERATELIMIT, false, 0},
		{"quota as a 403", 403, quota, nil, kgagent.ERATELIMIT, false, 0},
		{"Retry-After seconds", 429, "", map[string]string{"Retry-After": "0.25"}, kgagent.ERATELIMIT, true, 250 * time.Millisecond},
		{"Retry-After on a 503", 503, "", map[string]string{"Retry-After": "0.25"}, kgagent.EUNAVAILABLE, true, 250 * time.Millisecond},
		{"Retry-After-Ms first", 429, "", map[string]string{"Retry-After-Ms": "200", "Retry-After": "0"}, kgagent.ERATELIMIT, true, 200 * time.Millisecond},
		{"Retry-After past the maximum", 429, "", map[string]string{"Retry-After": "3600"}, kgagent.ERATELIMIT, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if c := httpstatus.Code(tt.status); c != "" && !strings.Contains(tt.body, "quota") && c != tt.code {
				t.Fatalf("table says %s for %d, internal/httpstatus %s", tt.code, tt.status, c)
			}
			for _, fails := range []int{1, 2} { // a failure the retry gets past; one that outlasts it
				wantCode, wantReqs := tt.code, 1
				if tt.retry {
					wantReqs = 2
					if fails == 1 {
						wantCode = ""
					}
				}
				var got [2]outcome
				for i, run := range []func(*testing.T, *failingServer) outcome{chatOutcome, embedOutcome} {
					got[i] = run(t, &failingServer{status: tt.status, body: tt.body, header: tt.header, fails: fails})
					client := [...]string{"chat", "embeddings"}[i]
					if got[i].code != wantCode || got[i].requests != wantReqs {
						t.Errorf("%s, %d failures: code %q after %d requests, want %q after %d", client, fails, got[i].code, got[i].requests, wantCode, wantReqs)
					}
					if tt.minGap > 0 && got[i].gap < tt.minGap {
						t.Errorf("%s: retried after %v, Retry-After asked %v", client, got[i].gap, tt.minGap)
					}
					if tt.minGap > 0 && got[i].gap > tt.minGap+2*time.Second {
						t.Errorf("%s: retried after %v, Retry-After asked %v (plus a tenth)", client, got[i].gap, tt.minGap)
					}
				}
				if fmt.Sprint(got[0].retryS) != fmt.Sprint(got[1].retryS) {
					t.Errorf("retry_after_s: chat %v, embeddings %v", got[0].retryS, got[1].retryS)
				}
				if tt.header["Retry-After"] == "3600" && got[0].retryS != 3600.0 {
					t.Errorf("retry_after_s %v, want 3600", got[0].retryS)
				}
			}
		})
	}
}
