//go:build unix

package graphbench

import "syscall"

// cpuNanos is the CPU time (user and system) the process has used, so a
// benchmark can report CPU per operation, steadier than wall time on a
// shared machine.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
