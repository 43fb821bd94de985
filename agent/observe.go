package agent

import (
	"strconv"
	"strings"
	"time"

	"github.com/kgagent/kgagent/internal/text"
)

// Observer receives measurements of the manager's LLM calls and runs, for
// metrics. Its methods are called on the run's goroutine and must be quick.
type Observer interface {
	// LLMCall is called once per LLM call, when it ends.
	LLMCall(LLMCallStats)
	// RunEnded is called once per Ask that ran (answer cache hits excluded),
	// whether it answered or failed.
	RunEnded(RunStats)
}

// LLMCallStats describes one finished LLM call.
type LLMCallStats struct {
	Agent    string
	Model    string
	Duration time.Duration
	// PromptTokens and CompletionTokens are what the server reported. A
	// call cut on this side (after its first action line, a stop sequence,
	// a loop or its timeout) before the server's usage came has them
	// estimated instead, 4 bytes a token of the prompt and of the text
	// received, and Estimated set.
	PromptTokens, CompletionTokens int
	Estimated                      bool
	// Stop says how the output ended: "stop" (the server ended it or a stop
	// sequence came), "length" (the token limit), "action" (cut after the
	// first complete action line), "repeat" (an answer looping on a line),
	// "timeout" (the per-call timeout; the output so far was used) or
	// "error" (the call failed).
	Stop string
	// Malformed is set when the output could not be read as a step.
	Malformed bool
}

// RunStats describes one finished run.
type RunStats struct {
	Agent      string
	Iterations int
	Code       string // "" for an answer, else the error code
	Duration   time.Duration
}

// boundObservation cuts an observation to about maxTokens tokens (4 bytes
// a token). The text is split into blocks at blank lines (one block per
// source, then the facts); every block keeps its first line (the numbered
// source line) and the rest of the budget is shared out in order, so the
// best-ranked passages, which come first, are cut least and an unused share
// passes on to the next block. Blocks that do not fit at all are dropped
// with a note.
func boundObservation(s string, maxTokens int) string {
	budget := maxTokens * 4
	if maxTokens <= 0 || len(s) <= budget {
		return s
	}
	blocks := strings.Split(strings.TrimSpace(s), "\n\n")
	heads := make([]string, len(blocks))
	bodies := make([]string, len(blocks))
	for i, b := range blocks {
		head, body, _ := strings.Cut(b, "\n")
		heads[i], bodies[i] = head, body
	}
	var out []string
	left := budget
	for i := range blocks {
		if len(heads[i])+1 > left && i > 0 {
			out = append(out, "(… "+strconv.Itoa(len(blocks)-i)+" more not shown)")
			break
		}
		head := text.Clip(heads[i], left)
		left -= len(head) + 2
		// The header lines of the blocks after this one are reserved for;
		// what remains is shared equally among this block and those.
		reserved := 0
		for _, h := range heads[i+1:] {
			reserved += len(h) + 2
		}
		share := max(0, (left-reserved)/(len(blocks)-i))
		body := bodies[i]
		if len(body) > share {
			body = text.CutWords(body, share)
		}
		left -= len(body) + 1
		if body != "" {
			head += "\n" + body
		}
		out = append(out, head)
	}
	return strings.Join(out, "\n\n")
}
