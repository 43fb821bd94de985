//go:build !race

package minilm

// raceOn: the race detector is off; see race_test.go.
const raceOn = false
