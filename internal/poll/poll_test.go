package poll

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestWaitReturnsOnceCheckHolds(t *testing.T) {
	n := 0
	var slept []time.Duration
	err := wait(time.Minute, func() error {
		n++
		if n < 10 {
			return fmt.Errorf("try %d", n)
		}
		return nil
	}, func(d time.Duration) { slept = append(slept, d) })
	if err != nil || n != 10 || len(slept) != 9 {
		t.Fatalf("err %v after %d checks and %d sleeps", err, n, len(slept))
	}
	want := []time.Duration{1, 2, 4, 8, 16, 32, 50, 50, 50}
	for i, d := range slept {
		if d != want[i]*time.Millisecond {
			t.Fatalf("sleeps %v, want backoff %v ms", slept, want)
		}
	}
}

func TestWaitGivesUpWithLastError(t *testing.T) {
	n := 0
	start := time.Now()
	err := wait(30*time.Millisecond, func() error { n++; return fmt.Errorf("seen %d", n) }, time.Sleep)
	if err == nil || err.Error() != fmt.Sprintf("seen %d", n) || n < 2 {
		t.Fatalf("err %v after %d checks", err, n)
	}
	if el := time.Since(start); el < 30*time.Millisecond {
		t.Fatalf("gave up after %v, before the timeout", el)
	}
}

// recorder is a testing.TB that records Fatalf instead of stopping.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

func TestUntilAndTrueFailWithWhatWasSeen(t *testing.T) {
	r := &recorder{TB: t}
	Until(r, 5*time.Millisecond, func() error { return errors.New("queue has 3") })
	if r.failed != "still not so after 5ms: queue has 3" {
		t.Errorf("Until failed with %q", r.failed)
	}
	r = &recorder{TB: t}
	True(r, 5*time.Millisecond, "the index is built", func() bool { return false })
	if r.failed != "still not so after 5ms: the index is built" {
		t.Errorf("True failed with %q", r.failed)
	}
	r = &recorder{TB: t}
	calls := 0
	True(r, time.Second, "never", func() bool { calls++; return calls == 3 })
	if r.failed != "" || calls != 3 {
		t.Errorf("True failed with %q after %d calls", r.failed, calls)
	}
}
