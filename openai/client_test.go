package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/internal/poll"
	"github.com/kgagent/kgagent/llm"
	"github.com/kgagent/kgagent/openai"
	"github.com/kgagent/kgagent/openai/openaitest"
)

// fast returns a config for srv with millisecond backoffs.
func fast(srv *openaitest.Server) openai.Config {
	return openai.Config{BaseURL: srv.URL, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Timeout: 10 * time.Second}
}

func newClient(t *testing.T, cfg openai.Config) *openai.Client {
	t.Helper()
	c, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ask(q string) llm.CompletionRequest {
	return llm.CompletionRequest{Messages: []llm.ChatMessage{{Role: "system", Content: "You answer."}, {Role: "user", Content: q}}}
}

// collect reads s to the end.
func collect(s llm.Stream) (string, []llm.Delta, error) {
	defer s.Close()
	var b strings.Builder
	var ds []llm.Delta
	for {
		d, err := s.Recv()
		if err == io.EOF {
			return b.String(), ds, nil
		}
		if err != nil {
			return b.String(), ds, err
		}
		ds = append(ds, d)
		b.WriteString(d.Text)
	}
}

func complete(ctx context.Context, c *openai.Client, req llm.CompletionRequest) (string, []llm.Delta, error) {
	s, err := c.Complete(ctx, req)
	if err != nil {
		return "", nil, err
	}
	return collect(s)
}

func TestCompleteStreamsText(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Reply("Paris is the capital of France.").WithUsage(12, 7),
		openaitest.Chunks("héllo", " wörld", "\n", "ok"),
	)
	srv.RequireKey("sk-test")
	cfg := fast(srv)
	cfg.APIKey, cfg.Model, cfg.MaxTokens, cfg.Temperature = "sk-test", "llama3", 256, 0.2
	c := newClient(t, cfg)

	req := ask("Capital of France?")
	req.Stop = []string{"\nFunc[", "\nAgent[", "\nQ:"}
	text, ds, err := complete(context.Background(), c, req)
	if err != nil {
		t.Fatal(err)
	}
	if text != "Paris is the capital of France." {
		t.Errorf("text = %q", text)
	}
	if len(ds) < 2 {
		t.Errorf("got %d deltas, want the text streamed in pieces", len(ds))
	}
	last := ds[len(ds)-1]
	if last.Usage == nil || *last.Usage != (kgagent.Usage{PromptTokens: 12, CompletionTokens: 7}) {
		t.Errorf("last usage = %+v, want 12/7", last.Usage)
	}
	for _, d := range ds[:len(ds)-1] {
		if d.Usage != nil {
			t.Errorf("usage on a non-last delta %+v", d)
		}
	}

	reqs := srv.ChatRequests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests", len(reqs))
	}
	got := reqs[0]
	if got.Header.Get("Authorization") != "Bearer sk-test" {
		t.Errorf("auth header %q", got.Header.Get("Authorization"))
	}
	b := got.Body
	if b.Model != "llama3" || !b.Stream || b.MaxTokens != 256 || b.Temperature == nil || *b.Temperature != 0.2 {
		t.Errorf("body = %+v", b)
	}
	if b.StreamOptions == nil || !b.StreamOptions.IncludeUsage {
		t.Errorf("stream_options not sent: %s", got.Raw)
	}
	if strings.Join(b.Stop, "|") != "\nFunc[|\nAgent[|\nQ:" {
		t.Errorf("stop = %q", b.Stop)
	}
	if len(b.Messages) != 2 || b.Messages[1].Content != "Capital of France?" || b.Messages[0].Role != "system" {
		t.Errorf("messages = %+v", b.Messages)
	}

	// The request's own settings win over the config's.
	req = ask("again")
	req.Model, req.Temperature, req.MaxTokens = "gpt-4o", 0.7, 9
	text, _, err = complete(context.Background(), c, req)
	if err != nil || text != "héllo wörld\nok" {
		t.Fatalf("second: %q %v", text, err)
	}
	b = srv.ChatRequests()[1].Body
	if b.Model != "gpt-4o" || *b.Temperature != 0.7 || b.MaxTokens != 9 {
		t.Errorf("request settings not used: %+v", b)
	}
}

func TestStopSequences(t *testing.T) {
	stops := []string{"\nFunc[", "\nAgent[", "\nQ:"}
	tests := []struct {
		name string
		step openaitest.Step
		want string
	}{
		{"server honours stop", openaitest.Reply("Ask Func[weather]: Paris\nFunc[weather] says: sunny"), "Ask Func[weather]: Paris"},
		{"server ignores stop", openaitest.Reply("Ask Func[weather]: Paris\nFunc[weather] says: sunny").IgnoringStop(), "Ask Func[weather]: Paris"},
		{"stop split over chunks", openaitest.Chunks("Ask Agent[b]: x\n", "Age", "nt[b] says: y").IgnoringStop(), "Ask Agent[b]: x"},
		{"earliest stop wins", openaitest.Chunks("A: done\nQ: next\nFunc[x]").IgnoringStop(), "A: done"},
		{"held-back prefix released", openaitest.Chunks("line one\n", "Fun", "ny line").IgnoringStop(), "line one\nFunny line"},
		{"trailing newline kept", openaitest.Chunks("A: yes\n").IgnoringStop(), "A: yes\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.New(t, tt.step)
			c := newClient(t, fast(srv))
			req := ask("q")
			req.Stop = stops
			text, _, err := complete(context.Background(), c, req)
			if err != nil || text != tt.want {
				t.Fatalf("got %q, %v; want %q", text, err, tt.want)
			}
		})
	}
}

func TestMaxStopSent(t *testing.T) {
	srv := openaitest.New(t, openaitest.Reply("one\nE: two").IgnoringStop())
	c := newClient(t, fast(srv))
	req := ask("q")
	req.Stop = []string{"\nA:", "\nB:", "\nC:", "\nD:", "\nE:"}
	text, _, err := complete(context.Background(), c, req)
	if err != nil || text != "one" {
		t.Fatalf("got %q %v; the fifth stop must be enforced by the client", text, err)
	}
	if n := len(srv.ChatRequests()[0].Body.Stop); n != openai.DefaultMaxStop {
		t.Errorf("sent %d stops, want %d", n, openai.DefaultMaxStop)
	}
}

func TestRetriesAndFailures(t *testing.T) {
	tests := []struct {
		name     string
		steps    []openaitest.Step
		retries  int
		wantCode string
		wantText string
		wantReqs int
	}{
		{"429 then success", []openaitest.Step{openaitest.RateLimited(5 * time.Millisecond), openaitest.Reply("ok")}, 0, "", "ok", 2},
		{"500 twice then success", []openaitest.Step{openaitest.ServerError(), openaitest.ServerError(), openaitest.Reply("ok")}, 0, "", "ok", 3},
		{"503 and 502 then success", []openaitest.Step{{Status: 503}, {Status: 502}, openaitest.Reply("ok")}, 0, "", "ok", 3},
		{"500 past the retries", []openaitest.Step{openaitest.ServerError(), openaitest.ServerError(), openaitest.ServerError()}, 2, kgagent.EUNAVAILABLE, "", 3},
		{"429 past the retries", []openaitest.Step{openaitest.RateLimited(0), openaitest.RateLimited(0)}, 1, kgagent.ERATELIMIT, "", 2},
		{"no retries when negative", []openaitest.Step{openaitest.ServerError(), openaitest.Reply("ok")}, -1, kgagent.EUNAVAILABLE, "", 1},
		{"401 fails fast", []openaitest.Step{openaitest.Unauthorized(), openaitest.Reply("ok")}, 0, kgagent.EUNAUTH, "", 1},
		{"403 fails fast", []openaitest.Step{{Status: 403, ErrorMessage: "forbidden"}, openaitest.Reply("ok")}, 0, kgagent.EFORBIDDEN, "", 1},
		{"quota fails fast", []openaitest.Step{openaitest.QuotaExceeded(), openaitest.Reply("ok")}, 0, kgagent.ERATELIMIT, "", 1},
		{"quota as a 403 code", []openaitest.Step{{Status: 403, ErrorCode: "insufficient_quota"}, openaitest.Reply("ok")}, 0, kgagent.ERATELIMIT, "", 1},
		{"Retry-After too long", []openaitest.Step{openaitest.RateLimited(time.Hour), openaitest.Reply("ok")}, 0, kgagent.ERATELIMIT, "", 1},
		{"404 model", []openaitest.Step{{Status: 404, ErrorCode: "model_not_found"}}, 0, kgagent.ENOTFOUND, "", 1},
		{"400 bad request", []openaitest.Step{{Status: 400, ErrorMessage: "context length exceeded"}}, 0, kgagent.EINVALID, "", 1},
		{"error inside the stream", []openaitest.Step{{Chunks: []string{"par"}, StreamError: &openai.APIError{Message: "overloaded", Type: "server_error"}}}, 0, kgagent.EUNAVAILABLE, "par", 1},
		{"quota inside the stream", []openaitest.Step{{StreamError: &openai.APIError{Message: "no credit", Type: "insufficient_quota"}}}, 0, kgagent.ERATELIMIT, "", 1},
		{"malformed chunk", []openaitest.Step{openaitest.Raw("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {not json\n\n")}, 0, kgagent.EUNAVAILABLE, "a", 1},
		{"stream without [DONE]", []openaitest.Step{openaitest.Raw("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n: bye\n")}, 0, "", "a", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.New(t, tt.steps...)
			cfg := fast(srv)
			cfg.MaxRetries = tt.retries
			cfg.MaxRetryAfter = 10 * time.Second
			c := newClient(t, cfg)
			text, _, err := complete(context.Background(), c, ask("q"))
			if got := kgagent.ErrorCode(err); got != tt.wantCode {
				t.Fatalf("code = %q (%v), want %q", got, err, tt.wantCode)
			}
			if text != tt.wantText {
				t.Errorf("text = %q, want %q", text, tt.wantText)
			}
			if n := len(srv.ChatRequests()); n != tt.wantReqs {
				t.Errorf("server got %d requests, want %d", n, tt.wantReqs)
			}
			if err != nil {
				var ke *kgagent.Error
				if !errors.As(err, &ke) || ke.Message == "" {
					t.Errorf("error %v is not a *kgagent.Error with a message", err)
				}
				if strings.Contains(kgagent.ErrorMessage(err), "Incorrect API key") {
					t.Errorf("user-facing message leaks the server's text: %q", kgagent.ErrorMessage(err))
				}
			}
		})
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	const wait = 150 * time.Millisecond
	srv := openaitest.New(t, openaitest.RateLimited(wait), openaitest.Reply("ok"))
	c := newClient(t, fast(srv))
	start := time.Now()
	text, _, err := complete(context.Background(), c, ask("q"))
	if err != nil || text != "ok" {
		t.Fatalf("%q %v", text, err)
	}
	if el := time.Since(start); el < wait {
		t.Errorf("retried after %v, before Retry-After %v", el, wait)
	}
}

func TestBackoffGrows(t *testing.T) {
	srv := openaitest.New(t, openaitest.ServerError(), openaitest.ServerError(), openaitest.ServerError(), openaitest.Reply("ok"))
	cfg := fast(srv)
	cfg.MinBackoff, cfg.MaxBackoff = 20*time.Millisecond, time.Second
	c := newClient(t, cfg)
	start := time.Now()
	if _, _, err := complete(context.Background(), c, ask("q")); err != nil {
		t.Fatal(err)
	}
	// Waits are at least 10ms, 20ms, 40ms (half of 20, 40, 80).
	if el := time.Since(start); el < 70*time.Millisecond {
		t.Errorf("three retries took %v, want at least 70ms of backoff", el)
	}
}

func TestCancelMidStream(t *testing.T) {
	srv := openaitest.New(t, openaitest.Hang("Thinking", " about", " it"))
	c := newClient(t, fast(srv))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := c.Complete(ctx, ask("q"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got string
	for got != "Thinking about it" {
		d, err := s.Recv()
		if err != nil {
			t.Fatalf("recv: %v after %q", err, got)
		}
		got += d.Text
	}
	errc := make(chan error, 1)
	go func() {
		_, err := s.Recv()
		errc <- err
	}()
	cancel()
	select {
	case err := <-errc:
		if kgagent.ErrorCode(err) != kgagent.ECANCELED {
			t.Fatalf("err = %v, want %s", err, kgagent.ECANCELED)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Recv did not return after cancel")
	}
	// The connection is closed: the server's handler sees it and returns.
	poll.True(t, 5*time.Second, "the server stops streaming after cancel", func() bool { return srv.Active() == 0 })
}

func TestCancelDuringBackoff(t *testing.T) {
	srv := openaitest.New(t, openaitest.RateLimited(5*time.Second), openaitest.Reply("ok"))
	c := newClient(t, fast(srv))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Complete(ctx, ask("q"))
	if kgagent.ErrorCode(err) != kgagent.ETIMEOUT {
		t.Fatalf("err = %v, want %s (caller's deadline)", err, kgagent.ETIMEOUT)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("took %v to notice the deadline", el)
	}
}

func TestConfigTimeout(t *testing.T) {
	srv := openaitest.New(t, openaitest.Hang("partial"))
	cfg := fast(srv)
	cfg.Timeout = 400 * time.Millisecond
	c := newClient(t, cfg)
	text, _, err := complete(context.Background(), c, ask("q"))
	if kgagent.ErrorCode(err) != kgagent.ETIMEOUT || text != "partial" {
		t.Fatalf("got %q, %v; want partial text then %s", text, err, kgagent.ETIMEOUT)
	}
}

func TestStreamOptionsRejected(t *testing.T) {
	srv := openaitest.New(t, openaitest.Reply("one"), openaitest.Reply("two"))
	srv.RejectStreamOptions()
	c := newClient(t, fast(srv))
	for _, want := range []string{"one", "two"} {
		text, ds, err := complete(context.Background(), c, ask("q"))
		if err != nil || text != want {
			t.Fatalf("got %q %v, want %q", text, err, want)
		}
		if ds[len(ds)-1].Usage != nil {
			t.Errorf("usage without stream_options: %+v", ds[len(ds)-1].Usage)
		}
	}
	reqs := srv.ChatRequests()
	if len(reqs) != 3 {
		t.Fatalf("got %d requests, want 3 (one rejected, then two without stream_options)", len(reqs))
	}
	if reqs[0].Body.StreamOptions == nil || reqs[1].Body.StreamOptions != nil || reqs[2].Body.StreamOptions != nil {
		t.Errorf("stream_options sent: %v %v %v", reqs[0].Body.StreamOptions, reqs[1].Body.StreamOptions, reqs[2].Body.StreamOptions)
	}
}

func TestServerIgnoresStreamOptions(t *testing.T) {
	srv := openaitest.New(t, openaitest.Reply("a b c"))
	srv.IgnoreStreamOptions()
	c := newClient(t, fast(srv))
	text, ds, err := complete(context.Background(), c, ask("q"))
	if err != nil || text != "a b c" {
		t.Fatalf("%q %v", text, err)
	}
	for _, d := range ds {
		if d.Usage != nil {
			t.Errorf("usage %+v from a server that sent none", d.Usage)
		}
	}
}

func TestServerIgnoresStream(t *testing.T) {
	// Some servers answer a whole chat.completion even when asked to stream.
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_ = json.NewEncoder(w).Encode(openai.ChatCompletion{
			Choices: []openai.ChatChoice{{Message: openai.ResponseMessage{Role: "assistant", Content: "Ask Func[x]: y\nFunc[x] says: z"}}},
			Usage:   &openai.Usage{PromptTokens: 3, CompletionTokens: 4},
		})
	}))
	defer hs.Close()
	c := newClient(t, openai.Config{BaseURL: hs.URL + "/v1"})
	req := ask("q")
	req.Stop = []string{"\nFunc["}
	text, ds, err := complete(context.Background(), c, req)
	if err != nil || text != "Ask Func[x]: y" || len(ds) != 1 || ds[0].Usage == nil || ds[0].Usage.CompletionTokens != 4 {
		t.Fatalf("got %q %+v %v", text, ds, err)
	}
}

func TestUnreachable(t *testing.T) {
	hs := httptest.NewServer(http.NotFoundHandler())
	url := hs.URL
	hs.Close()
	c := newClient(t, openai.Config{BaseURL: url, MaxRetries: 1, MinBackoff: time.Millisecond})
	_, err := c.Complete(context.Background(), ask("q"))
	if kgagent.ErrorCode(err) != kgagent.EUNAVAILABLE {
		t.Fatalf("err = %v, want %s", err, kgagent.EUNAVAILABLE)
	}
}

func TestBadInput(t *testing.T) {
	if _, err := openai.New(openai.Config{BaseURL: "ftp://x"}); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("bad base URL: %v", err)
	}
	c := newClient(t, openai.Config{})
	if _, err := c.Complete(context.Background(), llm.CompletionRequest{}); kgagent.ErrorCode(err) != kgagent.EINVALID {
		t.Errorf("no messages: %v", err)
	}
	if got := c.Config(); got.BaseURL != openai.DefaultBaseURL || got.Model != openai.DefaultModel || got.MaxRetries != openai.DefaultMaxRetries {
		t.Errorf("defaults not filled: %+v", got)
	}
}

func TestModels(t *testing.T) {
	srv := openaitest.New(t)
	srv.SetModels("llama3", "qwen2")
	c := newClient(t, fast(srv))
	ids, err := c.Models(context.Background())
	if err != nil || strings.Join(ids, ",") != "llama3,qwen2" {
		t.Fatalf("%v %v", ids, err)
	}
	srv.RequireKey("k")
	if _, err := c.Models(context.Background()); kgagent.ErrorCode(err) != kgagent.EUNAUTH {
		t.Fatalf("without key: %v", err)
	}
}

// TestErrorMessageCutOnARune: a long error message from the server is cut
// on a rune boundary, so the error stays valid UTF-8 (the client's own
// truncate cut bytes).
func TestErrorMessageCutOnARune(t *testing.T) {
	msg := "x" + strings.Repeat("é", 200) // the 300-byte cut falls inside an é
	srv := openaitest.New(t, openaitest.Step{Status: 400, ErrorMessage: msg})
	c := newClient(t, fast(srv))
	_, _, err := complete(context.Background(), c, ask("q"))
	if err == nil {
		t.Fatal("want an error")
	}
	if !utf8.ValidString(err.Error()) || !strings.Contains(err.Error(), "é…") {
		t.Fatalf("error %q: want valid UTF-8 cut after a whole é", err.Error())
	}
}
