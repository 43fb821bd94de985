package sqlite

import "testing"

// TestColumnScanExactWithoutKernel runs TestColumnScanExact's checks with
// the AVX-512 kernel switched off: on a CPU that has it (this package's
// usual test boxes) the Go loop that every other CPU runs was otherwise
// never tested.
func TestColumnScanExactWithoutKernel(t *testing.T) {
	defer func(old bool) { hasExpand = old }(hasExpand)
	hasExpand = false
	testColumnScanExact(t, 5000)
}
