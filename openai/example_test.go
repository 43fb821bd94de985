package openai_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"

	"github.com/kgagent/kgagent/llm"
	"github.com/kgagent/kgagent/openai"
	"github.com/kgagent/kgagent/openai/openaitest"
)

// A streamed completion against the scripted server: the text arrives piece
// by piece and the last piece carries the token usage. The model's invented
// func reply is cut at the stop sequence.
func ExampleClient_Complete() {
	srv := openaitest.NewServer(openaitest.Reply("Ask Func[weather]: Paris\nFunc[weather] says: rain").WithUsage(20, 5))
	defer srv.Close()

	client, err := openai.New(openai.Config{BaseURL: srv.URL, Model: "llama3"})
	if err != nil {
		log.Fatal(err)
	}
	s, err := client.Complete(context.Background(), llm.CompletionRequest{
		Messages: []llm.ChatMessage{{Role: "user", Content: "Q: Weather in Paris?"}},
		Stop:     []string{"\nFunc["},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for {
		d, err := s.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%q\n", d.Text)
		if d.Usage != nil {
			fmt.Println("usage:", d.Usage.PromptTokens, d.Usage.CompletionTokens)
		}
	}
	// Output:
	// "Ask"
	// " Func[weather]:"
	// " Paris"
	// ""
	// usage: 20 5
}

// Reading the server-sent events of any OpenAI-compatible endpoint, e.g. in
// a test of a gateway that serves one.
func ExampleSSEReader() {
	srv := openaitest.NewServer(openaitest.Chunks("Hel", "lo"))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/chat/completions", "application/json",
		stringsReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	r := openai.NewSSEReader(resp.Body)
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		fmt.Println(len(ev.Data) > 0, ev.Data == "[DONE]")
	}
	// Output:
	// true false
	// true false
	// true false
	// true false
	// true true
}
