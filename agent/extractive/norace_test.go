//go:build !race

package extractive

// raceOn: the race detector is on (sync.Pool then drops what it is given
// at random, so allocation counts do not hold).
const raceOn = false
