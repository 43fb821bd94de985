//go:build race

package sqlite

// raceOn: under the race detector sync.Pool drops some of what it is given,
// so the tests that count a pool's allocations do not count them.
const raceOn = true
