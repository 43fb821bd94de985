package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kgagent/kgagent"
)

// step is one scripted reply: a status with a body, or (status 0) real
// embeddings of the request's inputs.
type step struct {
	status int
	body   string
	header map[string]string
}

// scripted is an in-process OpenAI-compatible server that replays steps in
// order and then answers with embeddings.
type scripted struct {
	mu       sync.Mutex
	steps    []step
	dim      int
	requests []embedRequest
	bodies   []string
	auth     []string
	inFlight atomic.Int32
	maxSeen  atomic.Int32
	times    []time.Time
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		m := s.maxSeen.Load()
		if n <= m || s.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	body, _ := io.ReadAll(r.Body)
	req, err := readEmbedRequest(bytes.NewReader(body))
	if err != nil || r.URL.Path != "/v1/embeddings" {
		http.Error(w, "bad request", 400)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.bodies = append(s.bodies, string(body))
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.times = append(s.times, time.Now())
	var st step
	if len(s.steps) > 0 {
		st, s.steps = s.steps[0], s.steps[1:]
	}
	s.mu.Unlock()
	time.Sleep(2 * time.Millisecond) // let concurrent requests overlap
	for k, v := range st.header {
		w.Header().Set(k, v)
	}
	if st.status != 0 {
		w.WriteHeader(st.status)
		fmt.Fprint(w, st.body)
		return
	}
	type item struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	var data []item
	for i := len(req.Input) - 1; i >= 0; i-- { // out of order on purpose
		v := make([]float32, s.dim)
		v[0] = float32(len(req.Input[i]))
		data = append(data, item{i, v})
	}
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
}

// embedRequest is a request as the test servers read it: its input as a
// list.
type embedRequest struct {
	EmbeddingRequest
	Input []string
}

func readEmbedRequest(r io.Reader) (embedRequest, error) {
	var req embedRequest
	if err := json.NewDecoder(r).Decode(&req.EmbeddingRequest); err != nil {
		return req, err
	}
	in, ok := req.Inputs()
	if !ok {
		return req, errors.New("input is not a list of strings")
	}
	req.Input = in
	return req, nil
}

func newServer(t *testing.T, dim int, steps ...step) (*scripted, string) {
	s := &scripted{steps: steps, dim: dim}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL + "/v1"
}

func TestEmbedBatchesAndOrder(t *testing.T) {
	s, url := newServer(t, 8)
	e, err := NewEmbedder(EmbedConfig{BaseURL: url, APIKey: "sk-test", Model: "m", Dimensions: 8, BatchSize: 3, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee", "ffffff", "g"}
	vs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		if len(v) != 8 || int(v[0]) != len(texts[i]) {
			t.Errorf("vector %d = %v, want first component %d", i, v, len(texts[i]))
		}
	}
	if len(s.requests) != 3 {
		t.Errorf("%d requests, want 3 batches", len(s.requests))
	}
	if s.auth[0] != "Bearer sk-test" || s.requests[0].Model != "m" || s.requests[0].EncodingFormat != "float" {
		t.Errorf("request %+v auth %q", s.requests[0], s.auth[0])
	}
	// the wire format, byte for byte, as corpus/openai sent it
	if want := `{"model":"m","input":["a","bb","ccc"],"encoding_format":"float"}`; !slices.Contains(s.bodies, want) {
		t.Errorf("bodies %q, want one %s", s.bodies, want)
	}
	if m := s.maxSeen.Load(); m > 2 {
		t.Errorf("%d requests in flight, limit 2", m)
	}
	if e.Dimension() != 8 || e.Name() != "openai:m-8" {
		t.Errorf("dim %d name %s", e.Dimension(), e.Name())
	}
}

func TestEmbedRetriesAndFailures(t *testing.T) {
	quota := `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`
	tests := []struct {
		name     string
		steps    []step
		retries  int
		wantCode string
		wantReqs int
		minWait  time.Duration
	}{
		{"retry 500 then ok", []step{{status: 500, body: "oops"}, {status: 502}}, 5, "", 3, 0},
		{"429 honours Retry-After", []step{{status: 429, body: `{"error":{"message":"slow down"}}`, header: map[string]string{"Retry-After": "0.3"}}}, 5, "", 2, 300 * time.Millisecond},
		{"401 fails fast", []step{{status: 401, body: `{"error":{"message":"bad key"}}`}}, 5, kgagent.EUNAUTH, 1, 0},
		{"403 fails fast", []step{{status: 403}}, 5, kgagent.EFORBIDDEN, 1, 0},
		{"insufficient quota fails fast", []step{{status: 429, body: quota}}, 5, kgagent.ERATELIMIT, 1, 0},
		{"400 is invalid", []step{{status: 400, body: `{"error":{"message":"input too long"}}`}}, 5, kgagent.EINVALID, 1, 0},
		// the codes of internal/httpstatus, as agent/openai gives them
		{"404 is not found", []step{{status: 404}}, 5, kgagent.ENOTFOUND, 1, 0},
		{"413 is too large", []step{{status: 413}}, 5, kgagent.ETOOLARGE, 1, 0},
		// 408 and 409 are retried as the chat client (and the OpenAI SDKs) do;
		// corpus/openai gave them INVALID_ARGUMENT at once
		{"409 is retried", []step{{status: 409}}, 5, "", 2, 0},
		{"408 past the retries", []step{{status: 408}, {status: 408}}, 1, kgagent.EUNAVAILABLE, 2, 0},
		{"418 has no code of its own", []step{{status: 418}}, 5, kgagent.EINVALID, 1, 0},
		{"retries run out on 503", []step{{status: 503}, {status: 503}, {status: 503}}, 2, kgagent.EUNAVAILABLE, 3, 0},
		{"retries run out on 429", []step{{status: 429}, {status: 429}}, 1, kgagent.ERATELIMIT, 2, 0},
		{"wrong dimension", []step{{status: 200, body: `{"data":[{"index":0,"embedding":[1,2]}]}`}}, 5, kgagent.EINVALID, 1, 0},
		{"short answer", []step{{status: 200, body: `{"data":[]}`}}, 5, kgagent.EUNAVAILABLE, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, url := newServer(t, 4, tt.steps...)
			e, err := NewEmbedder(EmbedConfig{BaseURL: url, Model: "m", Dimensions: 4, MaxRetries: tt.retries, MinBackoff: time.Millisecond, MaxBackoff: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			vs, err := e.Embed(context.Background(), []string{"hello"})
			if got := kgagent.ErrorCode(err); got != tt.wantCode {
				t.Fatalf("code %q (%v), want %q", got, err, tt.wantCode)
			}
			if err == nil && len(vs) != 1 {
				t.Errorf("%d vectors", len(vs))
			}
			if len(s.requests) != tt.wantReqs {
				t.Errorf("%d requests, want %d", len(s.requests), tt.wantReqs)
			}
			if tt.minWait > 0 && len(s.times) == 2 && s.times[1].Sub(s.times[0]) < tt.minWait {
				t.Errorf("retried after %v, Retry-After said %v", s.times[1].Sub(s.times[0]), tt.minWait)
			}
			_ = start
		})
	}
}

func TestEmbedCanceledDuringBackoff(t *testing.T) {
	_, url := newServer(t, 4, step{status: 429, header: map[string]string{"Retry-After": "30"}})
	e, _ := NewEmbedder(EmbedConfig{BaseURL: url, Model: "m", Dimensions: 4, MaxBackoff: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := e.Embed(ctx, []string{"x"})
	if kgagent.ErrorCode(err) != kgagent.ETIMEOUT || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
}

func TestNewValidation(t *testing.T) {
	if _, err := NewEmbedder(EmbedConfig{Model: "unknown-model"}); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("unknown model without dimension: %v", err)
	}
	if _, err := NewEmbedder(EmbedConfig{BaseURL: "ftp://x"}); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("bad base URL: %v", err)
	}
	e, err := NewEmbedder(EmbedConfig{})
	if err != nil || e.Dimension() != 1536 {
		t.Errorf("default: %v %v", e, err)
	}
}
