//go:build !race

package graphrag_test

// raceOn: the race detector is on (sync.Pool then drops what it is given
// at random, so allocation figures do not hold).
const raceOn = false
