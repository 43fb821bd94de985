//go:build race

package minilm

// raceOn: the race detector makes the encoder's Go loops ~20× slower, so the
// reference tests check fewer texts under it (all of them without).
const raceOn = true
