package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/kgagent/kgagent/agent"
	"github.com/kgagent/kgagent/llm"
	"github.com/kgagent/kgagent/openai"
	"github.com/kgagent/kgagent/openai/openaitest"
)

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

// BenchmarkSSEReader measures parsing a 200-chunk completion stream.
func BenchmarkSSEReader(b *testing.B) {
	var buf bytes.Buffer
	for i := range 200 {
		ch := openai.ChatChunk{Object: "chat.completion.chunk", Choices: []openai.ChunkChoice{{Delta: openai.ChunkDelta{Content: fmt.Sprintf(" tok%d", i)}}}}
		j, _ := json.Marshal(ch)
		fmt.Fprintf(&buf, "data: %s\n\n", j)
	}
	buf.WriteString("data: [DONE]\n\n")
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r := openai.NewSSEReader(bytes.NewReader(data))
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
}

// BenchmarkComplete measures a whole streamed completion of 50 word pieces
// over loopback HTTP against the scripted server, with stop sequences.
func BenchmarkComplete(b *testing.B) {
	srv := openaitest.NewServer()
	defer srv.Close()
	srv.SetDefault(openaitest.Reply(strings.Repeat("word ", 50)))
	c, err := openai.New(openai.Config{BaseURL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	req := llm.CompletionRequest{Messages: []llm.ChatMessage{{Role: "user", Content: "Q: x"}}, Stop: agent.StopSequences}
	b.ReportAllocs()
	for b.Loop() {
		s, err := c.Complete(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := s.Recv(); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
		}
		s.Close()
	}
}
