//go:build !linux

package minilm

import "time"

// threadCPU is not measured off Linux.
func threadCPU() time.Duration { return 0 }

// processCPU is not measured off Linux.
func processCPU() time.Duration { return 0 }
