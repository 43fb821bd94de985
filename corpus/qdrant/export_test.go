package qdrant

import "time"

// SetScrollPage sets how many points one Scroll call reads and returns a
// func that restores it (tests of paging).
func SetScrollPage(n uint32) func() {
	old := scrollPage
	scrollPage = n
	return func() { scrollPage = old }
}

// SetRetryBase sets the first pause between retries of a "Please retry"
// answer and returns a func that restores it (tests of the retries).
func SetRetryBase(d time.Duration) func() {
	old := retryBase
	retryBase = d
	return func() { retryBase = old }
}

// RetryAttempts is how many times one update is tried at most.
func RetryAttempts() int { return retryAttempts }
