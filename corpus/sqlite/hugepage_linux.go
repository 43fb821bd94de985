package sqlite

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// adviseHuge asks the kernel to back b's whole 2 MB pages with transparent
// huge pages as they are first written (MADV_HUGEPAGE). A kernel without
// them, or with them turned off, refuses; nothing else changes then.
func adviseHuge(b []byte) {
	if h := wholePages(b); h != nil {
		_ = unix.Madvise(h, unix.MADV_HUGEPAGE)
	}
}

// collapseHuge makes b's whole 2 MB pages huge pages now (MADV_COLLAPSE,
// Linux 6.1 on), where adviseHuge could not: memory the heap had already
// written, which stays in small pages. Refused by older kernels.
func collapseHuge(b []byte) {
	if h := wholePages(b); h != nil {
		_ = unix.Madvise(h, unix.MADV_COLLAPSE)
	}
}

// unadviseHuge takes adviseHuge's advice back from the n bytes at p (the
// range of a freed colArena): khugepaged would otherwise make huge pages
// of heap memory that later holds only a few small objects.
func unadviseHuge(p uintptr, n int) {
	lo := (p + hugePage - 1) &^ (hugePage - 1)
	hi := (p + uintptr(n)) &^ (hugePage - 1)
	if hi > lo {
		// by address: the block may be gone, and madvise only marks the range
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, lo, hi-lo, unix.MADV_NOHUGEPAGE)
	}
}

// wholePages is the part of b made of whole, aligned 2 MB pages; nil when
// there is none.
func wholePages(b []byte) []byte {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (p + hugePage - 1) &^ (hugePage - 1)
	hi := (p + uintptr(len(b))) &^ (hugePage - 1)
	if hi <= lo {
		return nil
	}
	return b[lo-p : hi-p]
}
