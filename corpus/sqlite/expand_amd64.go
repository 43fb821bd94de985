package sqlite

import "golang.org/x/sys/cpu"

// expandAddAVX512 is expandAdd's kernel (expand_amd64.s).
//
//go:noescape
func expandAddAVX512(out *int32, words int, cur *expCursor, nd int)

// hasExpand selects the AVX-512 VBMI2 kernel of expandAdd (VPEXPANDB).
var hasExpand = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VBMI2 && cpu.X86.HasPOPCNT

// expandAddAsm runs the kernel over out's words (len(out) is 64 times
// their count).
func expandAddAsm(out []int32, cur []expCursor) {
	expandAddAVX512(&out[0], len(out)/64, &cur[0], len(cur))
}
