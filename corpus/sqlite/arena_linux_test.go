package sqlite

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// thpEligible is the THPeligible field of the mapping of /proc/self/smaps
// that holds address p.
func thpEligible(t *testing.T, p uintptr) string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		l := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(strings.Fields(l)[0], "%x-%x", &lo, &hi); n == 2 && !strings.HasSuffix(strings.Fields(l)[0], ":") {
			in = p >= lo && p < hi
			continue
		}
		if in && strings.HasPrefix(l, "THPeligible:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "THPeligible:"))
		}
	}
	t.Fatalf("no mapping holds %#x", p)
	return ""
}

// TestColArenaAdvisedHuge: where transparent huge pages are given on
// request (the "madvise" setting), an arena's memory is asked for them,
// and unadviseHuge takes that back.
func TestColArenaAdvisedHuge(t *testing.T) {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !strings.Contains(string(b), "[madvise]") {
		t.Skipf("transparent huge pages not on request: %q %v", b, err)
	}
	a := newColArena(3 * hugePage)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(a.buf)))
	if got := thpEligible(t, p); got != "1" {
		t.Errorf("arena at %#x: THPeligible %s, want 1", p, got)
	}
	a.buf[0] = 1
	a.done()
	unadviseHuge(p, len(a.buf))
	if got := thpEligible(t, p); got != "0" {
		t.Errorf("arena at %#x unadvised: THPeligible %s, want 0", p, got)
	}
}
