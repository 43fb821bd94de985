package agent

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/agent/journal"
	"github.com/kgagent/kgagent/llm"
)

// memJournal is a journal.Journal in memory.
type memJournal struct {
	mu  sync.Mutex
	out map[int][]llm.Delta
}

func (j *memJournal) Output(n int) ([]llm.Delta, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	d, ok := j.out[n]
	return d, ok
}

func (j *memJournal) Record(n int, out []llm.Delta) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.out == nil {
		j.out = map[int][]llm.Delta{}
	}
	j.out[n] = out
}

// eventTexts is "kind:func:text" of each event.
func eventTexts(evs []kgagent.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%s:%s:%s", e.Kind, e.Func, e.Text))
	}
	return out
}

// TestJournalReplaysTheModel: a run with a Journal records the model's
// outputs; the same request run again with that journal gets the same
// events without asking the model, although this model (like one that
// samples) would now answer differently. With only the first output
// recorded, the first is replayed and the model asked for the rest.
func TestJournalReplaysTheModel(t *testing.T) {
	var calls []string
	var mu sync.Mutex
	model := script("Ask Func[quote]: MSFT", "A: It is $105.22.",
		"Ask Func[quote]: AAPL", "A: Something else.", "A: The rest, asked again.")
	m := newManager(t, Config{Model: ModelConfig{LLM: model}}, stockAgent(&calls, &mu))
	ask := func(j journal.Journal) []string {
		t.Helper()
		var ev events
		if _, err := m.Ask(context.Background(), Request{ID: "r1", Question: "MSFT?", Agent: "stocks", Journal: j}, ev.emit); err != nil {
			t.Fatal(err)
		}
		return eventTexts(ev.all())
	}
	j := &memJournal{}
	first := ask(j)
	if len(model.Calls()) != 2 || len(j.out) != 2 {
		t.Fatalf("first run: %d model calls, %d recorded", len(model.Calls()), len(j.out))
	}
	if again := ask(j); fmt.Sprint(again) != fmt.Sprint(first) {
		t.Fatalf("replayed run: %v\nfirst run: %v", again, first)
	}
	if len(model.Calls()) != 2 {
		t.Fatalf("the replayed run asked the model: %d calls", len(model.Calls()))
	}
	// Without a journal the model now gives another step.
	if other := ask(nil); fmt.Sprint(other) == fmt.Sprint(first) {
		t.Fatalf("the script did not change: %v", other)
	}
	// Only the first output recorded: it is replayed, the answer asked.
	part := &memJournal{out: map[int][]llm.Delta{0: j.out[0]}}
	got := ask(part)
	if got[len(got)-1] != "answer::The rest, asked again." || fmt.Sprint(got[:3]) != fmt.Sprint(first[:3]) || len(part.out) != 2 {
		t.Fatalf("run with the first output recorded: %v (first run %v)", got, first)
	}
	if calls[0] != "MSFT" || calls[len(calls)-1] != "MSFT" {
		t.Errorf("func inputs %v", calls)
	}
}
