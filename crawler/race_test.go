//go:build race

package crawler

// raceOn reports whether the tests run under the race detector (which
// makes sync.Pool drop items at random).
const raceOn = true
