// Package poll is the one way tests wait for something that happens on
// another goroutine or in another process: check a condition again and
// again, sleeping a little longer each time, until it holds or a deadline
// passes, and then fail the test with what was last seen.
package poll

import (
	"errors"
	"testing"
	"time"
)

// Until calls check until it returns nil. It sleeps between calls (1 ms at
// first, doubling up to 50 ms), and when timeout has passed without success
// it fails tb with check's last error. check runs on the calling goroutine,
// so it may itself call tb.Fatal.
func Until(tb testing.TB, timeout time.Duration, check func() error) {
	tb.Helper()
	if err := wait(timeout, check, time.Sleep); err != nil {
		tb.Fatalf("still not so after %v: %v", timeout, err)
	}
}

// True is Until for a condition without detail: it fails tb with what
// (a description of the awaited state) when cond stays false past timeout.
func True(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	Until(tb, timeout, func() error {
		if cond() {
			return nil
		}
		return errors.New(what)
	})
}

// wait is the loop of Until; sleep is a parameter so the test of this
// package can count the calls.
func wait(timeout time.Duration, check func() error, sleep func(time.Duration)) error {
	deadline := time.Now().Add(timeout)
	pause := time.Millisecond
	for {
		err := check()
		if err == nil {
			return nil
		}
		if !time.Now().Before(deadline) {
			return err
		}
		sleep(min(pause, time.Until(deadline)+time.Millisecond))
		pause = min(2*pause, 50*time.Millisecond)
	}
}
