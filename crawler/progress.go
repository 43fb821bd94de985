package crawler

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Progress draws an ingestion's Counters as a progress bar (schollz/progressbar)
// on a terminal. On anything that is not a terminal it draws nothing, so
// that logs and piped output stay clean.
type Progress struct {
	mu    sync.Mutex
	bar   *progressbar.ProgressBar
	every time.Duration
	last  time.Time
}

// NewProgress returns a Progress writing to w; it is silent unless w is a
// terminal (an *os.File for which term.IsTerminal holds).
func NewProgress(w io.Writer, description string) *Progress {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return &Progress{}
	}
	return &Progress{bar: newBar(w, description, 100*time.Millisecond), every: 100 * time.Millisecond}
}

func newBar(w io.Writer, description string, throttle time.Duration) *progressbar.ProgressBar {
	return progressbar.NewOptions64(1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(description),
		progressbar.OptionShowCount(),
		progressbar.OptionSetItsString("pages"),
		progressbar.OptionShowIts(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionThrottle(throttle),
		progressbar.OptionShowDescriptionAtLineEnd(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionClearOnFinish(),
	)
}

// Update shows c; it is the progress callback of Ingester.Run.
func (p *Progress) Update(c Counters) {
	if p == nil || p.bar == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// Ingester.Run reports several times per page: draw at most every
	// p.every, and always the last state.
	now := time.Now()
	if now.Sub(p.last) < p.every && c.Done < c.Queued {
		return
	}
	p.last = now
	p.bar.ChangeMax64(max(c.Queued, 1))
	p.bar.Describe(fmt.Sprintf("indexed %d, unchanged %d, skipped %d, failed %d, chunks %d, triples %d",
		c.Indexed, c.Unchanged, c.Skipped, c.Failed, c.Chunks, c.Triples))
	_ = p.bar.Set64(c.Done)
}

// Finish clears the bar.
func (p *Progress) Finish() {
	if p == nil || p.bar == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.bar.Finish()
}
