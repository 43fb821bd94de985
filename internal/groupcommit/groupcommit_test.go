package groupcommit

import (
	"sync"
	"testing"
	"time"

	"github.com/kgagent/kgagent/internal/poll"
)

type job struct {
	id    int
	group int // which run call ran it
	ran   int // how many times it ran
}

// TestGroups queues jobs behind a running leader: they run together in the
// next group, at most max at a time, each exactly once, never two groups
// at once.
func TestGroups(t *testing.T) {
	q := New[*job](3)
	release := make(chan struct{})
	var mu sync.Mutex
	running, runs := 0, 0
	run := func(g []*job) {
		mu.Lock()
		running++
		if running > 1 {
			t.Error("two groups ran at once")
		}
		runs++
		n := runs
		mu.Unlock()
		if n == 1 {
			<-release // the first leader holds the lead while the rest queue
		}
		for _, j := range g {
			j.group = n
			j.ran++
		}
		mu.Lock()
		running--
		mu.Unlock()
	}
	jobs := make([]*job, 8)
	var wg sync.WaitGroup
	for i := range jobs {
		jobs[i] = &job{id: i}
		wg.Add(1)
		go func() {
			defer wg.Done()
			q.Do(jobs[i], run)
		}()
		if i == 0 {
			poll.True(t, 10*time.Second, "the first job leads", func() bool { return q.Busy() && q.Waiting() == 0 })
		}
	}
	poll.True(t, 10*time.Second, "seven jobs wait", func() bool { return q.Waiting() == 7 })
	close(release)
	wg.Wait()
	sizes := map[int]int{}
	for _, j := range jobs {
		if j.ran != 1 {
			t.Errorf("job %d ran %d times", j.id, j.ran)
		}
		sizes[j.group]++
	}
	if sizes[1] != 1 || len(sizes) != 4 || sizes[2] != 3 || sizes[3] != 3 || sizes[4] != 1 {
		t.Errorf("group sizes %v, want 1, 3, 3, 1", sizes)
	}
	if q.Busy() || q.Waiting() != 0 {
		t.Errorf("after the last group: busy %v, %d waiting", q.Busy(), q.Waiting())
	}
}
