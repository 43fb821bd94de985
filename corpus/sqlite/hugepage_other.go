//go:build !linux

package sqlite

// adviseHuge does nothing outside Linux (see the Linux version).
func adviseHuge([]byte) {}

// collapseHuge does nothing outside Linux.
func collapseHuge([]byte) {}

// unadviseHuge does nothing outside Linux.
func unadviseHuge(uintptr, int) {}
