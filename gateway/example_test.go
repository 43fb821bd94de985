package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/gateway"
)

type echoAsker struct{}

func (echoAsker) Ask(ctx context.Context, req agent.Request, emit agent.Emit) (kgagent.Answer, error) {
	emit(kgagent.Event{Kind: kgagent.EventThought, Text: "easy"})
	return kgagent.Answer{Answer: "You asked: " + req.Question, Sources: []kgagent.Source{{URL: "https://docs.example.org/a#b", Title: "A"}}}, nil
}

// The gateway wired with one backend, asked over REST.
func Example() {
	srv, err := gateway.New(gateway.Config{}, gateway.Backends{Asker: echoAsker{}})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	resp, err := http.Post(ts.URL+"/api/v1/agent", "application/json", strings.NewReader(`{"question":"What is kgagent?"}`))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Print(resp.StatusCode, " ", string(body))
	// Output: 200 {"answer":"You asked: What is kgagent?","sources":[{"url":"https://docs.example.org/a#b","title":"A","score":0}]}
}
