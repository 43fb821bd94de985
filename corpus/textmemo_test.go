package corpus_test

import (
	"fmt"
	"testing"

	"github.com/kgagent/kgagent"
	"github.com/kgagent/kgagent/corpus"
)

// memoHits are hits of digests, of the pages they describe and of prose.
func memoHits() []corpus.Hit {
	return []corpus.Hit{
		{Chunk: kgagent.Chunk{DocURL: "index", Text: "Class\n\nDescription\n\nFoo\n\nFoo does the first thing for you always.\n\nBar\n\nBar does the second thing for you always.\n\nBaz\n\nBaz does the third thing for you always."}, Score: 1},
		{Chunk: kgagent.Chunk{DocURL: "package-use", Text: "Classes used by javax.management.timer\n\nClass\n\nDescription\n\nTimerMBean\n\nExposes the management interface of the timer MBean."}, Score: 0.95},
		{Chunk: kgagent.Chunk{DocURL: "a", Text: "Some prose about another matter entirely, with no list."}, Score: 0.9},
		{Chunk: kgagent.Chunk{DocURL: "TimerMBean", Text: "public interface TimerMBean\n\nExposes the management interface of the timer MBean.\n\nSince:: 1.5"}, Score: 0.5},
		{Chunk: kgagent.Chunk{DocURL: "bar", Text: "public class Bar\n\nBar does the second thing for you always. More about it."}, Score: 0.3},
		{Chunk: kgagent.Chunk{DocURL: "c", Text: "Yet more prose, unrelated to the index."}, Score: 0.2},
	}
}

// order is hits as DemoteDigests' callers read them: pages, scores and
// digest entries in order.
func order(hits []corpus.Hit) string {
	s := ""
	for _, h := range hits {
		s += fmt.Sprintf("%s %v %v|", h.DocURL, h.Score, h.DigestEntries())
	}
	return s
}

// TestTextMemoSameRanking: hits with memos are ranked exactly as hits
// without, the first time (the memos are read) and again (the memos have
// been read), and a memo made for another text is not used.
func TestTextMemoSameRanking(t *testing.T) {
	want := order(corpus.DemoteDigests(memoHits()))
	memos := memoHits()
	for i := range memos {
		memos[i].Memo = corpus.NewTextMemo(memos[i].Text)
	}
	for round := range 2 {
		hits := make([]corpus.Hit, len(memos))
		copy(hits, memos)
		if got := order(corpus.DemoteDigests(hits)); got != want {
			t.Fatalf("round %d with memos: %s\nwant %s", round, got, want)
		}
	}
	// Every hit given another hit's memo: each is read from its own text.
	hits := memoHits()
	for i := range hits {
		hits[i].Memo = memos[(i+1)%len(memos)].Memo
	}
	if got := order(corpus.DemoteDigests(hits)); got != want {
		t.Fatalf("with other texts' memos: %s\nwant %s", got, want)
	}
}

// TestTextFlagOncePerChunk: a text rule runs once for every hit of a chunk
// that shares its memo, once a call without a memo, and on the hit's own
// text when the memo is another text's.
func TestTextFlagOncePerChunk(t *testing.T) {
	type key struct{}
	runs := 0
	rule := func(h *corpus.Hit) bool { runs++; return len(h.Text) > 10 }
	memo := corpus.NewTextMemo("a long enough text")
	for range 3 {
		h := corpus.Hit{Chunk: kgagent.Chunk{Text: "a long enough text"}, Memo: memo}
		if !h.TextFlag(key{}, rule) {
			t.Fatal("rule answered false")
		}
	}
	if runs != 1 {
		t.Fatalf("rule ran %d times for one chunk's memo, want 1", runs)
	}
	short := corpus.Hit{Chunk: kgagent.Chunk{Text: "short"}, Memo: memo}
	if short.TextFlag(key{}, rule) || runs != 2 {
		t.Fatalf("a hit of another text read the memo (runs %d)", runs)
	}
	bare := corpus.Hit{Chunk: kgagent.Chunk{Text: "a long enough text"}}
	bare.TextFlag(key{}, rule)
	bare.TextFlag(key{}, rule)
	if runs != 4 {
		t.Fatalf("rule ran %d times in all, want 4", runs)
	}
	if fmt.Sprint(corpus.Hit{Memo: memo}) != fmt.Sprint(corpus.Hit{}) {
		t.Error("a hit prints differently with a memo")
	}
}

// TestTextMemoConcurrent: concurrent searches read one memo (run with
// -race).
func TestTextMemoConcurrent(t *testing.T) {
	want := order(corpus.DemoteDigests(memoHits()))
	memos := memoHits()
	for i := range memos {
		memos[i].Memo = corpus.NewTextMemo(memos[i].Text)
	}
	errs := make(chan string, 8)
	for range 8 {
		go func() {
			hits := make([]corpus.Hit, len(memos))
			copy(hits, memos)
			got := order(corpus.DemoteDigests(hits))
			hits[0].TextFlag(struct{}{}, func(h *corpus.Hit) bool { return h.DigestEntries() != nil })
			errs <- got
		}()
	}
	for range 8 {
		if got := <-errs; got != want {
			t.Errorf("concurrent: %s\nwant %s", got, want)
		}
	}
}
