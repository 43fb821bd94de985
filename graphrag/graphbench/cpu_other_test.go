//go:build !unix

package graphbench

// cpuNanos is 0 where getrusage is not available: no CPU metric.
func cpuNanos() int64 { return 0 }
