//go:build !amd64

package sqlite

// hasExpand is false: the kernel is amd64's.
const hasExpand = false

// expandAddAsm is never called where hasExpand is false.
func expandAddAsm([]int32, []expCursor) { panic("expandAddAsm without the kernel") }
