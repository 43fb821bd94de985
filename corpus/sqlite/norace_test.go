//go:build !race

package sqlite

const raceOn = false
